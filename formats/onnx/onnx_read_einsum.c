/*
 * onnx_read_einsum.c - ONNX Einsum as transposes, reshapes, reduce_sums
 * and batched matmuls (f32).
 *
 * The equation is parsed into one subscript string per operand, with an
 * ellipsis replaced by letters of its own ('0'.. '7', aligned from the
 * right as broadcasting aligns them), and the output's (given after "->",
 * or implicit: the ellipsis, then the letters that appear once, in
 * alphabetical order).  Operands are contracted two at a time, in the
 * order opt_einsum's greedy path takes: next, the pair whose result has
 * the fewest elements (a,b,c,d,e,f,ab,cd,ef-> contracts a vector into a
 * matrix at each step, where left to right it made a 6-D outer product);
 * an Einsum whose smallest next step would make more than
 * ONNX_MAX_EINSUM_ELEMS elements (or its largest operand's count, if
 * more) is refused, its result included.  Each pair keeps the letters
 * that the output or another operand still needs:
 *
 *   - a letter only one side has and nobody needs is summed out first
 *     (reduce_sum over its axis);
 *   - the rest are batch (both sides, needed), contracted (both sides, not
 *     needed), left (A only) or right (B only);
 *   - A is transposed to [batch.., left.., contracted..] and B to
 *     [batch.., contracted.., right..]; the left, contracted and right
 *     groups are each reshaped into one dim (a missing group is a dim of
 *     1) where they are not exactly one dim already; matmul multiplies
 *     them over the batch dims (which broadcast, as ONNX's do), and the
 *     result is reshaped back to [batch.., left.., right..].
 *
 * A single operand is summed over the letters the output lacks.  Last,
 * the result is transposed into the output's order.  maxvit_t's
 * attention ("bhid,bhjd->bhij" and the like) is one matmul, with one
 * transpose of B.
 *
 * Refused, saying so: a letter repeated within one operand (a diagonal),
 * a letter the output repeats or that no operand has, contracted sizes
 * that differ, more than GRAPH_MAX_DIMS dims on the way.  A dynamic dim
 * stays dynamic only as the leading batch dim; one that a reshape groups
 * is taken at its traced size (the node is flagged specialized).
 */
#include <ctype.h>
#include <string.h>

#include "onnx_read_impl.h"

enum { EIN_MAX_OPS = 16, EIN_MAX_LETTERS = 64 };

typedef struct ein_term { /* a value and the letter of each of its dims */
    int32_t v;
    int n;
    char s[GRAPH_MAX_DIMS + 1];
} ein_term;

static int has(const char *s, int n, char c)
{
    for (int i = 0; i < n; i++)
        if (s[i] == c)
            return 1;
    return 0;
}

/* Letter i of the ellipsis of a rank-`ne` ellipsis, aligned right among
 * `emax` (so that broadcasting pairs the same letters). */
static char ellipsis_letter(int emax, int ne, int i)
{
    return (char)('0' + (emax - ne) + i);
}

/*
 * Splits eq into the operands' subscripts (nops of them, ranks given) and
 * the output's.  Returns 0 and a reason in why on a malformed equation.
 */
