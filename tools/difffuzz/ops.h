/*
 * ops.h - what the generator's op files (ops.c, ops_shape.c, ops_nn.c)
 * share: the generators ops.c's table lists from the other two, and the
 * broadcast helper.
 */
#ifndef TG_DIFFFUZZ_OPS_H
#define TG_DIFFFUZZ_OPS_H

#include "gen.h"

/* A shape that broadcasts against x (g->invalid: one that does not). */
void df_bcast_shape(df_gen *g, const df_cur *x, int *nd, int64_t *d, int *dyn);
/* x with elements (a fresh input if it has none); 1 if none was drawn. */
int df_nonempty(df_gen *g, df_cur *x, int dtype);

int df_gen_transpose(df_gen *g, df_cur *x, int arg);
int df_gen_reshape(df_gen *g, df_cur *x, int arg);
int df_gen_concat(df_gen *g, df_cur *x, int arg);
int df_gen_split(df_gen *g, df_cur *x, int arg);
int df_gen_slice(df_gen *g, df_cur *x, int arg);
int df_gen_gather(df_gen *g, df_cur *x, int arg);
int df_gen_squeeze(df_gen *g, df_cur *x, int arg);
int df_gen_tile(df_gen *g, df_cur *x, int arg);
int df_gen_cast(df_gen *g, df_cur *x, int arg);
int df_gen_depth_space(df_gen *g, df_cur *x, int arg);
int df_gen_trilu(df_gen *g, df_cur *x, int arg);
int df_gen_shape(df_gen *g, df_cur *x, int arg);
int df_gen_gather_elements(df_gen *g, df_cur *x, int arg);
int df_gen_pad(df_gen *g, df_cur *x, int arg);

int df_gen_conv(df_gen *g, df_cur *x, int arg);
int df_gen_pool(df_gen *g, df_cur *x, int arg);
int df_gen_global_pool(df_gen *g, df_cur *x, int arg);
int df_gen_resize(df_gen *g, df_cur *x, int arg);
int df_gen_einsum(df_gen *g, df_cur *x, int arg);

/* The rows ops.c's table takes from ops_shape.c and ops_nn.c: name,
 * opsets, generator, its argument, weight. */
#define DF_SHAPE_OPS                                                                     \
    {"Transpose", 7, 0, df_gen_transpose, 0, 3},                                         \
    {"Reshape", 7, 0, df_gen_reshape, 0, 4},                                             \
    {"Flatten", 7, 0, df_gen_reshape, 1, 1},                                             \
    {"Concat", 7, 0, df_gen_concat, 0, 3},                                               \
    {"Split", 7, 0, df_gen_split, 0, 2},                                                 \
    {"Slice", 7, 0, df_gen_slice, 0, 4},                                                 \
    {"Gather", 7, 0, df_gen_gather, 0, 3},                                               \
    {"Squeeze", 7, 0, df_gen_squeeze, 0, 2},                                             \
    {"Tile", 7, 0, df_gen_tile, 0, 1},                                                   \
    {"Expand", 8, 0, df_gen_tile, 1, 2},                                                 \
    {"Cast", 7, 0, df_gen_cast, 0, 2},                                                   \
    {"DepthToSpace", 7, 0, df_gen_depth_space, 0, 1},                                    \
    {"Trilu", 14, 0, df_gen_trilu, 0, 1},                                                \
    {"Shape", 7, 0, df_gen_shape, 0, 1},                                                 \
    {"GatherElements", 11, 0, df_gen_gather_elements, 0, 2},                             \
    {"Pad", 7, 0, df_gen_pad, 0, 4},
#define DF_NN_OPS                                                                        \
    {"Conv", 7, 0, df_gen_conv, 0, 8},                                                   \
    {"ConvTranspose", 7, 0, df_gen_conv, 1, 5},                                          \
    {"Pool", 7, 0, df_gen_pool, 0, 6},                                                   \
    {"GlobalPool", 7, 0, df_gen_global_pool, 0, 1},                                      \
    {"Resize", 11, 0, df_gen_resize, 0, 5},                                              \
    {"Upsample", 7, 9, df_gen_resize, 1, 1},                                             \
    {"Einsum", 12, 0, df_gen_einsum, 0, 4},

#endif
