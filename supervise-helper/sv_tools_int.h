/*
 * What the tools' files share (sv_tools.c, sv_launch.c): a call's state,
 * the refusal and the queueing every tool ends with.
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
 * (sv_tools.c): NULL then means "wait" (call->proposal is set).
 */
json_t *sv_queue(sv_tool_t *t, bottle_proposal_kind_e kind, json_t *args,
    long long kind_max, const char *kind_why);

/* sv_launch.c */
json_t *sv_launch_bottle(sv_tool_t *t);


#endif /* SV_TOOLS_INT_H */
