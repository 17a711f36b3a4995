/*
 * layout_cost.c - the layout pass's cost model (layout.c plans, this
 * decides, layout.c rewrites): which blocked regions pay for their
 * conversions.
 */
#include <math.h>
#include <stdio.h>

#include "../eager/cost_rates.h"
#include "../graph/alloc.h"
#include "layout_impl.h"
#include "../graph/graph_impl.h"

/*
 * The cost model's rates (graph_cost_rates, graph/target.h) are the
 * target's: the CPU measures them on its machine once and caches them
 * (eager/cost_rates.c), OpenCL and a target without a rates function take
 * the built-in ones (GRAPH_COST_RATES_BUILTIN), fitted with tracegraph
 * bench (replay, one thread, Zen 5, oneDNN 2.6; a conv between two
 * softmaxes at -O2 and -O3, one conv and two in a row, so the conversions
 * and each conv separate): a 1x1 stride-1 conv runs plain as one GEMM,
 * ~48 MACs/ns (gemm), and blocked at ~54 on multiples of 16 channels
 * (blk_1x1), ~48 counting the padded lanes' MACs otherwise
 * (blk_1x1_padded; 24 -> 32 channels: blocked 1.6x slower); a larger
 * kernel or a stride runs plain as im2col + GEMM, ~40 (im2col), and
 * blocked (direct or Winograd) at 90 to 160 per padded MAC (blk_kxk); a
 * plain conv costs ~0.5 us more per call than a blocked one besides
 * (plain_call: 16 channels on 7x7: 1.7 us plain, 1.0 blocked);
 * to_blocked / from_blocked move ~50 bytes/ns (copy: read and write
 * counted) plus a step's ~0.35 us (step).
 *
 * The shape of the curve is not a machine rate and stays fitted: both
 * convs are slower on few positions (N*H*W), the GEMM more (at 7x7 ~28
 * plain, ~45 blocked, taken as rate * pos / (pos + GEMM_POS), BLK_POS for
 * blocked), and the GEMM on few input channels too (16: ~33, taken as
 * rate * sqrt(C / GEMM_C) below GEMM_C: two 1x1 convs of 16 channels run
 * ~4% faster blocked).  GEMM_POS and BLK_POS live in eager/cost_rates.h,
 * whose micro-benchmark solves its measurements with them.
 */
#define GEMM_POS EAGER_COST_GEMM_POS
#define BLK_POS EAGER_COST_BLK_POS
#define GEMM_C 32.0

/* Channels rounded up to whole blocks of bs. */
static int64_t padded(int64_t c, int bs)
{
    return (c + bs - 1) / bs * bs;
}

/*
 * Estimated ns saved by running ungrouped conv node i blocked rather
 * than plain (negative: blocked is slower), from its MACs and kernel.
 */
static double conv_gain_ns(const graph *g, int32_t i, int bs, const graph_cost_rates *R)
{
    const graph_node *n = &g->nodes[i];
    const graph_type *w = &g->values[n->in[1]].type, *y = &g->values[n->out[0]].type;
    graph_conv2d_blk_attrs at = layout_blk_attrs(n, bs);
    int64_t c = w->dim[1], o = w->dim[0], taps = w->dim[2] * w->dim[3];
    double pos = (double)y->dim[0] * (double)y->dim[2] * (double)y->dim[3];
    double macs = pos * (double)(c * o * taps);
    /* fewer than bs channels in: a stem, which reads them plain */
    double pmacs = pos * (double)((c < bs ? c : padded(c, bs)) * padded(o, bs) * taps);
    int strided = 0;
    if (macs <= 0) /* an empty output or no channels: nothing to gain */
        return 0.0;
    for (int k = 0; k < at.stride.n; k++)
        strided |= at.stride.v[k] != 1;
    if (taps == 1 && !strided)
        return R->plain_call +
               macs / (R->gemm * sqrt(fmin(1.0, (double)c / GEMM_C))) * (pos + GEMM_POS) / pos -
               pmacs / (c % bs || o % bs ? R->blk_1x1_padded : R->blk_1x1) * (pos + BLK_POS) /
                   pos;
    return R->plain_call + macs / R->im2col - pmacs / R->blk_kxk;
}

/* Bytes to_blocked / from_blocked of plain value v read and write. */
static double conversion_bytes(const graph *g, int32_t v, int bs)
{
    const graph_type *t = &g->values[v].type;
    graph_type b = layout_blocked_type(t, bs);
    return 4.0 * (double)(graph_type_numel(t) + graph_type_numel(&b));
}

/*
 * The cost model: a region stays plain when its conversions (the
 * to_blocked of each plain value entering it, the from_blocked of each
 * value leaving it: bytes moved, at the copy rate) cost more than its
 * convs gain blocked (conv_gain_ns).  A region with a grouped or
 * depthwise conv always pays (measured 3-8x faster blocked, with the
 * conversions): it stays blocked.  Measured, a lone 1x1 conv of 16 or 64
 * channels on 56x56 is ~5% slower blocked with its two conversions, one
 * of 24 channels ~50% (padded lanes); 3x3 convs are 1.5-4x faster
 * blocked at every size tried.  The estimate is arithmetic on the traced
 * shapes and the target's rates, so the output of -O3 does not vary from
 * run to run on one machine once its rates are cached (a dynamic batch
 * scales gain and cost alike); TG_COST_RATES=builtin (the tests) makes it
 * the same on every machine.  The rates are asked only when a region has
 * a conv to weigh, and said in --explain.
 */