static int parse_equation(const char *eq, int nops, const int *rank, char sub[][GRAPH_MAX_DIMS + 1],
                          int *nsub, char *out, int *nout, char *why, size_t whylen)
{
    char raw[EIN_MAX_OPS + 1][EIN_MAX_LETTERS + 4];
    int nraw = 0, len = 0, arrow = 0;
    for (const char *p = eq;; p++) {
        if (*p == ' ')
            continue;
        if (*p == ',' || *p == '\0' || (p[0] == '-' && p[1] == '>')) {
            if (nraw > nops) {
                snprintf(why, whylen, "the equation names more operands than the %d inputs",
                         nops);
                return 0;
            }
            raw[nraw++][len] = '\0';
            len = 0;
            if (*p == '\0')
                break;
            if (*p == '-') {
                if (arrow++ || nraw != nops) {
                    snprintf(why, whylen, "'->' must follow the %d operands' subscripts, once",
                             nops);
                    return 0;
                }
                p++;
            }
            continue;
        }
        if (len >= EIN_MAX_LETTERS) {
            snprintf(why, whylen, "a term of more than %d characters", EIN_MAX_LETTERS);
            return 0;
        }
        if (!isalpha((unsigned char)*p) && *p != '.') {
            snprintf(why, whylen, "character '%c' in the equation (letters, '...', ',', '->')",
                     *p);
            return 0;
        }
        raw[nraw][len++] = *p;
    }
    if (nraw != nops + arrow) {
        snprintf(why, whylen, "the equation has %d operand terms for %d inputs", nraw - arrow,
                 nops);
        return 0;
    }
    /* the ellipsis of each operand, and the widest */
    int ne[EIN_MAX_OPS + 1], emax = 0;
    for (int k = 0; k < nraw; k++) {
        const char *t = raw[k];
        const char *dots = strstr(t, "...");
        int letters = 0;
        for (const char *c = t; *c; c++)
            letters += *c != '.';
        int ndots = (int)strlen(t) - letters;
        if (ndots != 0 && (ndots != 3 || !dots)) {
            snprintf(why, whylen, "'.' outside one '...' in term '%s'", t);
            return 0;
        }
        if (k < nops) {
            ne[k] = rank[k] - letters;
            if (ne[k] < 0 || (!dots && ne[k] != 0)) {
                snprintf(why, whylen, "term '%s' has %d subscripts for input %d of rank %d", t,
                         letters, k, rank[k]);
                return 0;
            }
            if (ne[k] > emax)
                emax = ne[k];
        } else {
            ne[k] = dots ? -1 : 0; /* the output's: emax */
        }
    }
    for (int k = 0; k < nraw; k++) {
        int e = ne[k] < 0 ? emax : ne[k], n = 0;
        char *d = k < nops ? sub[k] : out;
        for (const char *c = raw[k]; *c; c++) {
            if (*c == '.') {
                /* the output's letters before '...' are not counted in a rank */
                if (n + e > GRAPH_MAX_DIMS) {
                    snprintf(why, whylen, "more than %d dims in term '%.40s'", GRAPH_MAX_DIMS,
                             raw[k]);
                    return 0;
                }
                for (int i = 0; i < e; i++)
                    d[n++] = ellipsis_letter(emax, e, i);
                c += 2;
                continue;
            }
            if (n >= GRAPH_MAX_DIMS) {
                snprintf(why, whylen, "more than %d dims in term '%.40s'", GRAPH_MAX_DIMS, raw[k]);
                return 0;
            }
            d[n++] = *c;
        }
        d[n] = '\0';
        if (k < nops)
            nsub[k] = n;
        else
            *nout = n;
    }
    if (!arrow) { /* implicit: the ellipsis, then the letters seen once, sorted */
        int n = 0;
        for (int i = 0; i < emax; i++)
            out[n++] = ellipsis_letter(emax, emax, i);
        for (int c = 'A'; c <= 'z'; c++) {
            int count = 0;
            for (int k = 0; k < nops; k++)
                for (int i = 0; i < nsub[k]; i++)
                    count += sub[k][i] == c;
            if (count == 1 && isalpha(c)) {
                if (n >= GRAPH_MAX_DIMS) {
                    snprintf(why, whylen, "an output of more than %d dims", GRAPH_MAX_DIMS);
                    return 0;
                }
                out[n++] = (char)c;
            }
        }
        out[n] = '\0';
        *nout = n;
    }
    return 1;
}

/* The node is specialized when any dim of v that is not its leading dim
 * is dynamic and a reshape regroups it. */
static void note_dynamic(onnx_reader *r, int32_t v, int keep_lead)
{
    uint32_t dyn = onnx_dynamic_dims(r, v);
    if (keep_lead)
        dyn &= ~1u;
    if (dyn)
        r->specialized = 1;
}

