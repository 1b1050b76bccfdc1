/*
 * What every tool ends with (sv_tools_int.h), below the tools' files
 * (sv_tools.c, sv_egress.c, sv_repo.c, sv_launch.c), calling none of
 * them: its string arguments read (sv_string()), a refusal (a tool result
 * with isError and a line in the log, nothing queued: sv_refuse()), or
 * the proposal queued by libbottle's propose script within the bounds,
 * the waiter listed first (sv_queue()); then the queued proposal's answer
 * (sv_tools_answer(), and the check-proposal tool).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "supervise.h"
#include "sv_tools_int.h"


static json_t *sv_tool_json(int is_error, json_t *o);
static json_t *sv_decision_json(const char *id, const json_t *checked);


/* a string argument: NULL if absent; *bad if present and not a string */

const char *
sv_string(const json_t *in, const char *key, int *bad)
{
    json_t  *v;

    v = json_object_get(in, key);
    if (v == NULL || json_is_null(v)) {
        return NULL;
    }

    if (!json_is_string(v)) {
        *bad = 1;
        return NULL;
    }

    return json_string_value(v);
}


json_t *
sv_refuse(sv_tool_t *t, const char *fmt, ...)
{
    char     why[2048];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);

    sv_log("refused bottle=%s tool=%s request=%s: %s", t->call->bottle,
           t->call->tool, t->call->request_id[0] ? t->call->request_id : "-",
           why);

    return sv_tool_text(1, "refused, nothing was queued: %s", why);
}


/*
 * Queues the proposal (args: a new reference, stolen) after the bounds:
 * BOTTLE_PROPOSAL_PENDING_MAX pending proposals per bottle, of every source
 * (git-gate's and the egress proxy's count too), and kind_max of this kind
 * pending or approved when kind_max >= 0, counted by the script that
 * queues it (so racing calls cannot overshoot them).  The waiter is listed before the
 * script runs; NULL then means "wait" (call->proposal is set).
 */

json_t *
sv_queue(sv_tool_t *t, bottle_proposal_kind_e kind, json_t *args,
    long long kind_max, const char *kind_why)
{
    int                        rc;
    char                       summary[256];
    json_t                    *p;
    redisContext              *c;
    bottle_proposal_origin_t   o;
    bottle_proposal_queued_t   q;

    if (args == NULL) {
        return sv_refuse(t, "invalid arguments (not UTF-8?)");
    }

    c = sv_store(t->err, sizeof(t->err));
    if (c == NULL) {
        json_decref(args);
        return sv_refuse(t, "%s", t->err);
    }

    if (kind_max == 0) {
        json_decref(args);
        return sv_refuse(t, "%s", kind_why);
    }

    memset(&o, 0, sizeof(o));
    o.producer = "supervise";
    o.gateway = sv_conf.gateway;
    o.seq = sv_seq();
    o.stream_max = sv_conf.stream_max;
    o.pending_max = BOTTLE_PROPOSAL_PENDING_MAX;
    o.kind_max = kind_max > 0 ? kind_max : 0;

    q.id[0] = '\0';
    q.created_ms = sv_now();

    if (bottle_proposal_id(q.id, q.created_ms) != 0) {
        json_decref(args);
        return sv_refuse(t, "cannot make a proposal id");
    }

    sv_wait_add(&t->call->waiter, q.id,
                q.created_ms + (int64_t) sv_conf.timeout * 1000);

    rc = bottle_proposal_propose(&q, c, t->call->bottle, kind, args, t->why,
                                 &o, t->err, sizeof(t->err));

    if (rc != 0) {
        sv_wait_remove(&t->call->waiter);
        json_decref(args);

        if (rc == BOTTLE_PROPOSAL_ELOST) {
            sv_store_lost();
        }

        if (rc == BOTTLE_PROPOSAL_EPENDING) {
            return sv_refuse(t, "this bottle has %lld proposals waiting for "
                             "the operator (at most %d): wait for answers "
                             "(check-proposal)", q.count,
                             BOTTLE_PROPOSAL_PENDING_MAX);
        }

        if (rc == BOTTLE_PROPOSAL_EKIND) {
            return sv_refuse(t, "%s", kind_why);
        }

        return sv_refuse(t, "%s%s", rc == BOTTLE_PROPOSAL_EJOURNAL
                         ? "the audit journal cannot record it, and this "
                           "bottle requires it: " : "", t->err);
    }

    p = json_pack("{s:s, s:O}", "kind", bottle_proposal_kind_name(kind),
                  "args", args);
    summary[0] = '\0';
    if (p) {
        bottle_proposal_summary(summary, sizeof(summary), p);
        json_decref(p);
    }

    sv_log("proposal %s bottle=%s tool=%s request=%s: %s%s%s", q.id,
           t->call->bottle, t->call->tool,
           t->call->request_id[0] ? t->call->request_id : "-", summary,
           q.journal_err[0] ? "; not journalled: " : "", q.journal_err);

    snprintf(t->call->proposal, sizeof(t->call->proposal), "%s", q.id);
    json_decref(args);

    return NULL;
}


