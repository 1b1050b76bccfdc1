/*
 * What a policy change takes away or widens, for the operator to read
 * before approving it (docs/bottlectl.md, "Proposals"; docs/supervise.md,
 * "The page"): computed from the bottle's stored object before and after
 * the change (bottle_decision_change()), so bottlectl show and the
 * operator page print the same lines.  No nginx, no hiredis.
 *
 * A warning is one line, naming the route's host or the repo:
 *   - a route that keeps its host but loses its credential injection
 *     ("auth"), or has it changed;
 *   - a route's methods widened (a new route: methods beyond GET, HEAD);
 *   - passthrough turned on (or a new passthrough route);
 *   - a route's path restrictions ("allow") dropped, preserve_auth turned
 *     on, DLP turned off;
 *   - a repo granted with write that had none.
 */

#ifndef BOTTLE_WARN_H
#define BOTTLE_WARN_H

#include <stddef.h>

#include <jansson.h>


/* warnings at most; one more line says how many were left out */
#define BOTTLE_WARN_MAX     32


/*
 * The warnings of the change from before to after (two bottle objects as
 * stored): a new array of strings, [] when none; NULL if out of memory.
 */
json_t *bottle_warn_change(const json_t *before, const json_t *after);

/*
 * The text bottlectl show prints and the operator page's API answers:
 * "<what> changes the bottle's policy:\n", one "warning: ...\n" per
 * warning, then the diff; or "<what> changes nothing\n".  malloc()ed,
 * NUL-terminated, NULL if out of memory.
 */
char *bottle_warn_render(const char *what, int changed,
    const json_t *warnings, const char *diff, size_t diff_len);


#endif /* BOTTLE_WARN_H */
