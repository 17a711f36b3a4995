/*
 * signature.c - a plan's signature as its callers see it: names, traced
 * types, the output types at other input shapes, which dims follow which
 * dynamic symbol, and the checks of the caller's replay_tensors that every
 * backend shares (inputs ordered by name or position, an output found and
 * its buffer accepted), whose messages list the names the plan has.
 */
#include <string.h>

#include "../graph/alloc.h"
#include "internal.h"
#include "../graph/graph_impl.h"

/* "x, mask" (or "none"): the plan's input (outputs 0) or output names,
 * cut with ", ..." where buf is too short. */
static const char *names_str(const replay_plan *p, int outputs, char *buf, size_t len)
{
    const graph *g = p->g;
    int n = outputs ? g->noutputs : g->ninputs;
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = outputs ? g->outputs[i].name : g->values[g->inputs[i]].name;
        char one[64];
        if (name)
            snprintf(one, sizeof one, "%s%s", i ? ", " : "", name);
        else
            snprintf(one, sizeof one, "%s#%d (no name)", i ? ", " : "", i);
        if (at + strlen(one) + 6 >= len) {
            snprintf(buf + at, len - at, ", ...");
            return buf;
        }
        at += (size_t)snprintf(buf + at, len - at, "%s", one);
    }
    if (!n)
        snprintf(buf, len, "none");
    return buf;
}

int replay_output_lookup(const replay_plan *p, const replay_tensor *o, int k, char *err,
                         size_t errlen)
{
    const graph *g = p->g;
    if (!o->name)
        return k < g->noutputs ? k : -1;
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, o->name) == 0)
            return i;
    char names[300];
    snprintf(err, errlen, "replay: the plan has no output named \"%s\" (outputs: %s)", o->name,
             names_str(p, 1, names, sizeof names));
    return -1;
}

tg_status replay_order_inputs(const replay_plan *p, const replay_tensor *inputs, int nin,
                              const replay_tensor **ordered, int need_data, char *err,
                              size_t errlen)
{
    const graph *g = p->g;
    if (nin != g->ninputs) {
        snprintf(err, errlen, "replay: the plan takes %d inputs, got %d", g->ninputs, nin);
        return TG_ERR_ARG;
    }
    if (nin && !inputs) {
        snprintf(err, errlen, "replay: %d inputs given, inputs is NULL", nin);
        return TG_ERR_NULL;
    }
    for (int i = 0; i < nin; i++)
        ordered[i] = NULL;
    for (int k = 0; k < nin; k++) {
        int i = k;
        if (inputs[k].name) {
            for (i = 0; i < nin; i++) {
                const char *n = g->values[g->inputs[i]].name;
                if (n && strcmp(n, inputs[k].name) == 0)
                    break;
            }
            if (i == nin) {
                char names[300];
                snprintf(err, errlen, "replay: the plan has no input named \"%s\" (inputs: %s)",
                         inputs[k].name, names_str(p, 0, names, sizeof names));
                return TG_ERR_ARG;
            }
        }
        const char *name = g->values[g->inputs[i]].name ? g->values[g->inputs[i]].name : "?";
        if (ordered[i]) {
            snprintf(err, errlen, "replay: input %d (\"%s\") is given twice", i, name);
            return TG_ERR_ARG;
        }
        /* before any size is computed from it: the caller's ndim and dims */
        char why[200];
        tg_status st = graph_type_check(&inputs[k].type, why, sizeof why);
        if (st != TG_OK) {
            if (g->values[g->inputs[i]].name)
                snprintf(err, errlen, "replay: input \"%s\": %s", name, why);
            else
                snprintf(err, errlen, "replay: input %d: %s", i, why);
            return st;
        }
        size_t bytes = graph_type_bytes(&inputs[k].type);
        if (need_data && inputs[k].size && inputs[k].size < bytes) {
            char s[160];
            snprintf(err, errlen, "replay: input %d (\"%s\") is %s%s (%zu bytes), its .size "
                     "says the buffer holds %zu", i, name,
                     graph_dtype_name(inputs[k].type.dtype),
                     graph_shape_str(&inputs[k].type, s, sizeof s), bytes, inputs[k].size);
            return TG_ERR_SHAPE;
        }
        if (need_data && !inputs[k].input && !inputs[k].buffer &&
            graph_type_numel(&inputs[k].type) > 0) {
            snprintf(err, errlen, "replay: input %d (\"%s\") has no data", i, name);
            return TG_ERR_NULL;
        }
        if (need_data && inputs[k].buffer && !p->backend->device_buffers) {
            snprintf(err, errlen, "replay: input %d is a device buffer, but the plan runs on "
                     "the CPU (buffer is for OpenCL plans)", k);
            return TG_ERR_ARG;
        }
        ordered[i] = &inputs[k];
    }
    return TG_OK;
}

