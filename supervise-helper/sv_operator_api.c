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
#include "bottle_forge_client.h"
#include "bottle_proposal.h"
#include "bottle_store.h"
#include "bottle_warn.h"
#include "sv_operator_int.h"


#define SV_OPERATOR_NAME_MAX    64


static enum MHD_Result sv_operator_result(sv_operator_t *op,
    struct MHD_Connection *c, const char *id, const char *action,
    const char *who, const bottle_decision_result_t *res);
static enum MHD_Result sv_operator_connect_forge(sv_operator_t *op,
    struct MHD_Connection *c, const char *id, json_t *body,
    const char *note, const char *who, sv_request_t *req);
static int sv_operator_query(struct MHD_Connection *c, sv_filter_t *f,
    size_t *offset, size_t *limit, char *err, size_t errlen);
static size_t sv_operator_match(redisContext *rc, redisReply *ids,
    const sv_filter_t *f, const char **out);
static json_t *sv_operator_versions(redisContext *rc);
static void sv_operator_change_set(json_t *o, const char *what,
    const bottle_decision_change_t *chg);
static enum MHD_Result sv_operator_preview(sv_operator_t *op,
    struct MHD_Connection *c, const char *id, const json_t *grant);


redisContext *
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


/*
 * GET /api/proposals?bottle=&kind=&offset=&limit=: {pending: [one page],
 * total, all, offset, limit, decisions: [...], versions: {bottle:
 * version}, now}; nothing left out silently: total counts every pending
 * proposal the filter keeps
 */

enum MHD_Result
sv_operator_list(sv_operator_t *op, struct MHD_Connection *c)
{
    char           err[1024], key[sizeof(BOTTLE_PROPOSALS_OF)
                                  + SV_OPERATOR_BOTTLE_MAX + 1];
    size_t         offset, limit, total, all, n;
    json_t        *o, *pending, *decided, *versions;
    const char   **match;
    redisReply    *ids, *recent;
    redisContext  *rc;
    sv_filter_t    f;

    if (sv_operator_query(c, &f, &offset, &limit, err, sizeof(err)) != 0) {
        return sv_operator_error(c, 400, "%s", err);
    }

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    pending = NULL;
    decided = NULL;
    versions = NULL;
    match = NULL;
    total = 0;
    all = 0;

    ids = redisCommand(rc, "ZRANGE %s 0 -1", BOTTLE_PROPOSALS_PENDING);

    if (ids && ids->type == REDIS_REPLY_ARRAY) {
        all = ids->elements;
        match = calloc(all + 1, sizeof(const char *));
    }

    if (match) {
        total = sv_operator_match(rc, ids, &f, match);
        n = offset < total ? total - offset : 0;
        pending = sv_operator_entries(rc, match + (offset < total ? offset
                                                                  : total),
                                      n < limit ? n : limit, limit, 0, NULL);
    }

    free(match);

    if (ids) {
        freeReplyObject(ids);
    }

    /* the newest answered, from the newest proposals (of the bottle) */

    if (f.bottle) {
        snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSALS_OF, f.bottle);
    }

    recent = pending ? redisCommand(rc, "ZREVRANGE %s 0 %d",
                                    f.bottle ? key : BOTTLE_PROPOSALS_ALL,
                                    SV_OPERATOR_SCAN - 1)
                     : NULL;
    if (recent) {
        decided = sv_operator_recent(rc, recent, SV_OPERATOR_RECENT, 1, &f);
        freeReplyObject(recent);
    }

    versions = decided ? sv_operator_versions(rc) : NULL;

    redisFree(rc);

    if (pending == NULL || decided == NULL || versions == NULL) {
        json_decref(pending);
        json_decref(decided);
        json_decref(versions);
        return sv_operator_error(c, 502, "the store failed to list the "
                                 "proposals");
    }

    o = json_pack("{s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:I}",
                  "pending", pending, "total", (json_int_t) total,
                  "all", (json_int_t) all, "offset", (json_int_t) offset,
                  "limit", (json_int_t) limit, "decisions", decided,
                  "versions", versions,
                  "now", (json_int_t) bottle_decision_now());

    return sv_operator_json(c, 200, o);
}


