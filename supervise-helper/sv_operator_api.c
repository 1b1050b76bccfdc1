/*
 * The operator page's API (sv_operator.h; docs/supervise.md, "Operator page"):
 * the pending proposals and the recent decisions, one proposal with the change
 * an approval would make, and an answer through bottle_decision_answer(). A
 * store connection per request: operators are few, and a hiredis context is not
 * shared between MHD's threads.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <microhttpd.h>

#include "bottle_decision.h"
#include "bottle_proposal.h"
#include "bottle_store.h"
#include "sv_operator_int.h"


#define SV_OPERATOR_NAME_MAX    64


static redisContext *sv_operator_connect(sv_operator_t *op, char *err,
    size_t errlen);
static json_t *sv_operator_entries(redisContext *rc, redisReply *ids,
    size_t max, int decided);


static redisContext *
sv_operator_connect(sv_operator_t *op, char *err, size_t errlen)
{
    char           why[256], where[400];
    redisContext  *rc;

    if (bottle_store_connect(&rc, &op->url, 2, 5, why, sizeof(why)) != 0) {
        bottle_store_url_print(&op->url, where, sizeof(where));
        snprintf(err, errlen, "cannot reach the store %s: %s", where, why);
        sv_operator_logf(op, "%s", err);
        return NULL;
    }

    return rc;
}


/* GET /api/proposals: {pending: [...], decisions: [...]} */

enum MHD_Result
sv_operator_list(sv_operator_t *op, struct MHD_Connection *c)
{
    char           err[1024], n[16];
    json_t        *o, *pending, *decided;
    redisReply    *ids;
    redisContext  *rc;

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    pending = NULL;
    decided = NULL;

    snprintf(n, sizeof(n), "%d", SV_OPERATOR_PENDING_MAX - 1);
    ids = redisCommand(rc, "ZRANGE %s 0 %s", BOTTLE_PROPOSALS_PENDING, n);
    if (ids) {
        pending = sv_operator_entries(rc, ids, SV_OPERATOR_PENDING_MAX, 0);
        freeReplyObject(ids);
    }

    /* the newest answered, from the newest proposals */

    ids = pending ? redisCommand(rc, "ZREVRANGE %s 0 199",
                                 BOTTLE_PROPOSALS_ALL)
                  : NULL;
    if (ids) {
        decided = sv_operator_entries(rc, ids, SV_OPERATOR_RECENT, 1);
        freeReplyObject(ids);
    }

    redisFree(rc);

    if (pending == NULL || decided == NULL) {
        json_decref(pending);
        json_decref(decided);
        return sv_operator_error(c, 502, "the store failed to list the "
                                 "proposals");
    }

    o = json_pack("{s:o, s:o, s:I}", "pending", pending, "decisions",
                  decided, "now", (json_int_t) bottle_decision_now());

    return sv_operator_json(c, 200, o);
}


/*
 * The proposals of ids (pipelined HMGETs): pending ones, or answered
 * ones; max at most.  A new array, NULL if the store failed.
 */

