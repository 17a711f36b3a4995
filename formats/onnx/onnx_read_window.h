/*
 * onnx_read_window.h - what the window converters share (private), the
 * helpers of onnx_read_window.c: the converters of onnx_read_conv.c (Conv,
 * ConvTranspose) and onnx_read_pool.c (MaxPool, AveragePool) call them.
 */
#ifndef TG_FORMATS_ONNX_READ_WINDOW_H
#define TG_FORMATS_ONNX_READ_WINDOW_H

#include "onnx_read_impl.h"

/* The window of a Conv, ConvTranspose or pool: kernel, strides,
 * dilations, pads; entry 2 of k, s and d is D's (1 unless 3-D). */
typedef struct window2d {
    int one_d; /* the ONNX node is 1-D: its attributes have one entry per dim */
    int three_d; /* 3-D (NCDHW): three entries, D's first */
    int64_t k[3], s[3], d[3];
    graph_ints pads; /* top, left, bottom, right */
    int64_t dpads[2]; /* three_d: D's begin and end */
    int64_t ceil_end[3]; /* ceil_mode's part of the end pads (H, W, D) */
} window2d;

/* The number of spatial dims of the ONNX node's window. */
static inline int spatial_dims(const window2d *w)
{
    return w->one_d ? 1 : w->three_d ? 3 : 2;
}

/* Index of H in x (D comes before it in a 3-D node's). */
static inline int h_axis(const window2d *w)
{
    return 2 + w->three_d;
}

/* The bits of x's spatial dims (for onnx_dynamic_dims). */
static inline uint32_t spatial_mask(const window2d *w)
{
    return (0x3u << h_axis(w)) | (w->three_d ? 0x4u : 0);
}

/* An INTS attribute of one entry per spatial dim, each >= lo and below
 * 2^31 (def when absent); a 1-D node's entry goes to W, H gets 1; a 3-D
 * node's first goes to out[2] (D), which is def otherwise. */
tg_status onnx_window_ints(onnx_reader *r, const window2d *w, const char *name, int64_t def,
                           int64_t lo, int64_t out[3]);
/* Explicit pads of w from auto_pad and pads, for input xv. */
tg_status onnx_window_pads(onnx_reader *r, int32_t xv, window2d *w);
/* Rank 4 (2-D NCHW) or 3 (1-D NCL: *x becomes x unsqueezed to
 * [N, C, 1, L] and w->one_d is set), or 5 where allow_3d (w->three_d);
 * other ranks are unsupported.  Clears w first. */
tg_status onnx_window_input(onnx_reader *r, int32_t *x, window2d *w, int allow_3d);
/* Conv's and ConvTranspose's inputs: X (rank 4, or 3 for 1-D, 5 where
 * allow_3d; a 1-D node's X and W unsqueezed in in[]), W of the same rank,
 * B if given; kernel_shape checked against W's, strides, dilations into w. */
tg_status onnx_conv_window(onnx_reader *r, int32_t *in, int nin, window2d *w, int allow_3d);
/* Binds y as output 0, squeezed back to 1-D if the node is. */
tg_status onnx_window_bind(onnx_reader *r, const window2d *w, int32_t y);
/* y = transpose(x, perm of n entries). */
tg_status onnx_permute(onnx_reader *r, int32_t x, const int64_t *perm, int n, int32_t *y);
/* The taps array of a window along D: [od, kd] depths, the caller's to
 * fill and free (NULL after a failure, reported). */
int64_t *onnx_new_taps(onnx_reader *r, int64_t od, int64_t kd);
/* y = x gathered along axis ax at the depths taps ([od, kd], freed
 * here): x's dim ax becomes od, kd. */
tg_status onnx_gather_taps(onnx_reader *r, int32_t x, int ax, int64_t *taps, int64_t od,
                           int64_t kd, int32_t *y);

#endif