/* the query's filter and page: 0, or -1 and why */

static int
sv_operator_query(struct MHD_Connection *c, sv_filter_t *f, size_t *offset,
    size_t *limit, char *err, size_t errlen)
{
    char          *end;
    const char    *v;
    unsigned long  n;

    memset(f, 0, sizeof(*f));
    *offset = 0;
    *limit = SV_OPERATOR_PAGE;

    if (sv_operator_filter(c, f, err, errlen) != 0) {
        return -1;
    }

    v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
    if (v && v[0]) {
        n = strtoul(v, &end, 10);
        if (*end || v[0] < '0' || v[0] > '9' || n > 1000000000UL) {
            snprintf(err, errlen, "offset: a number");
            return -1;
        }
        *offset = n;
    }

    v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    if (v && v[0]) {
        n = strtoul(v, &end, 10);
        if (*end || v[0] < '0' || v[0] > '9' || n == 0
            || n > SV_OPERATOR_PAGE_MAX)
        {
            snprintf(err, errlen, "limit: 1 to %d", SV_OPERATOR_PAGE_MAX);
            return -1;
        }
        *limit = n;
    }

    return 0;
}


/* ?bottle= and ?kind=: 0, or -1 and why */

int
sv_operator_filter(struct MHD_Connection *c, sv_filter_t *f, char *err,
    size_t errlen)
{
    const char  *v;

    memset(f, 0, sizeof(*f));

    v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "bottle");
    if (v && v[0]) {
        if (strlen(v) > SV_OPERATOR_BOTTLE_MAX) {
            snprintf(err, errlen, "bottle: longer than %d bytes",
                     SV_OPERATOR_BOTTLE_MAX);
            return -1;
        }
        f->bottle = v;
    }

    v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "kind");
    if (v && v[0]) {
        if (bottle_proposal_kind_parse(v) < 0) {
            snprintf(err, errlen, "kind: not a proposal kind");
            return -1;
        }
        f->kind = v;
    }

    return 0;
}


/* the ids the filter keeps, in order (pipelined HMGET bottle kind) */

static size_t
sv_operator_match(redisContext *rc, redisReply *ids, const sv_filter_t *f,
    const char **out)
{
    size_t       i, k;
    redisReply  *r;

    k = 0;

    if (f->bottle == NULL && f->kind == NULL) {
        for (i = 0; i < ids->elements; i++) {
            if (ids->element[i]->type == REDIS_REPLY_STRING) {
                out[k++] = ids->element[i]->str;
            }
        }
        return k;
    }

    for (i = 0; i < ids->elements; i++) {
        redisAppendCommand(rc, "HMGET %s%b %s %s", BOTTLE_PROPOSAL_PREFIX,
                           ids->element[i]->str,
                           (size_t) ids->element[i]->len,
                           BOTTLE_PROPOSAL_F_BOTTLE, BOTTLE_PROPOSAL_F_KIND);
    }

    for (i = 0; i < ids->elements; i++) {
        if (redisGetReply(rc, (void **) &r) != REDIS_OK || r == NULL) {
            return k;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2
            && r->element[0]->type == REDIS_REPLY_STRING
            && r->element[1]->type == REDIS_REPLY_STRING
            && (f->bottle == NULL || strcmp(r->element[0]->str, f->bottle) == 0)
            && (f->kind == NULL || strcmp(r->element[1]->str, f->kind) == 0))
        {
            out[k++] = ids->element[i]->str;
        }

        freeReplyObject(r);
    }

    return k;
}


/* {bottle: its policy version}: bottle:bottles */

