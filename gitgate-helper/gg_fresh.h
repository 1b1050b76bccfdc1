/*
 * How fresh the gate's copy of a repo is (docs/gitgate.md, "Fetch and
 * clone").  <repo>.git/gitgate-refreshed is a stamp: its mtime is when
 * the copy was last known to match the forge.  A fetch inside the
 * freshness window (GITGATE_REFRESH seconds) is served without asking
 * the forge; after it, gg_fresh_same() asks for the forge's refs alone
 * and the copy is fetched only when they differ.
 */

#ifndef GG_FRESH_H
#define GG_FRESH_H

#include <stddef.h>

#include "gg_gate.h"


#define GG_FRESH_REFS_MAX   (1024 * 1024)   /* of ref lines compared */


/*
 * The forge's branches and tags (an ls-refs with the forge token, or git
 * ls-remote where the forge does not speak protocol v2)
 * against the copy's (git for-each-ref): 1 if they are the same, 0 if
 * not (or too many to compare: then fetch), -1 and err if the forge
 * cannot be asked.
 */
int gg_fresh_same(gg_ctx_t *ctx, char *err, size_t errlen);

/*
 * The stamp aged past any window (not removed: the copy is not a new
 * one), so the next fetch asks the forge.  dir: the copy (the hook runs
 * in it: ".").
 */
void gg_fresh_expire(const char *dir);


#endif /* GG_FRESH_H */