static tg_status transpose_to(onnx_reader *r, ein_term *t, const char *order)
{
    int64_t perm[GRAPH_MAX_DIMS];
    int id = 1;
    for (int i = 0; i < t->n; i++) {
        perm[i] = (int64_t)(strchr(t->s, order[i]) - t->s);
        id &= perm[i] == i;
    }
    memcpy(t->s, order, (size_t)t->n);
    if (id)
        return TG_OK;
    graph_transpose_attrs a;
    memset(&a, 0, sizeof a);
    a.perm.n = t->n;
    memcpy(a.perm.v, perm, sizeof *perm * (size_t)t->n);
    return onnx_add(r, GRAPH_OP_transpose, &t->v, 1, &a, &t->v, 1);
}

/* Sums t over the letters in drop. */
static tg_status sum_out(onnx_reader *r, ein_term *t, const char *drop, int ndrop)
{
    if (ndrop == 0)
        return TG_OK;
    graph_reduce_sum_attrs a;
    memset(&a, 0, sizeof a);
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (has(drop, ndrop, t->s[i]))
            a.axes.v[a.axes.n++] = i;
        else
            t->s[n++] = t->s[i];
    t->s[n] = '\0';
    t->n = n;
    a.keepdim = 0;
    return onnx_add(r, GRAPH_OP_reduce_sum, &t->v, 1, &a, &t->v, 1);
}

/* The letters of t that `needed` lacks and `other` lacks: summed out. */
static tg_status drop_unneeded(onnx_reader *r, ein_term *t, const ein_term *other,
                               const char *needed, int nneeded)
{
    char drop[GRAPH_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < t->n; i++)
        if (!has(needed, nneeded, t->s[i]) && (!other || !has(other->s, other->n, t->s[i])))
            drop[nd++] = t->s[i];
    return sum_out(r, t, drop, nd);
}

/* The size of letter c in term t (1 if t lacks it). */
static int64_t letter_size(onnx_reader *r, const ein_term *t, char c)
{
    const char *p = memchr(t->s, c, (size_t)t->n);
    return p ? onnx_vtype(r, t->v)->dim[p - t->s] : 1;
}

/* Reshapes *v to dims (n of them) unless it has them; dim 0 follows a
 * dynamic batch where lead_batch. */
static tg_status regroup(onnx_reader *r, int32_t *v, const int64_t *dims, int n, int lead_batch)
{
    const graph_type *t = onnx_vtype(r, *v);
    if (t->ndim == n && !memcmp(t->dim, dims, sizeof *dims * (size_t)n))
        return TG_OK;
    int dyn0 = lead_batch && (onnx_dynamic_dims(r, *v) & 1);
    note_dynamic(r, *v, lead_batch);
    return onnx_reshape_to(r, *v, dyn0, dims, n, v);
}