static json_t *
sv_operator_versions(redisContext *rc)
{
    size_t       i;
    json_t      *o;
    redisReply  *r;

    r = redisCommand(rc, "HGETALL %s", BOTTLE_STORE_BOTTLES);
    if (r == NULL) {
        return NULL;
    }

    o = json_object();

    for (i = 0; o && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
    {
        if (r->element[i]->type == REDIS_REPLY_STRING
            && r->element[i + 1]->type == REDIS_REPLY_STRING)
        {
            json_object_set_new(o, r->element[i]->str,
                                json_integer(atoll(r->element[i + 1]->str)));
        }
    }

    freeReplyObject(r);

    return o;
}


/* the pending or answered proposals among ids, in order, max at most */

json_t *
sv_operator_recent(redisContext *rc, redisReply *ids, size_t max,
    int decided, const sv_filter_t *f)
{
    size_t        i, k;
    json_t       *out;
    const char  **list;

    if (ids->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    list = calloc(ids->elements + 1, sizeof(const char *));
    if (list == NULL) {
        return NULL;
    }

    for (i = 0, k = 0; i < ids->elements; i++) {
        if (ids->element[i]->type == REDIS_REPLY_STRING) {
            list[k++] = ids->element[i]->str;
        }
    }

    out = sv_operator_entries(rc, list, k, max, decided, f);
    free(list);

    return out;
}


/*
 * The proposals of ids (pipelined HMGETs): pending ones, or answered
 * ones; max at most, those f keeps.  A new array, NULL if the store
 * failed.
 */

json_t *
sv_operator_entries(redisContext *rc, const char *const *ids, size_t n,
    size_t max, int decided, const sv_filter_t *f)
{
    char                    key[sizeof(BOTTLE_PROPOSAL_PREFIX)
                                + BOTTLE_PROPOSAL_ID_LEN];
    char                    summary[256], err[256];
    size_t                  i, sent;
    json_t                 *out, *p, *e, *d;
    redisReply             *r;
    const char             *state, *b;
    bottle_proposal_kind_e  kind;

    sent = 0;

    for (i = 0; i < n; i++) {
        if (strlen(ids[i]) >= BOTTLE_PROPOSAL_ID_LEN) {
            continue;
        }

        snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX, ids[i]);
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

        b = json_string_value(json_object_get(p, "bottle"));

        if (f && ((f->bottle && (b == NULL || strcmp(b, f->bottle) != 0))
                  || (f->kind
                      && strcmp(bottle_proposal_kind_name(kind), f->kind)
                         != 0)))
        {
            json_decref(p);
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
            json_object_set_new(e, "changes_policy",
                json_boolean(bottle_proposal_changes_policy(kind)));
            json_array_append_new(out, e);
        }

        json_decref(p);
        freeReplyObject(r);
    }

    return out;
}


/*
 * GET /api/proposals/ID: {proposal, state, decision, version} and, for a
 * pending one whose approval changes policy, what approving it as asked
 * would change (sv_operator_change_set()) or change_error
 */

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
        && bottle_proposal_changes_policy(kind))
    {
        if (bottle_decision_change(&chg, rc,
                json_string_value(json_object_get(p, "bottle")), kind,
                json_object_get(p, "args"), &st, err, sizeof(err))
            == 0)
        {
            sv_operator_change_set(o, "approving it", &chg);

        } else {
            json_object_set_new(o, "change_error", json_string(err));
        }

        bottle_decision_change_free(&chg);
    }

    freeReplyObject(r);
    redisFree(rc);

    return sv_operator_json(c, 200, o);
}


/* the change's fields: changed, diff, warnings, change (the text) */

static void
sv_operator_change_set(json_t *o, const char *what,
    const bottle_decision_change_t *chg)
{
    char  *text;

    text = bottle_warn_render(what, chg->changed, chg->warnings, chg->diff,
                              chg->diff_len);

    json_object_set_new(o, "changed", json_boolean(chg->changed));
    json_object_set_new(o, "diff", json_stringn(chg->diff ? chg->diff : "",
                                                chg->diff_len));
    json_object_set_new(o, "warnings", chg->warnings
                                       ? json_incref(chg->warnings)
                                       : json_array());
    json_object_set_new(o, "change", text ? json_string(text) : json_null());

    free(text);
}