static json_t *
sv_operator_entries(redisContext *rc, redisReply *ids, size_t max,
    int decided)
{
    char                    key[sizeof(BOTTLE_PROPOSAL_PREFIX)
                                + BOTTLE_PROPOSAL_ID_LEN];
    char                    summary[256], err[256];
    size_t                  i, sent;
    json_t                 *out, *p, *e, *d;
    redisReply             *r;
    const char             *state;
    bottle_proposal_kind_e  kind;

    if (ids->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    sent = 0;

    for (i = 0; i < ids->elements; i++) {
        if (ids->element[i]->type != REDIS_REPLY_STRING
            || ids->element[i]->len >= BOTTLE_PROPOSAL_ID_LEN)
        {
            continue;
        }

        snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX,
                 ids->element[i]->str);
        redisAppendCommand(rc, "HMGET %s %s %s %s", key,
                           BOTTLE_PROPOSAL_F_JSON, BOTTLE_PROPOSAL_F_STATE,
                           BOTTLE_PROPOSAL_F_DECISION);
        sent++;
    }

    out = json_array();

    for (i = 0; i < sent; i++) {
        if (redisGetReply(rc, (void **) &r) != REDIS_OK || r == NULL) {
            json_decref(out);
            return NULL;
        }

        if (out == NULL || json_array_size(out) >= max
            || r->type != REDIS_REPLY_ARRAY || r->elements != 3
            || r->element[0]->type != REDIS_REPLY_STRING
            || r->element[1]->type != REDIS_REPLY_STRING)
        {
            freeReplyObject(r);
            continue;
        }

        state = r->element[1]->str;

        if ((strcmp(state, "pending") == 0) == decided) {
            freeReplyObject(r);
            continue;
        }

        p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len,
                                  &kind, err, sizeof(err));
        if (p == NULL) {
            freeReplyObject(r);
            continue;
        }

        bottle_proposal_summary(summary, sizeof(summary), p);

        d = r->element[2]->type == REDIS_REPLY_STRING
            ? json_loads(r->element[2]->str, 0, NULL) : NULL;

        e = json_pack("{s:O, s:O, s:O, s:s, s:O, s:O, s:O, s:s, s:o}",
                      "id", json_object_get(p, "id"),
                      "bottle", json_object_get(p, "bottle"),
                      "kind", json_object_get(p, "kind"),
                      "summary", summary,
                      "justification", json_object_get(p, "justification"),
                      "created", json_object_get(p, "created"),
                      "args", json_object_get(p, "args"),
                      "state", state,
                      "decision", d ? d : json_null());
        if (e) {
            json_object_set_new(e, "grantable",
                json_boolean(bottle_proposal_no_plain_allow(kind) == NULL));
            json_array_append_new(out, e);
        }

        json_decref(p);
        freeReplyObject(r);
    }

    return out;
}


/* GET /api/proposals/ID: {proposal, state, decision, version, diff} */

enum MHD_Result
sv_operator_show(sv_operator_t *op, struct MHD_Connection *c, const char *id)
{
    char                       err[BOTTLE_DECISION_ERR_LEN];
    json_t                    *p, *d, *o;
    redisReply                *r;
    redisContext              *rc;
    bottle_proposal_kind_e     kind;
    bottle_decision_change_t   chg;
    bottle_decision_status_e   st;

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    r = redisCommand(rc, "HMGET %s%s %s %s %s %s", BOTTLE_PROPOSAL_PREFIX,
                     id, BOTTLE_PROPOSAL_F_JSON, BOTTLE_PROPOSAL_F_STATE,
                     BOTTLE_PROPOSAL_F_DECISION, BOTTLE_PROPOSAL_F_VERSION);

    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 4
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        if (r) {
            freeReplyObject(r);
        }
        redisFree(rc);
        return sv_operator_error(c, 404, "no proposal \"%s\"", id);
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len, &kind,
                              err, sizeof(err));
    if (p == NULL) {
        freeReplyObject(r);
        redisFree(rc);
        return sv_operator_error(c, 500, "proposal \"%s\": %s", id, err);
    }

    d = r->element[2]->type == REDIS_REPLY_STRING
        ? json_loads(r->element[2]->str, 0, NULL) : NULL;

    o = json_pack("{s:o, s:s, s:o, s:o}", "proposal", p,
                  "state", r->element[1]->type == REDIS_REPLY_STRING
                           ? r->element[1]->str : "",
                  "decision", d ? d : json_null(),
                  "version", r->element[3]->type == REDIS_REPLY_STRING
                             ? json_integer(atoll(r->element[3]->str))
                             : json_null());

    /* what approving it as asked would change, to read first */

    if (o && strcmp(json_string_value(json_object_get(o, "state")),
                    "pending") == 0
        && bottle_proposal_changes_policy(kind)
        && bottle_decision_change(&chg, rc,
               json_string_value(json_object_get(p, "bottle")), kind,
               json_object_get(p, "args"), &st, err, sizeof(err)) == 0)
    {
        json_object_set_new(o, "diff", json_stringn(chg.diff ? chg.diff : "",
                                                    chg.diff_len));
        bottle_decision_change_free(&chg);
    }

    freeReplyObject(r);
    redisFree(rc);

    return sv_operator_json(c, 200, o);
}