tg_status layout_plan_costs(lay *L, plan *P, int32_t nn)
{
    graph *g = L->g;
    double *gain = tg_calloc((size_t)nn * 2 + 1, sizeof *gain), *bytes = gain + nn;
    int32_t *nconv = tg_calloc((size_t)nn * 4 + 1, sizeof *nconv), *nconvert = nconv + nn,
            *grouped = nconv + 2 * nn, *said = nconv + 3 * nn;
    if (!gain || !nconv) {
        tg_free(gain);
        tg_free(nconv);
        return opt_fail(L->ctx, g, -1, TG_ERR_NOMEM, "out of memory");
    }
    graph_cost_rates R = GRAPH_COST_RATES_BUILTIN;
    int need = 0;
    for (int32_t i = 0; i < nn && !need; i++)
        need = P->kind[i] == LK_CONV && layout_blk_attrs(&g->nodes[i], L->bs).groups == 1;
    if (need && L->t->rates) {
        char why[400] = "";
        tg_status st = L->t->rates(L->t, &R, why, sizeof why);
        if (st != TG_OK) {
            tg_free(gain);
            tg_free(nconv);
            return opt_fail(L->ctx, g, -1, st, "target %s: %s", L->t->name, why);
        }
    } else if (need) {
        snprintf(R.from, sizeof R.from, "built-in (target %s measures none)", L->t->name);
    }
    if (need) {
        opt_explain(L->ctx, g, -1,
                    "cost rates for %s, %d thread%s: %s: gemm %.1f, im2col %.1f, blocked 1x1 "
                    "%.1f (padded %.1f), blocked kxk %.1f MACs/ns; copy %.1f bytes/ns, step "
                    "%.0f ns, plain call %.0f ns",
                    L->t->name, L->t->threads, L->t->threads == 1 ? "" : "s", R.from, R.gemm,
                    R.im2col, R.blk_1x1, R.blk_1x1_padded, R.blk_kxk, R.copy, R.step,
                    R.plain_call);
    }
    for (int32_t i = 0; i < nn; i++) {
        if (P->kind[i] != LK_CONV)
            continue;
        int32_t r = root_of(P->parent, i);
        nconv[r]++;
        if (layout_blk_attrs(&g->nodes[i], L->bs).groups > 1)
            grouped[r] = 1;
        else
            gain[r] += conv_gain_ns(g, i, L->bs, &R);
    }
    for (int32_t v = 0; v < L->nv; v++) {
        int32_t r = -1;
        if (P->enter[v] >= 0) {
            r = root_of(P->parent, P->enter[v]);
        } else if (P->by[v] >= 0) {
            int outside = layout_is_output(g, v);
            for (int32_t k = L->u->first[v]; k < L->u->first[v + 1] && !outside; k++) {
                int32_t rd = L->u->list[k];
                outside = !(g->nodes[rd].flags & GRAPH_NODE_DEAD) && P->kind[rd] == LK_NONE;
            }
            if (outside)
                r = root_of(P->parent, P->by[v]);
        }
        if (r >= 0) {
            bytes[r] += conversion_bytes(g, v, L->bs);
            nconvert[r]++;
        }
    }
    for (int32_t i = 0; i < nn; i++) {
        int32_t r = P->kind[i] != LK_NONE ? root_of(P->parent, i) : -1;
        double cost = r >= 0 ? bytes[r] / R.copy + R.step * nconvert[r] : 0;
        if (r >= 0 && (grouped[r] || gain[r] >= cost)) {
            int first = P->kind[i] == LK_CONV && !said[r]; /* once, at its first conv */
            said[r] |= first;
            if (first && grouped[r])
                opt_explain(L->ctx, g, i,
                            "blocked for %s (%d-channel blocks): a region of %d conv%s with a "
                            "grouped or depthwise one, always blocked",
                            L->t->name, L->bs, nconv[r], nconv[r] == 1 ? "" : "s");
            else if (first)
                opt_explain(L->ctx, g, i,
                            "blocked for %s (%d-channel blocks): a region of %d conv%s saving "
                            "~%.1f us, more than its %d conversion%s cost (~%.1f us, estimated)",
                            L->t->name, L->bs, nconv[r], nconv[r] == 1 ? "" : "s",
                            gain[r] / 1e3, nconvert[r], nconvert[r] == 1 ? "" : "s",
                            cost / 1e3);
            continue;
        }
        if (r < 0)
            continue;
        if (P->kind[i] == LK_CONV) {
            const char *what = nconv[r] > 1 ? "conv" : "lone conv";
            const char *whose = nconv[r] > 1 ? "its region's" : "its";
            double mb = bytes[r] / 1e6, us = (bytes[r] / R.copy + R.step * nconvert[r]) / 1e3;
            if (gain[r] >= 0)
                opt_explain(L->ctx, g, i,
                            "%s kept plain: %s %d conversion%s (%.2f MB, ~%.1f us) cost more "
                            "than the blocked layout saves (~%.1f us, estimated)",
                            what, whose, nconvert[r], nconvert[r] == 1 ? "" : "s", mb, us,
                            gain[r] / 1e3);
            else
                opt_explain(L->ctx, g, i,
                            "%s kept plain: the blocked layout would be slower (~%.1f us, "
                            "estimated: padded channels) and add %s %d conversion%s (%.2f MB, "
                            "~%.1f us)",
                            what, -gain[r] / 1e3, whose, nconvert[r],
                            nconvert[r] == 1 ? "" : "s", mb, us);
        }
        P->kind[i] = LK_NONE;
    }
    tg_free(gain);
    tg_free(nconv);
    return TG_OK;
}