/* a := a (x) b over their shared letters, keeping the letters in needed. */
static tg_status contract(onnx_reader *r, ein_term *a, ein_term *b, const char *needed,
                          int nneeded)
{
    tg_status st = drop_unneeded(r, a, b, needed, nneeded);
    if (st == TG_OK)
        st = drop_unneeded(r, b, a, needed, nneeded);
    if (st != TG_OK)
        return st;
    char batch[GRAPH_MAX_DIMS], left[GRAPH_MAX_DIMS], right[GRAPH_MAX_DIMS], con[GRAPH_MAX_DIMS];
    int nb = 0, nl = 0, nr = 0, nc = 0;
    for (int i = 0; i < a->n; i++) {
        char c = a->s[i];
        if (!has(b->s, b->n, c))
            left[nl++] = c;
        else if (has(needed, nneeded, c))
            batch[nb++] = c;
        else
            con[nc++] = c;
    }
    for (int i = 0; i < b->n; i++)
        if (!has(a->s, a->n, b->s[i]))
            right[nr++] = b->s[i];
    int64_t ls = 1, rs = 1, cs = 1;
    for (int i = 0; i < nc; i++) {
        int64_t sa = letter_size(r, a, con[i]), sb = letter_size(r, b, con[i]);
        if (sa != sb)
            return onnx_fail(r, TG_ERR_SHAPE, "subscript '%c' is %lld in one operand and %lld "
                             "in the other", con[i], LL(sa), LL(sb));
        cs *= sa;
    }
    for (int i = 0; i < nl; i++)
        ls *= letter_size(r, a, left[i]);
    for (int i = 0; i < nr; i++)
        rs *= letter_size(r, b, right[i]);
    if (nb + 2 > GRAPH_MAX_DIMS || nb + nl + nr > GRAPH_MAX_DIMS)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "a product of %d batch, %d left and %d right "
                         "dims is more than %d", nb, nl, nr, GRAPH_MAX_DIMS);
    char order[GRAPH_MAX_DIMS + 1];
    memcpy(order, batch, (size_t)nb);
    memcpy(order + nb, left, (size_t)nl);
    memcpy(order + nb + nl, con, (size_t)nc);
    if ((st = transpose_to(r, a, order)) != TG_OK)
        return st;
    memcpy(order + nb, con, (size_t)nc);
    memcpy(order + nb + nc, right, (size_t)nr);
    if ((st = transpose_to(r, b, order)) != TG_OK)
        return st;
    int64_t da[GRAPH_MAX_DIMS], db[GRAPH_MAX_DIMS], dy[GRAPH_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        da[i] = letter_size(r, a, batch[i]);
        db[i] = letter_size(r, b, batch[i]);
        dy[i] = da[i] > db[i] ? da[i] : db[i]; /* broadcast (matmul checks it) */
    }
    for (int i = 0; i < nl; i++)
        dy[nb + i] = letter_size(r, a, left[i]);
    for (int i = 0; i < nr; i++)
        dy[nb + nl + i] = letter_size(r, b, right[i]);
    da[nb] = ls;
    da[nb + 1] = cs;
    db[nb] = cs;
    db[nb + 1] = rs;
    st = regroup(r, &a->v, da, nb + 2, nb > 0);
    if (st == TG_OK)
        st = regroup(r, &b->v, db, nb + 2, nb > 0);
    int32_t in[2] = {a->v, b->v};
    if (st == TG_OK)
        st = onnx_add(r, GRAPH_OP_matmul, in, 2, NULL, &a->v, 1);
    if (st != TG_OK)
        return st;
    /* [batch.., ls, rs] back to [batch.., left.., right..] */
    memcpy(a->s, batch, (size_t)nb);
    memcpy(a->s + nb, left, (size_t)nl);
    memcpy(a->s + nb + nl, right, (size_t)nr);
    a->n = nb + nl + nr;
    a->s[a->n] = '\0';
    return regroup(r, &a->v, dy, a->n, nb > 0);
}

/* The letters the output or a term other than t[i] and t[j] (of n) has:
 * what contracting the pair must keep.  Returns their count. */
static int needed_letters(const ein_term *t, int n, int i, int j, const char *out, int nout,
                          char *needed)
{
    int nn = 0;
    for (int k = 0; k < nout; k++)
        needed[nn++] = out[k];
    for (int k = 0; k < n; k++)
        for (int l = 0; k != i && k != j && l < t[k].n; l++)
            if (!has(needed, nn, t[k].s[l]))
                needed[nn++] = t[k].s[l];
    return nn;
}

/*
 * The pair of terms (of n) to contract next, as opt_einsum's greedy
 * order picks it: the one whose result has the fewest elements (the
 * first such pair, so that a chain the output order already suits goes
 * left to right).  Returns that count (INT64_MAX past int64).
 */
static int64_t next_pair(onnx_reader *r, const ein_term *t, int n, const char *out, int nout,
                         int *bi, int *bj)
{
    int64_t best = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            char needed[GRAPH_MAX_DIMS * (EIN_MAX_OPS + 1)];
            int nn = needed_letters(t, n, i, j, out, nout, needed);
            int64_t size = 1;
            for (int side = 0; side < 2; side++) {
                const ein_term *a = &t[side ? j : i], *b = &t[side ? i : j];
                for (int l = 0; l < a->n; l++) {
                    char c = a->s[l];
                    if (!has(needed, nn, c) || (side && has(b->s, b->n, c)))
                        continue; /* summed out, or counted from the first */
                    int64_t sa = letter_size(r, a, c), sb = letter_size(r, b, c);
                    if (__builtin_mul_overflow(size, sa > sb ? sa : sb, &size))
                        size = INT64_MAX;
                }
            }
            if (best < 0 || size < best) {
                best = size;
                *bi = i;
                *bj = j;
            }
        }
    return best;
}

