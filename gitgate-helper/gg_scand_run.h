/*
 * The resident scanner's server side (gg_scand.c): what gitgate-cgi and
 * gitgate-scan give it to run per push.
 */

#ifndef GG_SCAND_RUN_H
#define GG_SCAND_RUN_H

#include "bottle_policy.h"
#include "bottle_scan.h"
#include "gg_scand.h"


/* one push in the child: the hook's exit status (argv[0] is the hook's
 * name, argv[1..] the client's arguments) */
typedef int (*gg_scand_run_pt)(int argc, char **argv, bottle_scan_db_t *db);

/*
 * Serves <dir>/sock until idle; root is GITGATE_DIR for the gate's hook
 * (every path checked to be the pushed repo's), NULL for gitgate-scan's.
 * data (the rule databases read once) is passed to run.  Returns the
 * program's exit status: 0 after the idle time, 1 when it cannot serve
 * (another scanner holds dir).
 */
int gg_scand_serve(const char *root, const char *dir, gg_scand_run_pt run,
    bottle_scan_db_t *db);

/*
 * Policies kept by the scanner (gg_scand_cache.c).  In a scanner's child,
 * gg_scand_policy(): the policy parsed from exactly these bytes (kind
 * "store": bottle_policy_parse(bytes, source); "file":
 * bottle_policy_load(source), whose bytes they are), borrowed, and 0.
 * Bytes it has not got are offered to the scanner for the next pushes,
 * and parsed and kept in the child too (a warm child's next pushes) while
 * its cache has room: 0; else -1, and the caller parses them itself.  -1
 * at once outside a scanner's child.
 * gg_scand_secrets(): a borrowed policy's compiled secrets for the bottle
 * it was asked for, or NULL (not borrowed).
 */
int gg_scand_policy(const char *kind, const char *source, const char *id,
    const char *bytes, size_t len, bottle_policy_t **policy);
int gg_scand_policy_file(const char *path, const char *id,
    bottle_policy_t **policy);
bottle_scan_secrets_t *gg_scand_secrets(const bottle_policy_t *policy);

/* the scanner's side: the offers' socket pair, its end to poll, a child's
 * set-up, an offer read and compiled */
int gg_scand_cache_init(void);
int gg_scand_cache_fd(void);
void gg_scand_cache_child(bottle_scan_db_t *db);
void gg_scand_cache_offer(bottle_scan_db_t *db);


#endif /* GG_SCAND_RUN_H */
