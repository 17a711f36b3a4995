/*
 * text.h - the graph IR as text (print and parse) and as Graphviz DOT.
 *
 * The text form is exact: print(parse(print(g))) == print(g) byte for
 * byte, and parse(print(g)) equals g field by field (values in canonical
 * order, see below).  Pass tests are written in it.  A full example:
 *
 *   graph mlp(%x: f32[B,784]) -> (y: f32[B,10], "aux out": f32[B,5]) {
 *     sym B = 4
 *     %fc1.weight: f32[512,784] = param elided 0x3f2a0c11d2e3b7a9
 *     %2 "fc1 bias": f32[512] = param elided 0x0d5e2f1a77c3b001
 *     %fc2.weight: f32[20,512] = param elided 0x9c1b44d0a5e6f102
 *     %c: f32[3] = const [1, 2.5, -inf]
 *     %5: f32[B,512] = matmul(%x, %fc1.weight) {transpose_b=1} !p0  # model.c:31 mlp_forward
 *     %6: f32[B,512] = add(%5, %2) !p0  # model.c:31 mlp_forward
 *     %7: f32[B,512] = clip(%6) {min=0, max=6} !p1  # model.c:32 mlp_forward
 *     %8: f32[B,20] = matmul(%7, %fc2.weight) {transpose_b=1} !p2  # model.c:33 mlp_forward
 *     %9: f32[B,10], %10: f32[B,10] = split(%8) {axis=1, sizes=[10,10]} !p2  # model.c:33 mlp_forward
 *     guard decision %9[0] == 1 strict !p3  # model.c:40 mlp_forward
 *     %11: f32[B,10] = leaky_relu(%10) {alpha=0.2} !p1 !p2  # model.c:32 mlp_forward
 *     %12: f32[B,5], %13: f32[B,5] = split(%11) {axis=1, sizes=[5,5]} !p2  # model.c:33 mlp_forward
 *     return y = %9
 *     return "aux out" = %12
 *   }
 *   provenance {
 *     p0 = "/home/me/model.c":31 "mlp_forward" [0x4011a2 "mlp_forward"+0x22 "/home/me/model.c":31, 0x401300 "main"+0x10 "/home/me/main.c":9]
 *     p1 = "/home/me/model.c":32 "mlp_forward"
 *     p2 = "/home/me/model.c":33 "mlp_forward"
 *     p3 = "/home/me/model.c":40 "mlp_forward" [0x401288 "mlp_forward"+0xa8 "/home/me/model.c":40, 0x7f3a0012c0 ?+0x0]
 *   }
 *
 * Grammar (whitespace and newlines are not significant; '#' starts a
 * comment that runs to the end of the line):
 *
 *   file     := 'graph' NAME '(' [sigin {',' sigin}] ')'
 *               '->' '(' [sigout {',' sigout}] ')' '{' {stmt} '}'
 *               ['provenance' '{' {prov} '}']
 *   sigin    := VALUE [STRING] ':' TYPE        a signature input
 *   sigout   := NAME ':' TYPE                  an output: name and type
 *   stmt     := 'sym' NAME '=' INT             a dynamic dim and its traced size
 *             | defs '=' ('param' | 'const') [DATA]
 *             | defs '=' OP '(' [VALUE {',' VALUE}] ')' ['{' [attr {',' attr}] '}']
 *                    ['specialized'] {PROVREF}
 *             | 'guard' KIND VALUE ['[' INT ']'] '==' NUMBER POLICY [PROVREF]
 *             | 'return' NAME '=' VALUE       outputs, in the header's order
 *   defs     := def {',' def} | '(' ')'       '(' ')': a node without outputs
 *   def      := VALUE [STRING] ':' TYPE
 *   TYPE     := DTYPE '[' [dim {',' dim}] ']'     f32[B,784]; f32[] is 0-d
 *   dim      := INT | NAME [':' INT]           NAME: a declared sym; ':' INT
 *                                              gives the concrete size when it
 *                                              is not the sym's traced size
 *   DATA     := '[' [NUMBER {',' NUMBER}] ']'  exactly numel elements, flat
 *             | 'elided' HEX                   no data, FNV-1a hash of it
 *   attr     := IDENT '=' (INT | FLOAT | '[' [INT {',' INT}] ']' | DTYPE)
 *               (post's entries are epilogue steps, printed by name:
 *               post=[add,relu]; their GRAPH_POST_* codes parse too)
 *   KIND     := 'value' | 'decision' | 'buffer' | 'size'
 *   POLICY   := 'strict' | 'warn' | 'off'
 *   prov     := IDENT '=' STRING ':' INT STRING ['[' [frame {',' frame}] ']']
 *   frame    := HEX (STRING | '?') '+' HEX [(STRING | '?') ':' INT]
 *   VALUE    := '%' IDENT | '%' DIGITS         PROVREF := '!' IDENT
 *   NAME     := IDENT | STRING                 IDENT := [A-Za-z_][A-Za-z0-9_.]*
 *   STRING   := '"' ... '"' with \" \\ \n \t \xHH escapes (no NUL)
 *   FLOAT    := decimal | inf | -inf | nan | -nan | nan:0xBITS
 *
 * Meaning:
 *   - Values are created in text order.  The printer writes them in
 *     canonical order: signature inputs, then params/consts, then node
 *     outputs in node order, and numbers them by that position (%5 is
 *     value id 5 of the parsed graph).  A value whose name is a unique
 *     IDENT is written %name; any other named value is written %N "name".
 *   - Types written on node outputs must equal what shape inference makes
 *     (the parser checks, reporting line and column).  Dynamic dims are
 *     written by symbol name; their concrete size is the sym's.  The sym
 *     lines come first in the body (the signature's types use them).
 *   - 'elided HASH' is a param/const without data here: either it has
 *     none (graph_value_data NULL, hash kept) or it has more than
 *     inline_max elements.  'specialized' is GRAPH_NODE_SPECIALIZED; dead
 *     nodes are not printed.
 *   - Attributes go by the names in ops.def; the printer leaves out those
 *     equal to their defaults, the parser fills missing ones with defaults.
 *   - Guards: value/decision guards compare element [i] with a double;
 *     buffer guards compare the whole buffer's hash (HEX); size guards
 *     compare dim [i] of the value's type (a node specialized on it).  The
 *     printer puts each guard right after its value is defined, keeping
 *     the guards' order.
 *   - '!pN' refers to provenance entry pN; the provenance section lists
 *     every entry in id order with full paths and the symbolized stack.
 *     A node made by fusion has several refs, the first is the primary.
 *     The '# file:line func' comment is only for people.
 *   - Floats print exactly: the shortest of %.6g..%.9g (f32) or
 *     %.15g..%.17g (double) that reads back to the same bits; NaN with a
 *     non-default payload prints as nan:0xBITS.
 *     Number text follows the C locale (the program must not change
 *     LC_NUMERIC).
 *
 * Limits the parser enforces (hostile input is safe): at most
 * GRAPH_MAX_DIMS dims, GRAPH_MAX_INTS entries per list, 64 inputs or
 * outputs per node, types within the size cap of graph_type_check
 * (GRAPH_MAX_NUMEL: 2^40 elements, a 0 dim counted as 1), inline data of
 * exactly numel elements.  It never reads past len and does not recurse.
 */
