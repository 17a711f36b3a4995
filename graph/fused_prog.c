/*
 * fused_prog.c - parser, validator and printer of the `fused` op's
 * micro-program (grammar and rules in fused_prog.h).
 *
 * The parser reads at most GRAPH_MAX_STR - 1 bytes, never recurses and
 * checks every attribute through the op's own infer function (so clip's
 * NaN bounds are refused with clip's own message), which keeps the
 * rules for an op's attributes in one place.
 */
#include "fused_prog.h"
#include "graph_impl.h"
#include "infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ops of ew_ops.def: operand count and cost class (0: not listed). */
static const struct {
    uint8_t nargs, cost;
} ew_ops[GRAPH_OP_COUNT] = {
#define EW(OP, N, COST, S, ONNX) \
    [GRAPH_OP_##OP] = {N, FUSED_COST_##COST},
#include "ew_ops.def"
#undef EW
};

int fused_op_ok(graph_op op, int *nargs)
{
    if ((unsigned)op >= GRAPH_OP_COUNT || !ew_ops[op].nargs)
        return 0;
    /* The registry checks below say why each op of ew_ops.def qualifies
     * (tests/test_ew_table.c checks that every listed op passes them and
     * that every op passing them is listed). */
    const graph_op_info *info = &graph_ops[op];
    int n = info->infer == graph_infer_unary ? 1 : info->infer == graph_infer_binary ? 2 : 0;
    if (n != ew_ops[op].nargs || !(info->props & GRAPH_PROP_ELEMENTWISE) ||
        !(info->dtypes & GRAPH_DT_F32) || info->min_in != n || info->max_in != n || info->nout != 1 ||
        info->nattrs > FUSED_MAX_ATTRS)
        return 0;
    for (int k = 0; k < info->nattrs; k++)
        if (info->attr_descs()[k].kind != GRAPH_ATTR_F32)
            return 0;
    if (nargs)
        *nargs = n;
    return 1;
}

fused_cost fused_op_cost(graph_op op)
{
    return (unsigned)op < GRAPH_OP_COUNT && ew_ops[op].nargs ? (fused_cost)ew_ops[op].cost
                                                             : FUSED_COST_HEAVY;
}

/* ---- parsing ---- */

typedef struct pstate {
    const char *s;
    size_t pos, len;
    char *err;
    size_t errlen;
    int32_t written[FUSED_MAX_STMTS]; /* register -> statement + 1, 0: not yet */
    int32_t reg_pos[FUSED_MAX_STMTS]; /* where it was written */
} pstate;

static tg_status fail(pstate *ps, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static tg_status fail(pstate *ps, size_t at, const char *fmt, ...)
{
    if (ps->err && ps->errlen) {
        int n = snprintf(ps->err, ps->errlen, "prog byte %zu: ", at);
        if (n >= 0 && (size_t)n < ps->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return TG_ERR_ARG;
}

static void skip_space(pstate *ps)
{
    while (ps->pos < ps->len && ps->s[ps->pos] == ' ')
        ps->pos++;
}

static int peek(pstate *ps)
{
    skip_space(ps);
    return ps->pos < ps->len ? (unsigned char)ps->s[ps->pos] : -1;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Expects character c; fails naming what was found. */
static tg_status expect(pstate *ps, int c)
{
    int got = peek(ps);
    if (got == c) {
        ps->pos++;
        return TG_OK;
    }
    if (got < 0)
        return fail(ps, ps->pos, "expected '%c', found the end", c);
    return fail(ps, ps->pos, "expected '%c', found '%c'", c, got);
}

/* DIGITS after a prefix letter; at most 3 digits (all limits are below). */
static tg_status small_index(pstate *ps, int *out)
{
    size_t at = ps->pos;
    int v = 0, n = 0;
    while (ps->pos < ps->len && is_digit(ps->s[ps->pos])) {
        if (++n > 3)
            return fail(ps, at, "index too large");
        v = v * 10 + (ps->s[ps->pos++] - '0');
    }
    if (!n)
        return fail(ps, at, "expected digits after '%c'", ps->s[at - 1]);
    *out = v;
    return TG_OK;
}

static size_t scan_digits(pstate *ps, size_t i)
{
    while (i < ps->len && is_digit(ps->s[i]))
        i++;
    return i;
}

/* A NUMBER (see the grammar); strtof does the conversion (C locale). */
static tg_status number(pstate *ps, float *out)
{
    size_t at = ps->pos, i = at;
    if (i < ps->len && (ps->s[i] == '-' || ps->s[i] == '+'))
        i++;
    if (i + 3 <= ps->len && (!memcmp(ps->s + i, "inf", 3) || !memcmp(ps->s + i, "nan", 3))) {
        i += 3;
    } else {
        size_t d0 = i;
        i = scan_digits(ps, i);
        size_t nd = i - d0;
        if (i < ps->len && ps->s[i] == '.') {
            size_t f0 = ++i;
            i = scan_digits(ps, i);
            nd += i - f0;
        }
        if (!nd)
            return fail(ps, at, "expected an operand (iN, rN or a number)");
        if (i < ps->len && (ps->s[i] == 'e' || ps->s[i] == 'E')) {
            size_t e = ++i;
            if (i < ps->len && (ps->s[i] == '-' || ps->s[i] == '+'))
                i++;
            size_t e0 = i;
            i = scan_digits(ps, i);
            if (i == e0)
                return fail(ps, e, "expected an exponent");
        }
    }
    char buf[64];
    if (i - at >= sizeof buf)
        return fail(ps, at, "number too long");
    memcpy(buf, ps->s + at, i - at);
    buf[i - at] = '\0';
    *out = strtof(buf, NULL);
    ps->pos = i;
    return TG_OK;
}

/* One operand of statement k. */
static tg_status operand(pstate *ps, int nin, fused_arg *a)
{
    int c = peek(ps), idx;
    size_t at = ps->pos;
    int next = at + 1 < ps->len ? (unsigned char)ps->s[at + 1] : -1;
    memset(a, 0, sizeof *a);
    if ((c == 'i' || c == 'r') && is_digit(next)) {
        ps->pos++;
        if (small_index(ps, &idx) != TG_OK)
            return TG_ERR_ARG;
        if (c == 'i') {
            if (idx >= FUSED_MAX_INPUTS || (nin >= 0 && idx >= nin))
                return fail(ps, at, "input i%d out of range (the node has %d inputs)", idx,
                            nin >= 0 ? nin : FUSED_MAX_INPUTS);
            a->kind = FUSED_ARG_INPUT;
            a->index = (uint8_t)idx;
            return TG_OK;
        }
        if (idx >= FUSED_MAX_STMTS || !ps->written[idx])
            return fail(ps, at, "register r%d is read before it is written", idx);
        a->kind = FUSED_ARG_REG;
        a->index = (uint8_t)(ps->written[idx] - 1);
        return TG_OK;
    }
    a->kind = FUSED_ARG_IMM;
    return number(ps, &a->imm);
}

/* Runs op's own infer on f32[1] operands to check its attributes. */
static tg_status check_attrs(pstate *ps, size_t at, const fused_stmt *st)
{
    const graph_op_info *info = &graph_ops[st->op];
    graph_attrs attrs;
    graph_attrs_default(st->op, &attrs);
    for (int k = 0; k < info->nattrs; k++)
        memcpy((char *)&attrs + info->attr_descs()[k].offset, &st->attr[k], sizeof(float));
    graph_type in[2] = {{GRAPH_F32, 1, {1}}, {GRAPH_F32, 1, {1}}}, out[1];
    char msg[256] = "";
    graph_infer_ctx c = {info, in, st->nargs, info->attr_size ? &attrs : NULL,
                         out, 1, 1, msg, sizeof msg};
    if (info->infer(&c) != TG_OK)
        return fail(ps, at, "%s: %s", info->name, msg);
    return TG_OK;
}

/* The argument list of statement k, after its '('. */
static tg_status arguments(pstate *ps, int nin, fused_stmt *st, size_t op_at)
{
    const graph_op_info *info = &graph_ops[st->op];
    int nargs = st->nargs, given = 0;
    graph_attrs def;
    graph_attrs_default(st->op, &def);
    for (int j = 0; j < info->nattrs; j++)
        memcpy(&st->attr[j], (char *)&def + info->attr_descs()[j].offset, sizeof(float));
    for (;;) {
        size_t at = (skip_space(ps), ps->pos);
        if (given < nargs) {
            if (operand(ps, nin, &st->arg[given]) != TG_OK)
                return TG_ERR_ARG;
        } else if (given - nargs < info->nattrs) {
            if (number(ps, &st->attr[given - nargs]) != TG_OK)
                return TG_ERR_ARG;
        } else {
            return fail(ps, at, "%s takes %d operand%s and %d attribute%s", info->name,
                        nargs, nargs > 1 ? "s" : "", info->nattrs,
                        info->nattrs == 1 ? "" : "s");
        }
        given++;
        if (peek(ps) != ',')
            break;
        ps->pos++;
    }
    if (given < nargs)
        return fail(ps, op_at, "%s takes %d operands, got %d", info->name, nargs, given);
    if (expect(ps, ')') != TG_OK)
        return TG_ERR_ARG;
    return check_attrs(ps, op_at, st);
}

/* One statement, number k. */
static tg_status statement(pstate *ps, int k, int nin, fused_stmt *st)
{
    size_t at = (skip_space(ps), ps->pos);
    int reg;
    memset(st, 0, sizeof *st);
    st->pos = (int32_t)at;
    if (peek(ps) != 'r' || at + 1 >= ps->len || !is_digit(ps->s[at + 1]))
        return fail(ps, at, "expected a register rN to write");
    ps->pos++;
    if (small_index(ps, &reg) != TG_OK)
        return TG_ERR_ARG;
    if (reg >= FUSED_MAX_STMTS)
        return fail(ps, at, "register r%d out of range (r0..r%d)", reg, FUSED_MAX_STMTS - 1);
    if (ps->written[reg])
        return fail(ps, at, "register r%d written twice (first at byte %d)", reg,
                    (int)ps->reg_pos[reg]);
    if (expect(ps, '=') != TG_OK)
        return TG_ERR_ARG;
    size_t op_at = (skip_space(ps), ps->pos), e = op_at;
    while (e < ps->len && ((ps->s[e] >= 'a' && ps->s[e] <= 'z') || ps->s[e] == '_' ||
                           (e > op_at && is_digit(ps->s[e]))))
        e++;
    if (e == op_at)
        return fail(ps, op_at, "expected an op name");
    st->op = graph_op_find(ps->s + op_at, e - op_at);
    if (st->op == GRAPH_OP_COUNT)
        return fail(ps, op_at, "unknown op '%.*s'", (int)(e - op_at), ps->s + op_at);
    int nargs;
    if (!fused_op_ok(st->op, &nargs))
        return fail(ps, op_at, "op '%s' cannot be fused (not an f32 elementwise op "
                    "with 1 or 2 operands)", graph_ops[st->op].name);
    st->nargs = (uint8_t)nargs;
    ps->pos = e;
    if (expect(ps, '(') != TG_OK || arguments(ps, nin, st, op_at) != TG_OK)
        return TG_ERR_ARG;
    ps->written[reg] = k + 1; /* only now: a statement may not read itself */
    ps->reg_pos[reg] = (int32_t)at;
    return TG_OK;
}

tg_status fused_prog_parse(const char *prog, int nin, fused_prog *p, char *err,
                           size_t errlen)
{
    pstate ps;
    memset(&ps, 0, sizeof ps);
    ps.s = prog;
    ps.len = strnlen(prog, GRAPH_MAX_STR - 1);
    ps.err = err;
    ps.errlen = errlen;
    memset(p, 0, sizeof *p);
    if (peek(&ps) < 0)
        return fail(&ps, ps.pos, "empty program");
    while (peek(&ps) >= 0) {
        if (p->nstmts == FUSED_MAX_STMTS)
            return fail(&ps, ps.pos, "more than %d statements", FUSED_MAX_STMTS);
        if (statement(&ps, p->nstmts, nin, &p->stmt[p->nstmts]) != TG_OK)
            return TG_ERR_ARG;
        p->nstmts++;
        int c = peek(&ps);
        if (c < 0)
            break;
        if (c != ';')
            return fail(&ps, ps.pos, "expected ';' or the end, found '%c'", c);
        ps.pos++;
    }
    unsigned used = 0;
    for (int k = 0; k < p->nstmts; k++)
        for (int j = 0; j < p->stmt[k].nargs; j++)
            if (p->stmt[k].arg[j].kind == FUSED_ARG_INPUT) {
                used |= 1u << p->stmt[k].arg[j].index;
                if (p->stmt[k].arg[j].index >= p->ninputs)
                    p->ninputs = p->stmt[k].arg[j].index + 1;
            }
    for (int i = 0; i < nin; i++)
        if (!(used & (1u << i)))
            return fail(&ps, 0, "input i%d is never used", i);
    return TG_OK;
}

/* ---- printing ---- */

/* The shortest of %.6g..%.9g that reads back to the same bits. */
static int put_float(char *buf, size_t len, float x)
{
    if (isnan(x))
        return snprintf(buf, len, "nan");
    if (isinf(x))
        return snprintf(buf, len, x < 0 ? "-inf" : "inf");
    char tmp[48];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, (double)x);
        float back = strtof(tmp, NULL);
        if (memcmp(&back, &x, sizeof x) == 0)
            break;
    }
    return snprintf(buf, len, "%s", tmp);
}

static int put_arg(char *buf, size_t len, const fused_arg *a)
{
    if (a->kind == FUSED_ARG_INPUT)
        return snprintf(buf, len, "i%d", a->index);
    if (a->kind == FUSED_ARG_REG)
        return snprintf(buf, len, "r%d", a->index);
    return put_float(buf, len, a->imm);
}

/* Decimal digits of v >= 0. */
static size_t ndigits(int v)
{
    size_t n = 1;
    for (; v >= 10; v /= 10)
        n++;
    return n;
}

/* Attributes of st that fused_prog_print writes: trailing ones equal to
 * their defaults are left out. */
static int printed_attrs(const fused_stmt *st)
{
    const graph_op_info *info = &graph_ops[st->op];
    int nattr = info->nattrs;
    while (nattr > 0 && (float)info->attr_descs()[nattr - 1].def_value == st->attr[nattr - 1])
        nattr--;
    return nattr;
}

enum { FLOAT_TEXT_MAX = 15 }; /* "-1.17549435e-38": sign, 9 digits, point, e-38 */

size_t fused_prog_text_bound(const fused_prog *p)
{
    size_t n = 0;
    for (int k = 0; k < p->nstmts; k++) {
        const fused_stmt *st = &p->stmt[k];
        int nattr = printed_attrs(st);
        /* [";"] "r" k "=" name "(" args, commas ")" */
        n += (k ? 1u : 0u) + 1 + ndigits(k) + 1 + strlen(graph_ops[st->op].name) + 2;
        for (int j = 0; j < st->nargs; j++)
            n += st->arg[j].kind == FUSED_ARG_IMM ? FLOAT_TEXT_MAX
                                                  : 1 + ndigits(st->arg[j].index);
        n += (size_t)nattr * FLOAT_TEXT_MAX;
        if (st->nargs + nattr > 1)
            n += (size_t)(st->nargs + nattr - 1);
    }
    return n;
}

int fused_prog_print(const fused_prog *p, char *buf, size_t len)
{
    size_t n = 0;
    char part[160];
    for (int k = 0; k < p->nstmts; k++) {
        const fused_stmt *st = &p->stmt[k];
        const graph_op_info *info = &graph_ops[st->op];
        int nattr = printed_attrs(st);
        int w = snprintf(part, sizeof part, "%sr%d=%s(", k ? ";" : "", k, info->name);
        for (int j = 0; j < st->nargs + nattr; j++) {
            if (j)
                part[w++] = ',';
            w += j < st->nargs ? put_arg(part + w, sizeof part - (size_t)w, &st->arg[j])
                               : put_float(part + w, sizeof part - (size_t)w,
                                           st->attr[j - st->nargs]);
        }
        part[w++] = ')';
        if (n + (size_t)w + 1 > len)
            return -1;
        memcpy(buf + n, part, (size_t)w);
        n += (size_t)w;
    }
    if (n + 1 > len)
        return -1;
    buf[n] = '\0';
    return (int)n;
}
