/*
 * tgraph_decode.h - the section decoders of the .tgraph reader, shared by
 * tgraph_read.c (container, decompression) and tgraph_decode.c (content).
 *
 * A decoder gets one section's decompressed bytes and fills the graph
 * being built.  Every count is checked against the bytes that remain
 * before anything is allocated for it, and every index against what it
 * indexes, so the graph's arrays are only ever sized by real data.  On
 * error a decoder returns -1 with a message in the loader's err; the
 * partly built graph stays consistent enough for graph_free.
 */
#ifndef TG_FORMATS_TGRAPH_DECODE_H
#define TG_FORMATS_TGRAPH_DECODE_H

#include "bytes.h"
#include "tgraph_impl.h"

typedef struct format_loader {
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
    graph *g;
    const char **strs; /* interned strings, by index */
    uint32_t nstrs;
    int16_t *opcache;  /* per string: op found by that name, -1 unknown */
    uint64_t *data_off; /* per value: offset in constants, or UINT64_MAX */
    char *state_seen;  /* per value: listed as a state (states section) */
    const char *sec;   /* section being decoded */
    const char *item;  /* "value", "node"... or NULL */
    long index;        /* which one */
} format_loader;

/* Formats "name: section 'S' at byte pos: [item index: ]msg" (tg_errpos,
   graph/errors.h); returns -1. */
int format_load_fail(format_loader *L, size_t pos, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int format_dec_strings(format_loader *L, format_rd *r);
int format_dec_symbols(format_loader *L, format_rd *r);
int format_dec_provenance(format_loader *L, format_rd *r);
int format_dec_values(format_loader *L, format_rd *r);
int format_dec_nodes(format_loader *L, format_rd *r);
int format_dec_guards(format_loader *L, format_rd *r);
int format_dec_signature(format_loader *L, format_rd *r);
int format_dec_target(format_loader *L, format_rd *r);
int format_dec_states(format_loader *L, format_rd *r);
/*
 * Decodes the constants section from its stored (compressed) bytes
 * src[0..n), raw bytes declared, into the data of the values that have
 * an offset in L->data_off (tgraph_consts.c).
 */
int format_dec_constants(format_loader *L, const uint8_t *src, size_t n, uint64_t raw);

#endif
