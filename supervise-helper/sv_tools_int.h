/*
 * What the tools' files share: a call's state; the refusal and the
 * queueing every tool ends with (sv_queue.c, below them all); each tool's
 * handler, which the table of sv_tools.c names (sv_egress.c, sv_repo.c,
 * sv_launch.c).
 */

#ifndef SV_TOOLS_INT_H
#define SV_TOOLS_INT_H

#include "supervise.h"


typedef struct {
    sv_call_t              *call;
    const json_t           *in;         /* the tool's arguments */
    const char             *why;        /* justification */
    sv_bottle_t             b;
    char                    err[1024];
} sv_tool_t;


/* a string argument: NULL if absent; *bad if present and not a string */
const char *sv_string(const json_t *in, const char *key, int *bad);

/* a refusal: the tool's error "refused, nothing was queued: ...", logged */
json_t *sv_refuse(sv_tool_t *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/*
 * Queues the proposal (args: a new reference, stolen) after the bounds
 * (sv_queue.c): NULL then means "wait" (call->proposal is set).
 */
json_t *sv_queue(sv_tool_t *t, bottle_proposal_kind_e kind, json_t *args,
    long long kind_max, const char *kind_why);

/* the tools: NULL means "wait" (call->proposal set) or out of memory */

/* sv_egress.c */
json_t *sv_egress_allow(sv_tool_t *t);
json_t *sv_egress_block(sv_tool_t *t);
json_t *sv_list_routes(sv_tool_t *t);

/* sv_repo.c */
json_t *sv_forge_connect(sv_tool_t *t);
json_t *sv_add_repo(sv_tool_t *t);
json_t *sv_create_repo(sv_tool_t *t);

/* sv_launch.c */
json_t *sv_launch_bottle(sv_tool_t *t);

/* sv_queue.c: check-proposal */
json_t *sv_check_proposal(sv_tool_t *t);


#endif /* SV_TOOLS_INT_H */
