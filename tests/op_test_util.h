/*
 * op_test_util.h - what the tests of one op's graphs share: parsing a
 * graph from text IR, and running it in the reference interpreter, each
 * a failed check (with the reason) when it does not work.
 */
#ifndef TG_TESTS_OP_TEST_UTIL_H
#define TG_TESTS_OP_TEST_UTIL_H

#include <string.h>

#include "check.h"
#include "eager/eager.h"
#include "eager/interp.h"
#include "graph/graph.h"
#include "graph/graph_impl.h"
#include "graph/text.h"

/* The graph of text IR; NULL after a failed check. */
static inline graph *parse(const char *text)
{
    char err[512] = "";
    graph *g = graph_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(g != NULL, "IR parses: %s", err);
    return g;
}

/* Runs g on its inputs in the interpreter; outputs into out (noutputs).
 * Nonzero when it ran. */
static inline int interp(const graph *g, eager_tensor **in, eager_tensor **out)
{
    tg_status st = eager_interpret(g, in, g->ninputs, out, g->noutputs, NULL);
    CHECK_MSG(st == TG_OK, "%s runs: %s", g->name, eager_error());
    eager_clear_error();
    return st == TG_OK;
}

#endif
