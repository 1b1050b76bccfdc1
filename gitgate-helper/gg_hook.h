/*
 * What the two pre-receive hooks share (gitgate-scan, and gitgate-cgi
 * run as the gate's hook): reading the ref updates, telling the pusher
 * what the scan found.
 */

#ifndef GG_HOOK_H
#define GG_HOOK_H

#include <stddef.h>

#include "gg_scan.h"


/* what stdin may hold: every ref of GG_MAX_UPDATES at the longest */
#define GG_MAX_INPUT  (64 * 1024 * 1024)


/* the whole of stdin, malloc()ed; 0, or -1 and err */
int gg_read_input(char **out, size_t *outlen, char *err, size_t errlen);

/* the findings, on stderr (git shows them as "remote: " lines) */
void gg_report_print(const gg_report_t *r);

/* a marked finding's first lines: what holds it back, where, and how
 * many more places hold the same value */
void gg_report_marked(const gg_finding_t *f, const char *what);


#endif /* GG_HOOK_H */
