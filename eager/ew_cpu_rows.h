/*
 * ew_cpu_rows.h - every row of graph/ew_ops.def joined with its CPU line
 * (ew_cpu.def), as EWC(name, nargs, cost, scalar, tile, inl, vec, eager):
 * define EWC, include this file, undefine EWC.  Included once per
 * expansion (no include guard, as for an X-macro table).
 */
#include "ew_cpu.def"

/* The row's CPU line (EW_CPU_<name>) expanded into its four columns
 * first; a row without one leaves EW_CPU_<name> unexpanded, and the
 * build stops at EW_CPU_JOIN_'s argument count. */
#ifndef EW_CPU_JOIN
#define EW_CPU_JOIN(X, ...) EW_CPU_JOIN_(X, __VA_ARGS__)
#define EW_CPU_JOIN_(X, OP, N, COST, S, TILE, INL, VEC, EAGER) X(OP, N, COST, S, TILE, INL, VEC, EAGER)
#endif

#define EW(OP, N, COST, S, ONNX) EW_CPU_JOIN(EWC, OP, N, COST, S, EW_CPU_##OP)
#include "../graph/ew_ops.def"
#undef EW
