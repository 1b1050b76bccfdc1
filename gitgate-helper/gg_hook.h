/*
 * What the two pre-receive hooks share (gitgate-scan, and gitgate-cgi
 * run as the gate's hook): reading the ref updates, telling the pusher
 * what the scan found.
 */

#ifndef GG_HOOK_H
#define GG_HOOK_H

#include <stddef.h>

#include "gg_scan.h"
#include "gg_scand.h"           /* GG_MAX_INPUT: what stdin may hold */


/* the whole of stdin, malloc()ed; 0, or -1 and err */
int gg_read_input(char **out, size_t *outlen, char *err, size_t errlen);

/* the findings, on stderr (git shows them as "remote: " lines) */
void gg_report_print(const gg_report_t *r);

/* a marked finding's first lines: what holds it back, where, and how
 * many more places hold the same value */
void gg_report_marked(const gg_finding_t *f, const char *what);

/*
 * The directory the compiled rule databases are kept in between hook
 * runs (bottle_scan_db_create_cached()): dir, made 0700 if missing; NULL
 * when dir is NULL or is not a directory of this user that no one else
 * may write (the scan then compiles them, as without one).
 */
const char *gg_scan_cache(const char *dir);


#endif /* GG_HOOK_H */