json_t *
sv_tools_answer(sv_call_t *call, int *pending)
{
    int            rc, try;
    char           err[512];
    json_t        *checked, *o;
    const char    *state;
    redisContext  *c;

    *pending = 1;
    rc = BOTTLE_PROPOSAL_ELOST;

    /* a second time on a fresh connection if this thread's was lost */

    for (try = 0; try < 2 && rc == BOTTLE_PROPOSAL_ELOST; try++) {
        c = sv_store(err, sizeof(err));
        if (c == NULL) {
            return sv_tool_json(0, json_pack("{s:s, s:s, s:s}", "status",
                                             "pending", "id", call->proposal,
                                             "note", "the control plane "
                                             "cannot be reached now: "
                                             "check-proposal later"));
        }

        rc = bottle_proposal_check(&checked, c, call->bottle,
                                   call->proposal, err, sizeof(err));
        if (rc == BOTTLE_PROPOSAL_ELOST) {
            sv_store_lost();
        }
    }

    if (rc != 0) {
        return sv_tool_json(0, json_pack("{s:s, s:s}", "status", "pending",
                                         "id", call->proposal));
    }

    state = json_string_value(json_object_get(checked, "state"));
    *pending = state == NULL || strcmp(state, "pending") == 0;

    o = sv_decision_json(call->proposal, checked);
    json_decref(checked);

    return sv_tool_json(0, o);
}


/* {"status", "id", "kind", and once answered "action", "notes"} */

static json_t *
sv_decision_json(const char *id, const json_t *checked)
{
    json_t      *o, *d, *v;
    const char  *state;

    state = json_string_value(json_object_get(checked, "state"));
    d = json_object_get(checked, "decision");

    o = json_pack("{s:s, s:s, s:O}", "status", state ? state : "unknown",
                  "id", id, "kind",
                  json_object_get(json_object_get(checked, "proposal"),
                                  "kind"));
    if (o == NULL) {
        return NULL;
    }

    if (json_is_object(d)) {
        v = json_object_get(d, "action");
        json_object_set(o, "action", v ? v : json_null());
        v = json_object_get(d, "notes");
        json_object_set(o, "notes", v ? v : json_string(""));

    } else if (state && strcmp(state, "pending") == 0) {
        json_object_set_new(o, "note", json_string(
            "the operator has not answered yet: check-proposal later"));
    }

    return o;
}


json_t *
sv_check_proposal(sv_tool_t *t)
{
    int            rc, bad;
    json_t        *checked, *o;
    const char    *id;
    redisContext  *c;

    bad = 0;
    id = sv_string(t->in, "id", &bad);

    if (id == NULL || bad || !bottle_proposal_id_valid(id)) {
        return sv_refuse(t, "id: a proposal id is required "
                         "(<ms>-<8 hex digits>)");
    }

    c = sv_store(t->err, sizeof(t->err));
    if (c == NULL) {
        return sv_refuse(t, "%s", t->err);
    }

    rc = bottle_proposal_check(&checked, c, t->call->bottle, id, t->err,
                               sizeof(t->err));

    if (rc == BOTTLE_PROPOSAL_ENONE) {
        return sv_refuse(t, "no proposal \"%s\" of this bottle", id);
    }

    if (rc != 0) {
        if (rc == BOTTLE_PROPOSAL_ELOST) {
            sv_store_lost();
        }
        return sv_refuse(t, "%s", t->err);
    }

    o = sv_decision_json(id, checked);
    json_decref(checked);

    return sv_tool_json(0, o);
}


/* a tool result whose text is o's JSON (o stolen) */

static json_t *
sv_tool_json(int is_error, json_t *o)
{
    char    *text;
    json_t  *r;

    if (o == NULL) {
        return NULL;
    }

    text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER
                             | JSON_ENSURE_ASCII);
    json_decref(o);

    if (text == NULL) {
        return NULL;
    }

    r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                  "text", text, "isError", is_error);
    free(text);

    return r;
}
