/*
 * tracegraph.h - the umbrella header: everything a user of tracegraph
 * needs.  Installed headers live under tracegraph/<module>/.
 */
#ifndef TRACEGRAPH_H
#define TRACEGRAPH_H

#if defined(TG_IN_TREE)
#include "eager/eager.h"
#else
#include "tracegraph/eager/eager.h"
#endif

#endif