/*
 * POST /api/proposals/ID/preview {"grant"}: what modify with that grant
 * would change, decided nothing: {changed, diff, warnings, change}, or
 * {"error"} with modify's status (400 a bad grant, 403 a kind modify does
 * not change policy for, 404, 409 answered already)
 */

static enum MHD_Result
sv_operator_preview(sv_operator_t *op, struct MHD_Connection *c,
    const char *id, const json_t *grant)
{
    char                       err[BOTTLE_DECISION_ERR_LEN];
    unsigned                   status;
    json_t                    *p, *o;
    redisReply                *r;
    redisContext              *rc;
    bottle_proposal_kind_e     kind;
    bottle_decision_change_t   chg;
    bottle_decision_status_e   st;

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    r = redisCommand(rc, "HMGET %s%s %s %s", BOTTLE_PROPOSAL_PREFIX, id,
                     BOTTLE_PROPOSAL_F_JSON, BOTTLE_PROPOSAL_F_STATE);

    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        if (r) {
            freeReplyObject(r);
        }
        redisFree(rc);
        return sv_operator_error(c, r ? 404 : 502, "no proposal \"%s\"", id);
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len, &kind,
                              err, sizeof(err));
    o = NULL;
    status = 200;
    memset(&chg, 0, sizeof(chg));

    if (p == NULL) {
        status = 500;

    } else if (r->element[1]->type != REDIS_REPLY_STRING
               || strcmp(r->element[1]->str, "pending") != 0)
    {
        status = 409;
        snprintf(err, sizeof(err), "proposal \"%s\" was answered already",
                 id);

    } else if (kind != BOTTLE_PROPOSAL_EGRESS_ALLOW
               && kind != BOTTLE_PROPOSAL_ADD_REPO)
    {
        status = 403;
        snprintf(err, sizeof(err), "a %s is not modified into a policy "
                 "change: nothing to preview",
                 bottle_proposal_kind_name(kind));

    } else if (bottle_decision_grant_check(kind, p, grant, err, sizeof(err))
               != 0)
    {
        status = 400;

    } else if (bottle_decision_change(&chg, rc,
                   json_string_value(json_object_get(p, "bottle")), kind,
                   grant, &st, err, sizeof(err))
               != 0)
    {
        status = st == BOTTLE_DECISION_UNREACHABLE ? 502
                 : st == BOTTLE_DECISION_NOT_FOUND ? 404 : 400;

    } else {
        o = json_object();
        if (o) {
            sv_operator_change_set(o, "modifying it so", &chg);
        }
    }

    bottle_decision_change_free(&chg);
    json_decref(p);
    freeReplyObject(r);
    redisFree(rc);

    if (status != 200) {
        return sv_operator_error(c, status, "%s", err);
    }

    return sv_operator_json(c, 200, o);
}


/*
 * POST /api/proposals/ID/ACTION {"note", "grant", "operator"}; connect
 * {"kind", "token", "account", "api", "note", "operator"} answers a
 * forge-connect, create {"note", "operator"} a create-repo
 * (bottle_forge_client.h).  The token is never logged nor answered.
 */