#ifndef TG_GRAPH_TEXT_H
#define TG_GRAPH_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graph_print_opts {
    /* Params/consts with data and at most this many elements are printed
     * inline; others as 'elided HASH'.  Default 16. */
    int64_t inline_max;
    /* Non-zero: inline every param/const that has data (self-contained
     * text, e.g. for pass tests).  Default 0. */
    int inline_all;
    /* Non-zero: print '!pN' refs and the provenance section.  Default 1. */
    int provenance;
    /* Non-zero: print '# file:line func' comments.  Default 1. */
    int comments;
} graph_print_opts;

/*
 * The defaults as an initializer (graph_print_opts o =
 * GRAPH_PRINT_OPTS_INIT; o.comments = 0;): by name in C, the four fields
 * in order in C++17, which has no designated initializers.
 * GRAPH_PRINT_DEFAULTS is the same as a value (a compound literal in C).
 * graph_print_opts may grow at the end.
 */
#ifdef __cplusplus
#define GRAPH_PRINT_OPTS_INIT graph_print_opts{16, 0, 1, 1}
#define GRAPH_PRINT_DEFAULTS GRAPH_PRINT_OPTS_INIT
#else
#define GRAPH_PRINT_OPTS_INIT {.inline_max = 16, .inline_all = 0, .provenance = 1, .comments = 1}
#define GRAPH_PRINT_DEFAULTS ((graph_print_opts)GRAPH_PRINT_OPTS_INIT)
#endif

/*
 * Prints g as text to f.  opts may be NULL for GRAPH_PRINT_DEFAULTS.
 * Never fails on a malformed graph (bad ids print as %bad.N, which the
 * parser rejects).  Returns TG_OK, TG_ERR_NOMEM or TG_ERR_IO (write error).
 */
TG_API tg_status graph_print(const graph *g, FILE *f, const graph_print_opts *opts);

/*
 * Length (2..4) of the UTF-8 character at s when it is valid and prints as
 * text, else 0: a stray byte, an overlong form, a surrogate, beyond
 * U+10FFFF, a C1 control (U+0080..U+009F: some terminals obey them) or a
 * bidi override or isolate (U+202A..U+202E, U+2066..U+2069).  s[0] >= 0x80.
 * What the printer passes through unescaped: for a program that shows
 * names (the tool's messages) the same way.
 */
TG_API int graph_text_utf8_len(const unsigned char *s);

/*
 * The text of g as a NUL-terminated malloc'd string (length in *len if
 * len is not NULL); the caller frees it.  NULL on out of memory.
 */
TG_API char *graph_print_str(const graph *g, const graph_print_opts *opts,
                             size_t *len);

/*
 * Parses len bytes of text (not NUL-terminated) into a new graph, which
 * the caller frees with graph_free.  The graph is built through the graph
 * API (so shape inference runs on every node) and passes
 * graph_verify(g, 1) (elided data allowed).  On error returns NULL and
 * writes "line L, col C: <reason>" into err (errlen bytes, always
 * terminated when errlen > 0).
 */
TG_API graph *graph_parse(const char *text, size_t len, char *err, size_t errlen);

/*
 * Writes g as a Graphviz digraph: a box per live node (op, output types,
 * call site), ellipses for inputs, cylinders for params, notes for
 * consts, octagons for guards, and a double-bordered box for each output.
 * Returns TG_OK, TG_ERR_NOMEM or TG_ERR_IO.
 */
TG_API tg_status graph_write_dot(const graph *g, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