/* POST /api/proposals/ID/ACTION {"note", "grant", "operator"} */

enum MHD_Result
sv_operator_answer(sv_operator_t *op, struct MHD_Connection *c,
    const char *id, const char *action, sv_request_t *req)
{
    size_t                     i;
    unsigned                   status;
    json_t                    *body, *o, *grant;
    const char                *note, *who;
    json_error_t               jerr;
    redisContext              *rc;
    enum MHD_Result            ret;
    bottle_decision_req_t      dr;
    bottle_decision_result_t   res;
    char                       err[BOTTLE_DECISION_ERR_LEN];

    body = json_loadb(req->body ? req->body : "", req->len,
                      JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        return sv_operator_error(c, 400, "the body is not a JSON object");
    }

    note = json_string_value(json_object_get(body, "note"));
    who = json_string_value(json_object_get(body, "operator"));
    grant = json_object_get(body, "grant");                 /* borrowed */

    if ((json_object_get(body, "note") && note == NULL)
        || (json_object_get(body, "operator") && who == NULL))
    {
        json_decref(body);
        return sv_operator_error(c, 400, "note and operator are strings");
    }

    /* a name for the journal: short, printable ASCII */

    if (who == NULL || who[0] == '\0') {
        who = SV_OPERATOR_USER;
    }

    for (i = 0; who[i]; i++) {
        if (who[i] < 0x20 || who[i] > 0x7e || i >= SV_OPERATOR_NAME_MAX) {
            json_decref(body);
            return sv_operator_error(c, 400, "operator: 1 to %d printable "
                                     "ASCII characters",
                                     SV_OPERATOR_NAME_MAX);
        }
    }

    if (strcmp(action, "modify") == 0 ? !json_is_object(grant)
                                      : grant != NULL)
    {
        json_decref(body);
        return sv_operator_error(c, 400, "modify takes a \"grant\" object "
                                 "(a route, or {\"repo\"}); approve and "
                                 "deny take none");
    }

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        json_decref(body);
        return sv_operator_error(c, 502, "%s", err);
    }

    memset(&dr, 0, sizeof(dr));
    dr.proposal = id;
    dr.action = action;
    dr.notes = note;
    dr.grant = grant;
    dr.operator_name = who;
    dr.producer = "operator-page";

    bottle_decision_answer(&res, rc, &dr);
    redisFree(rc);

    switch (res.status) {
    case BOTTLE_DECISION_OK:          status = 200; break;
    case BOTTLE_DECISION_INVALID:     status = 400; break;
    case BOTTLE_DECISION_NOT_FOUND:   status = 404; break;
    case BOTTLE_DECISION_FORBIDDEN:   status = 403; break;
    case BOTTLE_DECISION_ANSWERED:    status = 409; break;
    case BOTTLE_DECISION_UNREACHABLE: status = 502; break;
    default:                          status = 503; break;
    }

    sv_operator_logf(op, "%s %s by %s: %u%s%s", action, id, who, status,
                     res.err[0] ? ": " : "", res.err);

    if (status == 200) {
        o = json_pack("{s:s, s:s, s:O, s:I, s:s}", "id", id,
                      "state", res.state, "decision",
                      res.decision ? res.decision : json_null(),
                      "version", (json_int_t) res.version,
                      "warning", res.warning);

    } else {
        o = json_pack("{s:s, s:O}", "error", res.err, "decision",
                      res.decision ? res.decision : json_null());
    }

    ret = sv_operator_json(c, status, o);

    bottle_decision_result_free(&res);
    json_decref(body);

    return ret;
}
