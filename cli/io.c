/*
 * io.c - graphs and tensors for the `tracegraph` commands: loading and
 * saving a .tgraph or an ONNX model (by the file's extension), mapping -i/-o specs to the graph's inputs and outputs, loading
 * .npy inputs or making seeded random ones, and printing a tensor briefly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

int cli_is_onnx(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".onnx") == 0;
}

int cli_is_idx(const char *path)
{
    size_t n = strlen(path);
    return (n >= 4 && strcasecmp(path + n - 4, ".idx") == 0) ||
           (n >= 3 && strcasecmp(path + n - 3, ".gz") == 0) ||
           (n >= 6 && strcasecmp(path + n - 6, "-ubyte") == 0);
}

/* An ONNX import's warning (format_onnx_load_opts.warn) on stderr. */
static void load_warning(void *cmd, const char *msg)
{
    cli_error(cmd, "warning: %s", msg);
}

graph *cli_load_graph_onnx(const char *cmd, const char *path,
                           const format_onnx_load_opts *opts)
{
    char err[1024];
    format_onnx_load_opts o = {0, 1, NULL, NULL};
    if (opts)
        o = *opts;
    o.warn = load_warning;
    o.warn_ctx = (void *)cmd;
    graph *g = cli_is_onnx(path) ? format_onnx_load(path, &o, err, sizeof err)
                                 : format_load(path, err, sizeof err);
    if (!g)
        cli_error(cmd, "%s", err);
    return g;
}

graph *cli_load_graph(const char *cmd, const char *path)
{
    return cli_load_graph_onnx(cmd, path, NULL);
}

int cli_save_graph(const char *cmd, const graph *g, const char *path, int drop_guards)
{
    char err[1024];
    format_onnx_save_opts o = {drop_guards};
    tg_status st = cli_is_onnx(path) ? format_onnx_save(g, path, &o, err, sizeof err)
                                     : format_save(g, path, NULL, err, sizeof err);
    if (st == TG_OK)
        return 0;
    cli_error(cmd, "%s", err);
    return -1;
}

const char *cli_type_str(const graph_type *t, char *buf, size_t len)
{
    char shape[GRAPH_MAX_DIMS * 22 + 4];
    snprintf(buf, len, "%s%s", graph_dtype_name(t->dtype),
             graph_shape_str(t, shape, sizeof shape));
    return buf;
}

const char *cli_value_type(const graph *g, int32_t v, char *buf, size_t len)
{
    const graph_type *t = graph_value_type(g, v);
    size_t k = (size_t)snprintf(buf, len, "%s[", graph_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim && k < len; d++) {
        int sym = graph_value_dim_symbol(g, v, d);
        if (sym >= 0)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", d ? "," : "",
                                  graph_symbol_at(g, sym, NULL));
        else
            k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? "," : "",
                                  (long long)t->dim[d]);
    }
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* s escaped (cli_esc) into buf, for graph_map_strings: 1 when it changed. */
static int escape_string(void *ctx, const char *s, char *buf, size_t len)
{
    (void)ctx;
    cli_esc(s, buf, len);
    return strcmp(buf, s) != 0;
}

int cli_escape_names(const char *cmd, graph *g)
{
    if (graph_map_strings(g, escape_string, NULL) != TG_OK) {
        cli_error(cmd, "%s", graph_error(g));
        return -1;
    }
    return 0;
}

/* "x, y" (names of a signature, escaped), for messages; "..." when cut. */
static const char *list_names(const char *const *names, int n, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "",
                              names[i] ? cli_escs(names[i]) : "(unnamed)");
    if (k >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
    if (n == 0)
        snprintf(buf, len, "none");
    return buf;
}

/*
 * Maps specs to slots (inputs or outputs): "NAME=PATH" goes to the slot
 * called NAME; a plain "PATH" to the first slot no spec names, in order.
 * A spec whose part before '=' has no '/' must name a slot, unless the
 * whole spec is an existing file (check_exists: inputs).  0, or -1 after
 * a message.
 */
