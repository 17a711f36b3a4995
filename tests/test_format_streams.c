/*
 * test_format_streams.c - the .tgraph and ONNX loaders on files that are
 * not regular files (issue 29): a pipe that sends a whole file loads; one
 * that sends a few bytes that are not the format's and then stalls is
 * refused at once (not waited on); /dev/zero is refused by its first
 * bytes (not read until memory runs out); a pipe is read only as far as
 * its header declares; a directory is refused.  Each with its message.
 * The .npy loader's streams are in test_npy.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "formats/onnx.h"
#include "formats/tgraph.h"
#include "pipe_util.h"
#include "graph/graph_impl.h"

static char err[1024];

static graph *small_graph(void)
{
    graph *g = graph_new("small");
    graph_type t = {GRAPH_F32, 2, {2, 3}};
    int32_t x = graph_add_value(g, GRAPH_VALUE_INPUT, &t, "x"), r;
    graph_add_input(g, x);
    graph_add_node(g, GRAPH_OP_relu, &x, 1, NULL, &r, 1);
    graph_add_output(g, r, "y");
    return g;
}

/* format_load (onnx 0) or format_onnx_load (1) of a pipe sending buf[0..n). */
static graph *load_pipe(int onnx, const void *buf, size_t n, unsigned hold)
{
    test_pipe p;
    err[0] = '\0';
    if (test_pipe_open(&p, buf, n, hold) != 0)
        return NULL;
    graph *g = onnx ? format_onnx_load(p.path, NULL, err, sizeof err)
                    : format_load(p.path, err, sizeof err);
    test_pipe_close(&p);
    return g;
}

static void test_tgraph(void)
{
    graph *g = small_graph();
    void *file;
    size_t len;
    CHECK(format_save_mem(g, NULL, &file, &len, err, sizeof err) == TG_OK);
    graph_free(g);
    /* a whole file through a pipe */
    g = load_pipe(0, file, len, 0);
    CHECK_MSG(g && g->nnodes == 1, "%s", err);
    graph_free(g);
    /* 8 bytes that are not the magic, then a stall: refused at once */
    time_t t0 = time(NULL);
    g = load_pipe(0, "PK\x03\x04\x14\x00\x00\x00", 8, 30);
    CHECK_MSG(!g && strstr(err, "/dev/fd/") && strstr(err, ": not a .tgraph file (bad magic)") &&
                  time(NULL) - t0 < 10, "%s", err);
    /* the header, then fewer bytes than it declares */
    g = load_pipe(0, file, len - 5, 0);
    char want[128];
    snprintf(want, sizeof want, ": the header says %zu bytes, the file has %zu (truncated or "
             "extended)", len, len - 5);
    CHECK_MSG(!g && strstr(err, want), "%s", err);
    /* more than it declares, and a stall: read up to one byte past the
     * declared end, no further (was: waited for the end) */
    uint8_t *longer = malloc(len + 100);
    memcpy(longer, file, len);
    memset(longer + len, 0, 100);
    t0 = time(NULL);
    g = load_pipe(0, longer, len + 100, 30);
    snprintf(want, sizeof want, ": the header says %zu bytes, the file has %zu", len, len + 1);
    CHECK_MSG(!g && strstr(err, want) && time(NULL) - t0 < 10, "%s", err);
    /* the info peek reads the header and table only: a stall after them is no wait */
    test_pipe p;
    format_info info;
    size_t head = 32 + 40 * (size_t)((uint8_t *)file)[12] + 8; /* header, table, checksum */
    CHECK(test_pipe_open(&p, file, head, 30) == 0);
    t0 = time(NULL);
    tg_status st = format_info_file(p.path, &info, err, sizeof err);
    test_pipe_close(&p);
    CHECK_MSG(st == TG_OK && info.file_size == len && info.nsections > 0 &&
                  time(NULL) - t0 < 10, "%s", err);
    /* format_read_file (public): the bytes of a pipe, read once, for
     * format_info_mem and format_load_mem; free()d by the caller */
    CHECK(test_pipe_open(&p, file, len, 0) == 0);
    void *buf = NULL;
    size_t got = 0;
    st = format_read_file(p.path, &buf, &got, err, sizeof err);
    test_pipe_close(&p);
    CHECK_MSG(st == TG_OK && got == len && buf && !memcmp(buf, file, len), "%s", err);
    CHECK(buf && format_info_mem(buf, got, "pipe", &info, err, sizeof err) == TG_OK &&
          info.file_size == len);
    g = buf ? format_load_mem(buf, got, "pipe", err, sizeof err) : NULL;
    CHECK_MSG(g && g->nnodes == 1, "%s", err);
    graph_free(g);
    free(buf);
    buf = NULL;
    CHECK(format_read_file("/dev/zero", &buf, &got, err, sizeof err) == TG_ERR_FORMAT && !buf);
    CHECK_MSG(strcmp(err, "/dev/zero: not a .tgraph file (bad magic)") == 0, "%s", err);
    free(longer);
    free(file);
    /* devices and directories */
    CHECK(!format_load("/dev/zero", err, sizeof err));
    CHECK_MSG(strcmp(err, "/dev/zero: not a .tgraph file (bad magic)") == 0, "%s", err);
    CHECK(format_info_file("/dev/zero", &info, err, sizeof err) == TG_ERR_FORMAT);
    CHECK_MSG(strcmp(err, "/dev/zero: not a .tgraph file (bad magic)") == 0, "%s", err);
    CHECK(!format_load("/dev/null", err, sizeof err));
    CHECK_MSG(strcmp(err, "/dev/null: 0 bytes, too short for a .tgraph file") == 0, "%s", err);
    CHECK(!format_load("/tmp", err, sizeof err));
    CHECK_MSG(strcmp(err, "/tmp: is a directory") == 0, "%s", err);
    CHECK(format_info_file("/tmp", &info, err, sizeof err) == TG_ERR_IO);
    CHECK_MSG(strcmp(err, "/tmp: is a directory") == 0, "%s", err);
}

static void test_onnx(void)
{
    graph *g = small_graph();
    void *file;
    size_t len;
    CHECK(format_onnx_save_mem(g, NULL, &file, &len, err, sizeof err) == TG_OK);
    graph_free(g);
    g = load_pipe(1, file, len, 0);
    CHECK_MSG(g && g->nnodes == 1, "%s", err);
    graph_free(g);
    free(file);
    /* zeros never start a protobuf field: refused by the first byte */
    time_t t0 = time(NULL);
    g = load_pipe(1, "\0\0\0\0\0\0\0\0", 8, 30);
    CHECK_MSG(!g && strstr(err, ": at byte 0: not an ONNX model (0x00 does not start a "
              "protobuf field)") && time(NULL) - t0 < 10, "%s", err);
    CHECK(!format_onnx_load("/dev/zero", NULL, err, sizeof err));
    CHECK_MSG(strcmp(err, "/dev/zero: at byte 0: not an ONNX model (0x00 does not start a "
                     "protobuf field)") == 0, "%s", err);
    /* wire type 7 does not exist */
    g = load_pipe(1, "\x0f\x01", 2, 30);
    CHECK_MSG(!g && strstr(err, "at byte 0: not an ONNX model (0x0f"), "%s", err);
    CHECK(!format_onnx_load("/tmp", NULL, err, sizeof err));
    CHECK_MSG(strcmp(err, "/tmp: is a directory") == 0, "%s", err);
}

int main(void)
{
    test_tgraph();
    test_onnx();
    return check_done();
}