/* The most elements a contraction of the node may make: the budget, or
 * its largest operand (n terms) if that is more. */
static int64_t einsum_limit(onnx_reader *r, const ein_term *t, int n)
{
    int64_t limit = ONNX_MAX_EINSUM_ELEMS;
    for (int k = 0; k < n; k++) {
        int64_t e = graph_type_numel(onnx_vtype(r, t[k].v));
        limit = e > limit ? e : limit;
    }
    return limit;
}

tg_status onnx_cv_einsum(onnx_reader *r, const onnx_op *op)
{
    (void)op;
    char eq[512];
    tg_status st = onnx_attr_str(r, "equation", "", eq, sizeof eq);
    if (st != TG_OK)
        return st;
    if (!onnx_attr(r, "equation"))
        return onnx_fail(r, TG_ERR_FORMAT, "equation is missing");
    int nops = (int)r->node->n_input;
    if (nops < 1 || nops > EIN_MAX_OPS)
        return onnx_fail(r, TG_ERR_UNSUPPORTED, "%d operands (1 to %d are supported)", nops,
                         EIN_MAX_OPS);
    ein_term t[EIN_MAX_OPS];
    int rank[EIN_MAX_OPS], nsub[EIN_MAX_OPS], nout = 0;
    char sub[EIN_MAX_OPS][GRAPH_MAX_DIMS + 1], out[GRAPH_MAX_DIMS + 1], why[160];
    for (int k = 0; k < nops; k++) {
        if ((st = onnx_input(r, k, &t[k].v)) != TG_OK)
            return st;
        rank[k] = onnx_vtype(r, t[k].v)->ndim;
    }
    if (!parse_equation(eq, nops, rank, sub, nsub, out, &nout, why, sizeof why))
        return onnx_fail(r, TG_ERR_FORMAT, "equation '%s': %s", eq, why);
    for (int k = 0; k < nops; k++) {
        t[k].n = nsub[k];
        memcpy(t[k].s, sub[k], sizeof t[k].s);
        for (int i = 0; i < t[k].n; i++)
            if (strchr(t[k].s + i + 1, t[k].s[i]))
                return onnx_fail(r, TG_ERR_UNSUPPORTED, "equation '%s': subscript '%c' twice "
                                 "in operand %d (a diagonal) is not supported", eq,
                                 t[k].s[i], k);
    }
    for (int i = 0; i < nout; i++) {
        int found = 0;
        for (int k = 0; k < nops; k++)
            found |= has(t[k].s, t[k].n, out[i]);
        if (!found || strchr(out + i + 1, out[i]))
            return onnx_fail(r, TG_ERR_FORMAT, "equation '%s': output subscript '%c' %s", eq,
                             out[i], found ? "twice" : "in no operand");
    }
    int n = nops;
    int64_t limit = einsum_limit(r, t, nops);
    while (n > 1 && st == TG_OK) {
        int i = 0, j = 1;
        int64_t size = next_pair(r, t, n, out, nout, &i, &j);
        if (size > limit)
            return onnx_fail(r, TG_ERR_UNSUPPORTED, "equation '%s': its smallest next "
                             "contraction makes %lld elements, over the bound of %lld (2^28, "
                             "or its largest operand's)", eq, LL(size), LL(limit));
        char needed[GRAPH_MAX_DIMS * (EIN_MAX_OPS + 1)];
        int nn = needed_letters(t, n, i, j, out, nout, needed);
        ein_term pair = t[i]; /* the result replaces t[i] */
        st = contract(r, &pair, &t[j], needed, nn);
        t[i] = pair;
        memmove(&t[j], &t[j + 1], sizeof *t * (size_t)(n - j - 1));
        n--;
    }
    ein_term acc = t[0];
    if (st == TG_OK)
        st = drop_unneeded(r, &acc, NULL, out, nout);
    if (st == TG_OK)
        st = transpose_to(r, &acc, out);
    return st == TG_OK ? onnx_bind(r, 0, acc.v) : st;
}