static int resolve_specs(const char *cmd, const char *what, const char *const *names, int n,
                         char *const *specs, int nspecs, int check_exists, int *slot,
                         const char **path)
{
    char list[512];
    int rc = -1, *used = cli_calloc((size_t)n + 1, sizeof *used);
    if (!used) {
        cli_error(cmd, "out of memory for %d %ss", n, what);
        return -1;
    }
    for (int k = 0; k < nspecs; k++) {
        const char *s = specs[k], *eq = strchr(s, '=');
        slot[k] = -1;
        path[k] = s;
        if (!eq || eq == s || memchr(s, '/', (size_t)(eq - s)))
            continue;
        for (int i = 0; i < n && slot[k] < 0; i++)
            if (names[i] && strlen(names[i]) == (size_t)(eq - s) &&
                memcmp(names[i], s, (size_t)(eq - s)) == 0)
                slot[k] = i;
        if (slot[k] < 0 && check_exists && access(s, F_OK) == 0)
            continue;
        if (slot[k] < 0) {
            cli_error(cmd, "the graph has no %s named '%.*s' (its %ss: %s)", what,
                      (int)(eq - s), s, what, list_names(names, n, list, sizeof list));
            goto done;
        }
        if (used[slot[k]]++) {
            cli_error(cmd, "%s '%s' is given twice", what, cli_escs(names[slot[k]]));
            goto done;
        }
        path[k] = eq + 1;
    }
    for (int k = 0, next = 0; k < nspecs; k++) {
        if (slot[k] >= 0)
            continue;
        while (next < n && used[next])
            next++;
        if (next == n) {
            cli_error(cmd, "too many %ss: the graph has %d (%s)", what, n,
                      list_names(names, n, list, sizeof list));
            goto done;
        }
        used[next] = 1;
        slot[k] = next;
    }
    rc = 0;
done:
    cli_free(used);
    return rc;
}

/* in->t for the graph's n inputs, zeroed; 0, or -1 after a message. */
static int inputs_alloc(const char *cmd, const graph *g, cli_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->t = cli_calloc((size_t)graph_input_count(g) + 1, sizeof *in->t);
    if (!in->t) {
        cli_error(cmd, "out of memory for %d inputs", graph_input_count(g));
        return -1;
    }
    in->n = graph_input_count(g);
    for (int i = 0; i < graph_input_count(g); i++)
        in->t[i].name = graph_value_name(g, graph_input_at(g, i));
    return 0;
}

int cli_load_inputs(const char *cmd, const graph *g, char *const *specs, int nspecs,
                    cli_inputs *in)
{
    if (inputs_alloc(cmd, g, in))
        return -1;
    const char **names = cli_calloc((size_t)graph_input_count(g) + 1, sizeof *names);
    const char **path = cli_calloc((size_t)nspecs + 1, sizeof *path);
    int *slot = cli_calloc((size_t)nspecs + 1, sizeof *slot), rc = -1;
    if (!names || !path || !slot) {
        cli_error(cmd, "out of memory for %d inputs", graph_input_count(g));
        goto done;
    }
    for (int i = 0; i < graph_input_count(g); i++)
        names[i] = in->t[i].name;
    if (resolve_specs(cmd, "input", names, graph_input_count(g), specs, nspecs, 1, slot, path) < 0)
        goto done;
    for (int k = 0; k < nspecs; k++) {
        char err[1024];
        replay_tensor *t = &in->t[slot[k]];
        if (format_npy_load(path[k], &t->type, &t->data, err, sizeof err) != TG_OK) {
            cli_error(cmd, "%s", err);
            goto done;
        }
    }
    for (int i = 0; i < graph_input_count(g); i++) {
        if (in->t[i].data)
            continue;
        char ty[200];
        const char *name = names[i] ? cli_escs(names[i]) : "?";
        cli_error(cmd, "missing input '%s' (%s): give it with -i %s=FILE.npy", name,
                  cli_value_type(g, graph_input_at(g, i), ty, sizeof ty), name);
        goto done;
    }
    rc = 0;
done:
    if (rc)
        cli_inputs_free(in);
    cli_free(names);
    cli_free(path);
    cli_free(slot);
    return rc;
}

