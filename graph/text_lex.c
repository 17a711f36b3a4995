/*
 * text_lex.c - the tokenizer of the text IR.  It reads a byte span that
 * is not NUL-terminated, so every look-ahead checks the length first.
 */
#include <string.h>

#include "text_impl.h"

static int is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_word(int c) { return is_alpha(c) || is_digit(c) || c == '.'; }
static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int graph_text_is_ident(const char *s, size_t n)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_word((unsigned char)s[i]))
            return 0;
    return 1;
}

void graph_text_line_col(const char *s, size_t len, size_t pos, int *line, int *col)
{
    int l = 1;
    size_t start = 0;
    if (pos > len)
        pos = len;
    for (size_t i = 0; i < pos; i++)
        if (s[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int)(pos - start) + 1;
}

/* Peeks at byte pos + k, or -1 past the end. */
static int peek(const text_lexer *lx, size_t k)
{
    return lx->pos + k < lx->len ? (unsigned char)lx->s[lx->pos + k] : -1;
}

static void skip_blanks(text_lexer *lx)
{
    while (lx->pos < lx->len) {
        int c = (unsigned char)lx->s[lx->pos];
        if (c == '#') {
            while (lx->pos < lx->len && lx->s[lx->pos] != '\n')
                lx->pos++;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            lx->pos++;
        } else {
            break;
        }
    }
}

static void lex_error(text_lexer *lx, text_tok *t, const char *msg)
{
    t->kind = TK_ERR;
    t->msg = msg;
    t->len = lx->pos > t->pos ? lx->pos - t->pos : 0;
}

/* A string: checks escapes now so that graph_text_unescape can trust them. */
static void lex_string(text_lexer *lx, text_tok *t)
{
    lx->pos++; /* opening quote */
    for (;;) {
        int c = peek(lx, 0);
        if (c < 0 || c == '\n' || c == '\r')
            return lex_error(lx, t, "unterminated string");
        if (c == '"')
            break;
        if (c == '\\') {
            int e = peek(lx, 1);
            if (e == 'x') {
                int h1 = peek(lx, 2), h2 = peek(lx, 3);
                if (h1 < 0 || h2 < 0 || !is_hex(h1) || !is_hex(h2))
                    return lex_error(lx, t, "bad \\x escape in string");
                if (h1 == '0' && h2 == '0')
                    return lex_error(lx, t, "NUL (\\x00) in string");
                lx->pos += 4;
                continue;
            }
            if (e != '"' && e != '\\' && e != 'n' && e != 't')
                return lex_error(lx, t, "bad escape in string");
            lx->pos += 2;
            continue;
        }
        lx->pos++;
    }
    lx->pos++; /* closing quote */
    t->kind = TK_STR;
    t->len = lx->pos - t->pos;
}

/*
 * A number: digits, letters, '.', and a sign right after an exponent 'e'
 * of a decimal number.  The parser decides what the text means.
 */
static void lex_number(text_lexer *lx, text_tok *t)
{
    if (peek(lx, 0) == '-')
        lx->pos++;
    int hex = peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X');
    while (lx->pos < lx->len) {
        int c = (unsigned char)lx->s[lx->pos];
        if (is_word(c)) {
            lx->pos++;
            if (!hex && (c == 'e' || c == 'E') &&
                (peek(lx, 0) == '+' || peek(lx, 0) == '-'))
                lx->pos++;
        } else {
            break;
        }
    }
    t->kind = TK_NUM;
    t->len = lx->pos - t->pos;
}

/* %name / !name: the sigil and a run of word characters. */
static void lex_sigil(text_lexer *lx, text_tok *t, text_tok_kind kind)
{
    lx->pos++;
    size_t start = lx->pos;
    while (lx->pos < lx->len && is_word((unsigned char)lx->s[lx->pos]))
        lx->pos++;
    if (lx->pos == start)
        return lex_error(lx, t, kind == TK_VALUE
                                    ? "expected a value name after '%'"
                                    : "expected a provenance label after '!'");
    t->kind = kind;
    t->len = lx->pos - t->pos;
}

void graph_text_lex_next(text_lexer *lx, text_tok *t)
{
    skip_blanks(lx);
    memset(t, 0, sizeof *t);
    t->pos = lx->pos;
    int c = peek(lx, 0);
    if (c < 0) {
        t->kind = TK_EOF;
        return;
    }
    if (is_alpha(c)) {
        while (lx->pos < lx->len && is_word((unsigned char)lx->s[lx->pos]))
            lx->pos++;
        t->kind = TK_IDENT;
        t->len = lx->pos - t->pos;
        return;
    }
    if (is_digit(c) || (c == '-' && peek(lx, 1) >= 0 &&
                        (is_digit(peek(lx, 1)) || is_alpha(peek(lx, 1)) ||
                         peek(lx, 1) == '.')))
        return lex_number(lx, t);
    if (c == '"')
        return lex_string(lx, t);
    if (c == '%')
        return lex_sigil(lx, t, TK_VALUE);
    if (c == '!')
        return lex_sigil(lx, t, TK_PROV);
    t->kind = TK_PUNCT;
    if (c == '-' && peek(lx, 1) == '>') {
        t->punct = TP_ARROW;
        lx->pos += 2;
    } else if (c == '=' && peek(lx, 1) == '=') {
        t->punct = TP_EQEQ;
        lx->pos += 2;
    } else if (c != 0 && strchr("(){}[],:=+?", c)) {
        t->punct = c;
        lx->pos++;
    } else {
        lx->pos++;
        return lex_error(lx, t, "unexpected character");
    }
    t->len = lx->pos - t->pos;
}

static int hexval(int c)
{
    return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

size_t graph_text_unescape(const char *s, const text_tok *t, char *out)
{
    size_t n = 0, end = t->pos + t->len - 1; /* closing quote */
    for (size_t i = t->pos + 1; i < end; i++) {
        char c = s[i];
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        char e = s[++i];
        if (e == 'x') {
            out[n++] = (char)(hexval((unsigned char)s[i + 1]) * 16 +
                              hexval((unsigned char)s[i + 2]));
            i += 2;
        } else {
            out[n++] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
    }
    return n;
}
