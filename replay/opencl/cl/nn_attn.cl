/*
 * nn_attn.cl - attention as one kernel (ops_attn.c): out = softmax(q kT
 * (/ or *) scale) v over the last axis, for q [BH, M, D], k [BH, N, D],
 * v [BH, N, DV], out [BH, M, DV], each one read or written through element
 * strides: the int8 arguments qs, ks, vs, os hold s0 the offset, s1 and s2
 * the strides of the outer and inner batch index (the second and third
 * dims of the NDRange: BH = outer x inner), s3 a row's, s4 a column's; so
 * q, k and v may be strided views (split, reshape, transpose) of the
 * buffers passed, and out one of the buffer after a transpose and reshape
 * (ops_attn.c).  Every stride >= 0 and every element's index fits an int.
 *
 * Build options: D, DV (the head dims), BM (query rows per work-group),
 * BN (keys per tile), WG (work-group size), NACC (outputs per item:
 * ceil(BM * DV / WG)), SCALE_OP (0 none, 1 divide, 2 multiply).
 *
 * One work-group per (block of BM query rows, batch-head).  The q block
 * and each tile of BN keys and values are staged in __local memory; the
 * scores of a tile go to __local, then each row's owner updates the
 * running max m, every item turns its scores into p = exp(s - m), and
 * each row's owner adds them to the row's sum l while every item updates
 * its NACC outputs acc += p v (online softmax: earlier sums and outputs
 * rescaled by exp(m_old - m_new)).  out = acc / l.  The max ignores NaN as
 * nn_softmax_rows does; a row whose scores are all -inf, or any +inf/NaN,
 * gives NaN as the CPU's softmax; no keys (N = 0) gives 0 as the matmul
 * of an empty product.  Local rows are padded by one float (KS, QS) so
 * that items reading one column of different rows hit different banks.
 */
#define QS (D + 1)
#define KS (D + 1)
#define SS (BN + 1)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nn_attn(__global const float *q, __global const float *k, __global const float *v,
             __global float *out, int M, int N, float scale, int8 qs, int8 ks, int8 vs,
             int8 os)
{
    __local float ql[BM * QS];
    __local float kl[BN * KS];
    __local float vl[BN * DV];
    __local float sl[BM * SS];
    __local float mrow[BM], lrow[BM], arow[BM];
    int lid = get_local_id(0);
    int r0 = get_group_id(0) * BM;
    long bo = get_group_id(1), bi = get_group_id(2);
    __global const float *qb = q + qs.s0 + bo * qs.s1 + bi * qs.s2;
    __global const float *kb = k + ks.s0 + bo * ks.s1 + bi * ks.s2;
    __global const float *vb = v + vs.s0 + bo * vs.s1 + bi * vs.s2;
    __global float *ob = out + os.s0 + bo * os.s1 + bi * os.s2;

    for (int e = lid; e < BM * D; e += WG) {
        int r = e / D, d = e % D;
        ql[r * QS + d] = r0 + r < M ? qb[(r0 + r) * qs.s3 + d * qs.s4] : 0.0f;
    }
    for (int r = lid; r < BM; r += WG) {
        mrow[r] = -INFINITY;
        lrow[r] = 0.0f;
    }
    float acc[NACC];
    for (int i = 0; i < NACC; i++)
        acc[i] = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j0 = 0; j0 < N; j0 += BN) {
        int nj = N - j0 < BN ? N - j0 : BN;
        for (int e = lid; e < BN * D; e += WG) {
            int j = e / D, d = e % D;
            kl[j * KS + d] = j < nj ? kb[(j0 + j) * ks.s3 + d * ks.s4] : 0.0f;
        }
        for (int e = lid; e < BN * DV; e += WG) {
            int j = e / DV, c = e % DV;
            vl[e] = j < nj ? vb[(j0 + j) * vs.s3 + c * vs.s4] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the scores of this tile */
        for (int e = lid; e < BM * BN; e += WG) {
            int r = e / BN, j = e % BN;
            float s = 0.0f;
            for (int d = 0; d < D; d++)
                s = fma(ql[r * QS + d], kl[j * KS + d], s);
#if SCALE_OP == 1
            s = s / scale;
#elif SCALE_OP == 2
            s = s * scale;
#endif
            sl[r * SS + j] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* each row's new max and the factor for what it summed so far */
        for (int r = lid; r < BM; r += WG) {
            float mo = mrow[r], mn = mo;
            for (int j = 0; j < nj; j++)
                mn = sl[r * SS + j] > mn ? sl[r * SS + j] : mn;
            mrow[r] = mn;
            /* no finite score yet: nothing summed to rescale */
            arow[r] = mn == -INFINITY ? 1.0f : exp(mo - mn);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the scores replaced by exp(s - m), one per item */
        for (int e = lid; e < BM * BN; e += WG) {
            int r = e / BN, j = e % BN;
            float s = sl[r * SS + j], mn = mrow[r];
            /* NaN scores (ignored by the max) still poison the row */
            sl[r * SS + j] = j >= nj ? 0.0f
                             : mn == -INFINITY ? (isnan(s) ? s : 0.0f) : exp(s - mn);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the sums (lrow, read after the loop) and the outputs */
        for (int r = lid; r < BM; r += WG) {
            float sum = 0.0f;
            for (int j = 0; j < BN; j++)
                sum += sl[r * SS + j];
            lrow[r] = lrow[r] * arow[r] + sum;
        }
        for (int i = 0; i < NACC; i++) {
            int o = lid + i * WG;
            if (o < BM * DV) {
                int r = o / DV, c = o % DV;
                float t = acc[i] * arow[r];
                for (int j = 0; j < BN; j++)
                    t = fma(sl[r * SS + j], vl[j * DV + c], t);
                acc[i] = t;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < NACC; i++) {
        int o = lid + i * WG;
        if (o < BM * DV) {
            int r = o / DV, c = o % DV;
            if (r0 + r < M)
                ob[(r0 + r) * os.s3 + c * os.s4] = N == 0 ? 0.0f
                                              : mrow[r] == -INFINITY ? NAN : acc[i] / lrow[r];
        }
    }
}
