/*
 * The refusal rules: every refusal names one, and the rule decides the
 * status, the name the agent reads (X-Bottle-Rule) and the advice after
 * the reason (docs/refusals.md).  One table, read by the nginx module and
 * by `bottlectl explain`, so both answer with the same status.
 *
 * No nginx types.
 */

#ifndef BOTTLE_RULE_H
#define BOTTLE_RULE_H

#include <stddef.h>


/* the order is the table's; the module's NGX_BOTTLE_RULE_* are these */
typedef enum {
    BOTTLE_RULE_NONE = 0,
    BOTTLE_RULE_BAD_REQUEST,
    BOTTLE_RULE_IDENTITY,
    BOTTLE_RULE_NO_ROUTE,
    BOTTLE_RULE_PORT,
    BOTTLE_RULE_ADDRESS,
    BOTTLE_RULE_RESOLVE,
    BOTTLE_RULE_INSPECT,
    BOTTLE_RULE_RAW_TCP,
    BOTTLE_RULE_HOST_MISMATCH,
    BOTTLE_RULE_GIT,
    BOTTLE_RULE_METHOD,
    BOTTLE_RULE_ALLOW,
    BOTTLE_RULE_TIMEOUT,
    BOTTLE_RULE_UPSTREAM,
    BOTTLE_RULE_WEBSOCKET,
    BOTTLE_RULE_CANARY,
    BOTTLE_RULE_CRLF,
    BOTTLE_RULE_DLP,
    BOTTLE_RULE_TOO_LARGE,
    BOTTLE_RULE_ENCODING,
    BOTTLE_RULE_INTERNAL,
    BOTTLE_RULE_AUDIT,
    BOTTLE_RULE_REVOKED,
    BOTTLE_RULE_COUNT
} bottle_rule_e;


typedef struct {
    unsigned            status;     /* 400, 403, 407, 502 */
    const char         *name;       /* "no_route" */
    const char         *advice;     /* what to ask the operator for */
} bottle_rule_t;


/* the rule's entry; anything out of range is BOTTLE_RULE_INTERNAL's */
const bottle_rule_t *bottle_rule(bottle_rule_e rule);

/* the rule of this name, or -1 */
int bottle_rule_by_name(const char *name, size_t len);


#endif /* BOTTLE_RULE_H */
