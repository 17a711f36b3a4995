/*
 * dtype.h - element types, shapes and the small integer lists used for
 * shapes and op attributes.
 */
#ifndef TG_GRAPH_DTYPE_H
#define TG_GRAPH_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dims a tensor may have. */
#define GRAPH_MAX_DIMS 8
/* Most entries of a graph_ints list (pads need 2 per dim). */
#define GRAPH_MAX_INTS 16

/* X(name, C type, size in bytes) */
#define GRAPH_DTYPE_LIST(X)                                                \
    X(F32, f32, float, 4)                                                  \
    X(I64, i64, int64_t, 8)                                                \
    X(I32, i32, int32_t, 4)                                                \
    X(BOOL, bool, uint8_t, 1)

typedef enum graph_dtype {
#define GRAPH_DTYPE_ENUM_(up, low, ctype, size) GRAPH_##up,
    GRAPH_DTYPE_LIST(GRAPH_DTYPE_ENUM_)
#undef GRAPH_DTYPE_ENUM_
    GRAPH_DTYPE_COUNT
} graph_dtype;

/* Bit masks of dtypes, as the op registry states what an op accepts. */
#define GRAPH_DT_BIT(dt) (1u << (dt))
#define GRAPH_DT_F32 GRAPH_DT_BIT(GRAPH_F32)
#define GRAPH_DT_INT (GRAPH_DT_BIT(GRAPH_I64) | GRAPH_DT_BIT(GRAPH_I32))
#define GRAPH_DT_NUM (GRAPH_DT_F32 | GRAPH_DT_INT)
#define GRAPH_DT_ALL (GRAPH_DT_NUM | GRAPH_DT_BIT(GRAPH_BOOL))

/* "f32", "i64", ...; "?" for an invalid value. */
TG_API const char *graph_dtype_name(graph_dtype dt);
/* Bytes per element; 0 for an invalid value. */
static inline size_t graph_dtype_size(graph_dtype dt)
{
    return dt == GRAPH_F32 || dt == GRAPH_I32 ? 4
           : dt == GRAPH_I64                  ? 8
           : dt == GRAPH_BOOL                 ? 1
                                              : 0;
}
/* Parses "f32" etc.; returns 0 and sets *out, or -1 for an unknown name
 * (or NULL name or out). */
TG_API int graph_dtype_parse(const char *name, size_t len, graph_dtype *out);

/*
 * A short list of integers, passed by value: shapes, axes, strides, pads.
 * Build one with TG_INTS(1, 2, 3) or TG_NOINTS for an empty list.
 */
typedef struct graph_ints {
    int32_t n;
    int64_t v[GRAPH_MAX_INTS];
} graph_ints;

#ifndef __cplusplus
#define TG_INTS(...)                                                       \
    ((graph_ints){(int32_t)(sizeof((int64_t[]){__VA_ARGS__}) /             \
                            sizeof(int64_t)),                              \
                  {__VA_ARGS__}})
#define TG_NOINTS ((graph_ints){0, {0}})
#endif /* C++: the same macros through tg_ints_of, at the end of this file */
#define TG_SHAPE TG_INTS

/* Longest string attribute, with its terminating NUL (a fused node's
 * micro-program: FUSED_MAX_STMTS statements of up to ~30 bytes). */
#define GRAPH_MAX_STR 2048

/*
 * A string attribute, held inline so attribute structs stay plain bytes
 * (copied with memcpy, compared with memcmp).  Always NUL-terminated; the
 * bytes after the NUL are zero.  Build one with TG_STR("...").
 */
typedef struct graph_str {
    char s[GRAPH_MAX_STR];
} graph_str;

#ifndef __cplusplus
#define TG_STR(literal) ((graph_str){literal})
#else
#define TG_STR(literal) (graph_str{literal})
#endif

/* The static type of a tensor: dtype and shape. */
typedef struct graph_type {
    graph_dtype dtype;
    int32_t ndim;
    int64_t dim[GRAPH_MAX_DIMS];
} graph_type;

/*
 * The size cap.  A shape is valid when it has 0..GRAPH_MAX_DIMS dims, each
 * >= 0, and the product of its dims with every 0 counted as 1 is at most
 * GRAPH_MAX_NUMEL (2^40 elements, 8 TiB of i64).  Counting a 0 dim as 1
 * bounds every dim and every partial product of dims even when the tensor
 * is empty, so once a type has passed graph_type_check no product of its
 * dims, nor numel times an element size, can overflow int64_t or size_t.
 * Every layer that turns a shape into a size (shape inference, the eager
 * allocator, the loaders, the .npy reader, replay's inputs and variants)
 * checks it this way before computing the size.
 */
#define GRAPH_MAX_NUMEL (INT64_C(1) << 40)

/*
 * TG_OK when t is a valid type (dtype, ndim and dims as above); otherwise
 * TG_ERR_DTYPE or TG_ERR_SHAPE with the reason ("dim 1 is -3", "[2^31,
 * 2^31] has more than 2^40 elements") in err (may be NULL); t NULL:
 * TG_ERR_NULL.
 */
TG_API tg_status graph_type_check(const graph_type *t, char *err, size_t errlen);

/* Number of elements of a type (1 for a 0-d scalar); the type must have
 * passed graph_type_check (or be built by code that did). */
static inline int64_t graph_type_numel(const graph_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dim[i];
    return n;
}
/* Bytes of a checked type's data. */
static inline size_t graph_type_bytes(const graph_type *t)
{
    return (size_t)graph_type_numel(t) * graph_dtype_size(t->dtype);
}
/* 1 when two types have the same dtype and shape (dims past ndim are not
 * compared). */
static inline int graph_type_eq(const graph_type *a, const graph_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
    return 1;
}
/*
 * a * b for sizes computed from checked shapes (scratch buffers, products
 * of dims of two tensors): 0 and *out = a * b when both are >= 0 and the
 * product is at most GRAPH_MAX_NUMEL, -1 otherwise.
 */
static inline int graph_size_mul(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > GRAPH_MAX_NUMEL)
        return -1;
    *out = r;
    return 0;
}
/* Writes "[2,3,4]" into buf (always NUL-terminated); returns buf.  A NULL
 * t or an ndim out of range writes "[?]" / "[? N dims]"; buf NULL: NULL. */
TG_API char *graph_shape_str(const graph_type *t, char *buf, size_t len);
/* Writes "[1,2]" for an int list; returns buf (NULL or bad n as above). */
TG_API char *graph_ints_str(const graph_ints *v, char *buf, size_t len);

#ifdef __cplusplus
}

/*
 * C++ has no compound literals (g++ -Wpedantic: "ISO C++ forbids
 * compound-literals"; MSVC has none): TG_INTS / TG_SHAPE / TG_NOINTS build
 * the same graph_ints through a function template, checked at compile time
 * for more than GRAPH_MAX_INTS values, as C's initializer is.
 */
template <typename... T> static inline graph_ints tg_ints_of(T... v)
{
    static_assert(sizeof...(T) <= GRAPH_MAX_INTS, "TG_INTS: more than GRAPH_MAX_INTS values");
    const int64_t a[sizeof...(T) + 1] = {static_cast<int64_t>(v)..., 0};
    graph_ints r = {static_cast<int32_t>(sizeof...(T)), {0}};
    for (size_t i = 0; i < sizeof...(T); i++)
        r.v[i] = a[i];
    return r;
}
#define TG_INTS(...) tg_ints_of(__VA_ARGS__)
#define TG_NOINTS tg_ints_of()
#endif

#endif