/* SplitMix64: a counter-based stream, element i from seed + i. */
static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int cli_random_inputs(const char *cmd, const graph *g, uint64_t seed, cli_inputs *in)
{
    if (inputs_alloc(cmd, g, in))
        return -1;
    for (int i = 0; i < graph_input_count(g); i++) {
        int32_t v = graph_input_at(g, i);
        const graph_type *vt = graph_value_type(g, v);
        replay_tensor *t = &in->t[i];
        char err[200];
        if (graph_type_check(vt, err, sizeof err) != TG_OK) {
            cli_error(cmd, "input '%s': %s", cli_escs(graph_value_name(g, v)), err);
            cli_inputs_free(in);
            return -1;
        }
        int64_t n = graph_type_numel(vt);
        size_t bytes = graph_type_bytes(vt);
        t->type = *vt;
        t->data = cli_aligned_alloc(64, (bytes + 64) & ~(size_t)63);
        if (!t->data) {
            cli_error(cmd, "out of memory for a %zu-byte input", bytes);
            cli_inputs_free(in);
            return -1;
        }
        uint64_t s = seed * 0x100000001B3ull + (uint64_t)i;
        for (int64_t k = 0; k < n; k++) {
            uint64_t r = mix(s + (uint64_t)k * 0x9E3779B97F4A7C15ull);
            switch (vt->dtype) {
            case GRAPH_F32: ((float *)t->data)[k] = (float)(r >> 40) / 8388608.0f - 1; break;
            case GRAPH_I64: ((int64_t *)t->data)[k] = (int64_t)(r >> 62); break;
            case GRAPH_I32: ((int32_t *)t->data)[k] = (int32_t)(r >> 62); break;
            default: ((uint8_t *)t->data)[k] = (uint8_t)(r >> 63); break;
            }
        }
    }
    return 0;
}

void cli_inputs_free(cli_inputs *in)
{
    for (int i = 0; in->t && i < in->n; i++)
        cli_free(in->t[i].data);
    cli_free(in->t);
    in->t = NULL;
    in->n = 0;
}

int cli_output_specs(const char *cmd, const graph *g, char *const *specs, int nspecs, int *slot,
                     const char **path)
{
    const char **names = cli_calloc((size_t)graph_output_count(g) + 1, sizeof *names);
    if (!names) {
        cli_error(cmd, "out of memory for %d outputs", graph_output_count(g));
        return -1;
    }
    for (int i = 0; i < graph_output_count(g); i++)
        graph_output_at(g, i, &names[i]);
    int rc = resolve_specs(cmd, "output", names, graph_output_count(g), specs, nspecs, 0, slot,
                           path);
    cli_free(names);
    return rc;
}

double cli_element(const graph_type *t, const void *data, int64_t i)
{
    switch (t->dtype) {
    case GRAPH_F32: return ((const float *)data)[i];
    case GRAPH_I64: return (double)((const int64_t *)data)[i];
    case GRAPH_I32: return ((const int32_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

void cli_print_tensor(FILE *f, const char *name, const graph_type *t, const void *data)
{
    char ty[200];
    int64_t n = graph_type_numel(t);
    fprintf(f, "%s: %s = [", name ? cli_escs(name) : "?", cli_type_str(t, ty, sizeof ty));
    for (int64_t i = 0; i < n && i < 6; i++)
        fprintf(f, "%s%.6g", i ? ", " : "", cli_element(t, data, i));
    fprintf(f, "%s]", n > 6 ? ", ..." : "");
    if (n > 1) {
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        int64_t nan = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = cli_element(t, data, i);
            if (isnan(x)) {
                nan++;
                continue;
            }
            lo = fmin(lo, x);
            hi = fmax(hi, x);
            sum += x;
        }
        if (nan < n)
            fprintf(f, "  min %.6g  max %.6g  mean %.6g", lo, hi, sum / (double)(n - nan));
        if (nan)
            fprintf(f, "  (%lld NaN)", (long long)nan);
    }
    fputc('\n', f);
}
