/*
 * STUB, for branch h-explain only: drop at merge in favour of the real
 * bottlectl.h.  It declares only what ctl_explain.c uses of it.
 */

#ifndef BOTTLECTL_H
#define BOTTLECTL_H

#include "bottle_policy.h"


typedef struct bottlectl_s  bottlectl_t;

int bottlectl_fetch_bottle(bottlectl_t *ctl, const char *id,
    bottle_policy_t **out);

int bottlectl_explain(bottlectl_t *ctl, int argc, char **argv);


#endif /* BOTTLECTL_H */
