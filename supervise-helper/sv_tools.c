/*
 * The eight tools (docs/supervise.md): their table and tools/call.  Each
 * checks its arguments and refuses what the operator would never see (a
 * bad route, a forge of another kind, a forge not connected, a nested
 * launch, too many pending proposals) before anything is queued; the rest
 * is one proposal queued by libbottle's propose script, producer
 * "supervise", attributed to the bottle nginx named.  Refusals are tool
 * results with isError and a line in the log.  The tools are sv_egress.c,
 * sv_repo.c, sv_launch.c and sv_queue.c's check-proposal; what they end
 * with is sv_queue.c's.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>

#include "supervise.h"
#include "sv_tools_int.h"


typedef json_t *(*sv_tool_pt)(sv_tool_t *t);

typedef struct {
    const char             *name;
    sv_tool_pt              handler;
    int                     needs_why;
} sv_tool_def_t;




static const sv_tool_def_t  sv_tool_defs[] = {
    { "egress-allow", sv_egress_allow, 1 },
    { "egress-block", sv_egress_block, 1 },
    { "list-egress-routes", sv_list_routes, 0 },
    { "forge-connect", sv_forge_connect, 1 },
    { "add-repo", sv_add_repo, 1 },
    { "launch-bottle", sv_launch_bottle, 1 },
    { "create-repo", sv_create_repo, 1 },
    { "check-proposal", sv_check_proposal, 0 },
    { NULL, NULL, 0 }
};


int
sv_tools_call(json_t **out, sv_call_t *call, const json_t *params,
    char *err, size_t errlen)
{
    int                   rc, bad;
    json_t               *in, *empty;
    const char           *name;
    sv_tool_t             t;
    const sv_tool_def_t  *def;

    *out = NULL;

    name = json_string_value(json_object_get(params, "name"));
    if (name == NULL) {
        snprintf(err, errlen, "invalid params: \"name\" must be a string");
        return SV_RPC_INVALID_PARAMS;
    }

    for (def = sv_tool_defs; def->name; def++) {
        if (strcmp(def->name, name) == 0) {
            break;
        }
    }

    if (def->name == NULL) {
        snprintf(err, errlen, "unknown tool \"%.64s\"", name);
        return SV_RPC_INVALID_PARAMS;
    }

    in = json_object_get(params, "arguments");          /* borrowed */
    empty = NULL;

    if (in == NULL || json_is_null(in)) {
        in = empty = json_object();

    } else if (!json_is_object(in)) {
        snprintf(err, errlen, "invalid params: \"arguments\" must be an "
                 "object");
        return SV_RPC_INVALID_PARAMS;
    }

    snprintf(call->tool, sizeof(call->tool), "%s", def->name);

    memset(&t, 0, sizeof(t));
    t.call = call;
    t.in = in;

    rc = sv_bottle_load(&t.b, call->bottle, t.err, sizeof(t.err));

    if (rc == 1) {
        sv_log("refused bottle=%s tool=%s: not in the store", call->bottle,
               call->tool);
        snprintf(err, errlen, "refused: bottle \"%s\" is not known to the "
                 "control plane", call->bottle);
        json_decref(empty);
        return SV_RPC_SERVER_ERROR;
    }

    if (rc != 0) {
        *out = sv_refuse(&t, "%s", t.err);
        goto done;
    }

    bad = 0;
    t.why = sv_string(in, "justification", &bad);

    if (def->needs_why && (t.why == NULL || t.why[0] == '\0' || bad)) {
        *out = sv_refuse(&t, "justification: a non-empty string is "
                         "required: say why, for the operator");
        goto done;
    }

    if (t.why && strlen(t.why) > BOTTLE_PROPOSAL_TEXT_MAX) {
        *out = sv_refuse(&t, "justification: longer than %d bytes",
                         BOTTLE_PROPOSAL_TEXT_MAX);
        goto done;
    }

    *out = def->handler(&t);

done:

    sv_bottle_free(&t.b);
    json_decref(empty);

    if (*out == NULL && call->proposal[0] == '\0') {
        snprintf(err, errlen, "out of memory");
        return SV_RPC_INTERNAL;
    }

    return 0;
}
