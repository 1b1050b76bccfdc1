
/*
 * The caller's own routes, as the agent may see them (_egress.local/allowlist):
 * hosts, ports, methods, allow entries and what kind of auth the gateway adds.
 * Never a token, a canary or a secret's value.
 */

#ifndef BOTTLE_INTROSPECT_H
#define BOTTLE_INTROSPECT_H

#include <stddef.h>

#include "bottle_policy.h"


/* a malloc()ed JSON document, or NULL; the caller free()s it */
char *bottle_allowlist_json(const bottle_t *b, size_t *out_len);


#endif /* BOTTLE_INTROSPECT_H */