enum MHD_Result
sv_operator_answer(sv_operator_t *op, struct MHD_Connection *c,
    const char *id, const char *action, sv_request_t *req)
{
    size_t                     i;
    json_t                    *body, *grant;
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

    if (strcmp(action, "connect") == 0) {
        ret = sv_operator_connect_forge(op, c, id, body, note, who, req);
        json_decref(body);
        return ret;
    }

    if (strcmp(action, "preview") == 0) {
        ret = json_is_object(grant)
              ? sv_operator_preview(op, c, id, grant)
              : sv_operator_error(c, 400, "preview takes a \"grant\" "
                                  "object, as modify does");
        json_decref(body);
        return ret;
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

    if (strcmp(action, "create") == 0) {
        bottle_forge_create_answer(&res, rc, id, note, who, "operator-page");

    } else {
        bottle_decision_answer(&res, rc, &dr);
    }

    redisFree(rc);

    ret = sv_operator_result(op, c, id, action, who, &res);

    bottle_decision_result_free(&res);
    json_decref(body);

    return ret;
}


/* an answer's result as the page gets it, and its log line */

static enum MHD_Result
sv_operator_result(sv_operator_t *op, struct MHD_Connection *c,
    const char *id, const char *action, const char *who,
    const bottle_decision_result_t *res)
{
    unsigned   status;
    json_t    *o;

    switch (res->status) {
    case BOTTLE_DECISION_OK:          status = 200; break;
    case BOTTLE_DECISION_INVALID:     status = 400; break;
    case BOTTLE_DECISION_NOT_FOUND:   status = 404; break;
    case BOTTLE_DECISION_FORBIDDEN:   status = 403; break;
    case BOTTLE_DECISION_ANSWERED:    status = 409; break;
    case BOTTLE_DECISION_UNREACHABLE: status = 502; break;
    case BOTTLE_DECISION_FORGE:       status = 502; break;
    default:                          status = 503; break;
    }

    sv_operator_logf(op, "%s %s by %s: %u%s%s", action, id, who, status,
                     res->err[0] ? ": " : "", res->err);

    if (status == 200) {
        o = json_pack("{s:s, s:s, s:O, s:I, s:s}", "id", id,
                      "state", res->state, "decision",
                      res->decision ? res->decision : json_null(),
                      "version", (json_int_t) res->version,
                      "warning", res->warning);

    } else {
        o = json_pack("{s:s, s:O}", "error", res->err, "decision",
                      res->decision ? res->decision : json_null());
    }

    return sv_operator_json(c, status, o);
}


/* connect: the forge of a forge-connect, with the operator's token */

static enum MHD_Result
sv_operator_connect_forge(sv_operator_t *op, struct MHD_Connection *c,
    const char *id, json_t *body, const char *note, const char *who,
    sv_request_t *req)
{
    char                        err[1024];
    json_t                     *v;
    const char                 *key;
    redisContext               *rc;
    enum MHD_Result             ret;
    bottle_forge_connect_req_t  fr;
    bottle_decision_result_t    res;

    memset(&fr, 0, sizeof(fr));
    fr.proposal = id;
    fr.kind = json_string_value(json_object_get(body, "kind"));
    fr.token = json_string_value(json_object_get(body, "token"));
    fr.account = json_string_value(json_object_get(body, "account"));
    fr.api = json_string_value(json_object_get(body, "api"));
    fr.notes = note;
    fr.operator_name = who;
    fr.producer = "operator-page";

    /* the body's copy of the token is not needed any more */
    if (req->body) {
        memset(req->body, 0, req->len);
    }

    json_object_foreach(body, key, v) {
        if (strcmp(key, "kind") != 0 && strcmp(key, "token") != 0
            && strcmp(key, "account") != 0 && strcmp(key, "api") != 0
            && strcmp(key, "note") != 0 && strcmp(key, "operator") != 0)
        {
            return sv_operator_error(c, 400, "connect: unknown field "
                                     "\"%s\"", key);
        }

        if (!json_is_string(v)) {
            return sv_operator_error(c, 400, "connect: %s is a string",
                                     key);
        }
    }

    if (fr.kind == NULL || fr.token == NULL) {
        return sv_operator_error(c, 400, "connect takes \"kind\" (gitea or "
                                 "github) and \"token\"");
    }

    /* empty fields of the form: the defaults */
    if (fr.account && fr.account[0] == '\0') {
        fr.account = NULL;
    }

    if (fr.api && fr.api[0] == '\0') {
        fr.api = NULL;
    }

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    bottle_forge_connect_answer(&res, rc, &fr);
    redisFree(rc);

    ret = sv_operator_result(op, c, id, "connect", who, &res);
    bottle_decision_result_free(&res);

    return ret;
}