tg_status replay_output_accept(const replay_plan *p, int i, const graph_type *t,
                               replay_tensor *o, char *err, size_t errlen)
{
    const char *name = p->g->outputs[i].name;
    size_t bytes = graph_type_bytes(t);
    char a[160], c[160];
    if (o->size) {
        /* a buffer of o->size bytes takes whatever this run makes */
        if (bytes > o->size) {
            snprintf(err, errlen, "replay: output \"%s\" is %s%s (%zu bytes), the buffer "
                     "given holds %zu (.size)", name, graph_dtype_name(t->dtype),
                     graph_shape_str(t, a, sizeof a), bytes, o->size);
            return TG_ERR_SHAPE;
        }
        o->type = *t;
        return TG_OK;
    }
    char why[200];
    tg_status st = graph_type_check(&o->type, why, sizeof why);
    if (st != TG_OK) {
        snprintf(err, errlen, "replay: the buffer given for output \"%s\": %s", name, why);
        return st;
    }
    int ok = o->type.dtype == t->dtype && o->type.ndim == t->ndim;
    for (int d = 0; ok && d < t->ndim; d++)
        ok = o->type.dim[d] == t->dim[d];
    if (ok)
        return TG_OK;
    /* a type left zero: the caller meant "whatever the run makes" */
    int zero = o->type.ndim == 0 && o->type.dtype == (graph_dtype)0;
    snprintf(err, errlen, "replay: output \"%s\" is %s%s, the buffer given is %s%s%s", name,
             graph_dtype_name(t->dtype), graph_shape_str(t, a, sizeof a),
             graph_dtype_name(o->type.dtype), graph_shape_str(&o->type, c, sizeof c),
             zero ? " (a buffer for any shape: set .size to the bytes it holds; "
                    "replay_output_types gives the shapes for given inputs)" : "");
    return o->type.dtype != t->dtype ? TG_ERR_DTYPE : TG_ERR_SHAPE;
}

tg_status replay_output_types(const replay_plan *p, const replay_tensor *inputs, int nin,
                              graph_type *out, int nout, char *err, size_t errlen)
{
    char tmp[1];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof tmp;
    }
    if (!p || (nout && !out)) {
        snprintf(err, errlen, "replay_output_types: NULL %s", p ? "out" : "plan");
        return TG_ERR_NULL;
    }
    const graph *g = p->g;
    if (nout < 0 || nout > g->noutputs) {
        snprintf(err, errlen, "replay_output_types: the plan makes %d outputs, asked for %d",
                 g->noutputs, nout);
        return TG_ERR_ARG;
    }
    const replay_tensor **in = tg_malloc(sizeof *in * ((size_t)g->ninputs + 1));
    graph_type *types = tg_malloc(sizeof *types * ((size_t)g->nvalues + 1));
    tg_status st = TG_ERR_NOMEM;
    if (!in || !types)
        snprintf(err, errlen, "replay_output_types: out of memory");
    else if ((st = replay_order_inputs(p, inputs, nin, in, 0, err, errlen)) == TG_OK &&
             (st = replay_check_inputs(p, in, err, errlen)) == TG_OK &&
             (st = replay_infer_types(p, in, types, err, errlen)) == TG_OK)
        for (int i = 0; i < nout; i++)
            out[i] = types[g->outputs[i].value];
    tg_free(in);
    tg_free(types);
    return st;
}

/* The symbol's name if dim d of value id is dynamic and one symbol, else NULL. */
static const char *dim_symbol(const replay_plan *p, int32_t id, int d)
{
    const graph_value *v = &p->g->values[id];
    if (d < 0 || d >= v->type.ndim || !(v->dyn >> d & 1) || v->sym[d] < 0 ||
        v->sym[d] >= p->g->nsyms)
        return NULL;
    return p->g->syms[v->sym[d]].name;
}

const char *replay_input_dim_symbol(const replay_plan *p, int i, int dim)
{
    return p && i >= 0 && i < p->g->ninputs ? dim_symbol(p, p->g->inputs[i], dim) : NULL;
}

const char *replay_output_dim_symbol(const replay_plan *p, int i, int dim)
{
    return p && i >= 0 && i < p->g->noutputs ? dim_symbol(p, p->g->outputs[i].value, dim)
                                             : NULL;
}

int replay_num_inputs(const replay_plan *p) { return p ? p->g->ninputs : 0; }
int replay_num_outputs(const replay_plan *p) { return p ? p->g->noutputs : 0; }
int replay_num_steps(const replay_plan *p) { return p ? p->nitems : 0; }

const char *replay_input_name(const replay_plan *p, int i)
{
    return p && i >= 0 && i < p->g->ninputs ? p->g->values[p->g->inputs[i]].name : NULL;
}

const char *replay_output_name(const replay_plan *p, int i)
{
    return p && i >= 0 && i < p->g->noutputs ? p->g->outputs[i].name : NULL;
}

const graph_type *replay_input_type(const replay_plan *p, int i)
{
    return p && i >= 0 && i < p->g->ninputs ? &p->g->values[p->g->inputs[i]].type : NULL;
}

const graph_type *replay_output_type(const replay_plan *p, int i)
{
    return p && i >= 0 && i < p->g->noutputs ? &p->g->values[p->g->outputs[i].value].type : NULL;
}
