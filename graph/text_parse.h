/*
 * text_parse.h - the text IR parser's state and helpers, shared by
 * text_parse.c (driver, header, tokens, types) and text_parse_stmt.c
 * (body statements and the provenance section).  Internal.
 */
#ifndef TG_GRAPH_TEXT_PARSE_H
#define TG_GRAPH_TEXT_PARSE_H

#include "tg_hash.h"
#include "text_impl.h"

/* Largest dim the parser accepts: the size cap of graph_type_check, which
 * every type parsed must also pass (as in every loader). */
#define TEXT_MAX_DIM GRAPH_MAX_NUMEL
/* Most inputs / outputs of one node (graph_add_node's limit). */
#define TEXT_MAX_NODE_IO 64

/* A value or provenance label: key is the text after the sigil. */
typedef struct text_label {
    UT_hash_handle hh;
    int32_t id;
    size_t pos; /* where it was defined */
    char key[];
} text_label;

/* A '!p' ref, resolved once the provenance section has been read. */
typedef struct text_prov_ref {
    int32_t target; /* node id, or guard index */
    int is_guard;
    size_t pos, len; /* the label, without '!' */
} text_prov_ref;

/* One dim as written: a number, or a symbol name with an optional size. */
typedef struct text_dim {
    int64_t size;
    size_t sympos, symlen; /* symbol token span */
    int8_t symkind;        /* 0: a number; TK_IDENT or TK_STR */
    int8_t has_size;
} text_dim;

/* A type as written (symbols unresolved). */
typedef struct text_type {
    graph_dtype dtype;
    int ndim;
    text_dim dim[GRAPH_MAX_DIMS];
    size_t pos;
} text_type;

/* A type resolved against the graph's symbols. */
typedef struct text_full_type {
    graph_type t;
    uint32_t dyn;
    int8_t sym[GRAPH_MAX_DIMS];
} text_full_type;

/* "%label ["name"]: type" at a definition. */
typedef struct text_def {
    text_tok label;
    const char *name; /* interned; from the string or an IDENT label */
    text_type type;
} text_def;

typedef struct text_out {
    const char *name;
    text_type type;
    size_t pos;
} text_out;

typedef struct text_parser {
    const char *s;
    size_t len;
    text_lexer lx;
    text_tok tok; /* the current token */
    graph *g;
    char *err;
    size_t errlen;
    int failed;
    text_label *vals, *provs, *outnames;
    text_prov_ref *refs;
    size_t nrefs, caprefs;
    text_def *sig;
    size_t nsig, capsig;
    int sig_done;
    text_out *outs;
    size_t nouts, capouts, nret;
    graph_frame *frames;
    size_t nframes, capframes;
    char *scratch;
    size_t capscratch;
} text_parser;

/* Records the first error as "line L, col C: ..."; returns -1. */
int graph_text_fail(text_parser *p, size_t pos, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* An error at the current token, adding ", got '...'"; returns -1. */
int graph_text_fail_tok(text_parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Grows a parser array; -1 (reported) on out of memory. */
int graph_text_grow(text_parser *p, void *arr, size_t *cap, size_t need, size_t elem);

void graph_text_next(text_parser *p);
int graph_text_is_punct(const text_parser *p, int c);
int graph_text_is_kw(const text_parser *p, const char *kw);
/* Consumes punctuation c or fails with "expected 'c' <after>". */
int graph_text_expect(text_parser *p, int c, const char *after);

/* Token readers: consume the current token or fail with "expected <what>". */
int graph_text_get_i64(text_parser *p, const char *what, int64_t *out);
int graph_text_get_u64(text_parser *p, const char *what, uint64_t *out);
int graph_text_get_f32(text_parser *p, const char *what, float *out);
int graph_text_get_f64(text_parser *p, const char *what, double *out);
/* An IDENT or STRING, interned. */
int graph_text_get_name(text_parser *p, const char *what, const char **out);
/* A STRING, interned. */
int graph_text_get_string(text_parser *p, const char *what, const char **out);

int graph_text_parse_type(text_parser *p, text_type *t);
int graph_text_resolve_type(text_parser *p, const text_type *t, text_full_type *ft);
/* "f32[B,784]" of a resolved type, for messages. */
void graph_text_type_str(const graph *g, const text_full_type *ft, char *buf,
                         size_t len);

/* Value labels. */
text_label *graph_text_find_label(text_label *head, const char *key, size_t n);
int graph_text_add_label(text_parser *p, text_label **head, const char *key,
                         size_t n, int32_t id, size_t pos);
/* Reads "%label ["name"]: type" (checking the label is new). */
int graph_text_parse_def(text_parser *p, text_def *d);
/* Creates a source value for d, registers its label; returns id or -1. */
int32_t graph_text_define(text_parser *p, const text_def *d, graph_value_kind kind);
/* Sets name, dyn and sym of value id from d, registers its label. */
int graph_text_bind(text_parser *p, int32_t id, const text_def *d,
                    const text_full_type *ft);
/* Reads a %value use; returns its id or -1. */
int32_t graph_text_get_value(text_parser *p);

/* text_parse_stmt.c */
int graph_text_parse_defs_stmt(text_parser *p);
int graph_text_parse_guard(text_parser *p);
int graph_text_parse_provenance(text_parser *p);

#endif
