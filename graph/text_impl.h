/*
 * text_impl.h - internals shared by the text printer, the parser and the
 * DOT writer: the lexer, string quoting and the canonical value naming.
 * Not part of the public API (see text.h).
 */
#ifndef TG_GRAPH_TEXT_IMPL_H
#define TG_GRAPH_TEXT_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "graph.h"
#include "graph_impl.h"

/* ---- lexer (text_lex.c) ---- */

typedef enum text_tok_kind {
    TK_EOF,
    TK_IDENT, /* [A-Za-z_][A-Za-z0-9_.]* */
    TK_VALUE, /* %name or %123; pos/len cover the '%' */
    TK_PROV,  /* !name; pos/len cover the '!' */
    TK_NUM,   /* digits, -digits, 0x..., 1.5e-3, -inf, -nan */
    TK_STR,   /* "..." with escapes checked; pos/len cover the quotes */
    TK_PUNCT, /* ( ) { } [ ] , : = + ? and the two below */
    TK_ERR,   /* msg says why */
} text_tok_kind;

enum { TP_ARROW = 256, TP_EQEQ = 257 };

typedef struct text_tok {
    text_tok_kind kind;
    int punct;       /* TK_PUNCT: the character, TP_ARROW or TP_EQEQ */
    size_t pos, len; /* span in the text */
    const char *msg; /* TK_ERR */
} text_tok;

typedef struct text_lexer {
    const char *s;
    size_t len, pos;
} text_lexer;

/* Reads the next token, skipping blanks and comments. */
void graph_text_lex_next(text_lexer *lx, text_tok *t);
/* 1-based line and column (in bytes) of pos. */
void graph_text_line_col(const char *s, size_t len, size_t pos, int *line, int *col);
/* Decodes a TK_STR token into out (room for t->len bytes); returns length. */
size_t graph_text_unescape(const char *s, const text_tok *t, char *out);
/* Non-zero if s[0..n) is an IDENT. */
int graph_text_is_ident(const char *s, size_t n);

/* ---- quoting (text_print.c) ---- */

/* Writes s as a "..." string with escapes. */
void graph_text_put_str(FILE *f, const char *s);
/* graph_text_utf8_len: public (text.h). */
/* Makes s safe for a terminal in place: control bytes, DEL and bytes that
 * are not printable UTF-8 (graph_text_utf8_len) become '?'. */
void graph_text_sanitize(char *s);
/* Writes s bare when it is an IDENT, else quoted. */
void graph_text_put_name(FILE *f, const char *s);

/*
 * A guarded value as the summary (trace_summary, `tracegraph info`) and a
 * failed guard's message both name it, the same before and after
 * optimizing: input "x", param "w", or "the <op> result" of the node that
 * made it (every pass renumbers value ids, so they are no part of the
 * name; the guard's number and its call site are).  Writes buf (len
 * bytes) and returns it.
 */
char *graph_guard_value_str(const graph *g, int32_t v, char *buf, size_t len);

/* The epilogue steps' names in text IR (`post=[add,relu]`): the name of
 * GRAPH_POST_* code c, or NULL for a code without one; and the code of a
 * name of n bytes, or -1. */
const char *graph_text_post_name(int64_t c);
int graph_text_post_code(const char *s, size_t n);
/* Writes a type: f32[B,784], dyn dims by symbol name. */
void graph_text_put_type(FILE *f, const graph *g, const graph_value *v);

/* ---- canonical naming (text_print.c) ---- */

/*
 * Per value id: its canonical position (-1 when not printed: the output
 * of a dead node) and whether it is written %name (unique IDENT name) or
 * %position.
 */
typedef struct text_names {
    int32_t *pos;
    unsigned char *by_name;
    int32_t count; /* printed values */
    int32_t nsig;  /* of which signature inputs (positions 0..nsig) */
} text_names;

/* Fills names for g; returns TG_OK or TG_ERR_NOMEM. */
tg_status graph_text_names_init(text_names *n, const graph *g);
void graph_text_names_free(text_names *n);
/* Writes the label of value v: %name, %5, or %bad.N for a bad id. */
void graph_text_put_value(FILE *f, const graph *g, const text_names *n, int32_t v);

#endif
