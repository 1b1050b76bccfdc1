/*
 * The operator page's bottles view and refusal feed (sv_operator_int.h;
 * docs/supervise.md, "The API"): the bottles with their routes in a line
 * each, one bottle with its pending proposals, recent decisions and
 * recent refusals, and the journal's refusals (egress.refusal, a refused
 * git.push) newer than the last one the page saw.  Read-only; the
 * journal's entries are read by their "event" field's JSON, and fields
 * this file does not know are ignored.
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


#define SV_OPERATOR_STREAM_ID_MAX  48


static json_t *sv_operator_bottle_row(const char *id, long long version,
    const char *json, size_t len);
static json_t *sv_operator_route_row(const json_t *r);
static json_t *sv_operator_pending_counts(redisContext *rc);
static int sv_operator_refusal(const char *json, size_t len,
    const char *bottle, json_t **out);
static json_t *sv_operator_scan(redisContext *rc, const char *after,
    const char *bottle, size_t max, char *last, size_t lastlen);
static int sv_operator_stream_id(const char *s);


/* GET /api/bottles: {bottles: [{id, version, routes, repos, pending}]} */

enum MHD_Result
sv_operator_bottles(sv_operator_t *op, struct MHD_Connection *c)
{
    char           err[1024];
    size_t         i, n;
    json_t        *list, *row, *counts, *v;
    redisReply    *all, *r;
    redisContext  *rc;

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    list = NULL;
    counts = NULL;

    all = redisCommand(rc, "HGETALL %s", BOTTLE_STORE_BOTTLES);

    if (all && all->type == REDIS_REPLY_ARRAY) {
        list = json_array();
        n = all->elements / 2;

        for (i = 0; i < n; i++) {
            redisAppendCommand(rc, "HGET %s%b %s", BOTTLE_STORE_POLICY_PREFIX,
                               all->element[2 * i]->str,
                               (size_t) all->element[2 * i]->len,
                               BOTTLE_STORE_F_JSON);
        }

        for (i = 0; i < n; i++) {
            if (redisGetReply(rc, (void **) &r) != REDIS_OK || r == NULL) {
                json_decref(list);
                list = NULL;
                break;
            }

            row = r->type == REDIS_REPLY_STRING
                  && all->element[2 * i]->type == REDIS_REPLY_STRING
                  && all->element[2 * i + 1]->type == REDIS_REPLY_STRING
                  ? sv_operator_bottle_row(all->element[2 * i]->str,
                        atoll(all->element[2 * i + 1]->str), r->str, r->len)
                  : NULL;

            if (row && list) {
                json_array_append_new(list, row);

            } else {
                json_decref(row);
            }

            freeReplyObject(r);
        }
    }

    if (all) {
        freeReplyObject(all);
    }

    counts = list ? sv_operator_pending_counts(rc) : NULL;
    redisFree(rc);

    if (list == NULL || counts == NULL) {
        json_decref(list);
        json_decref(counts);
        return sv_operator_error(c, 502, "the store failed to list the "
                                 "bottles");
    }

    json_array_foreach(list, i, row) {
        v = json_object_get(counts, json_string_value(json_object_get(row,
                                                                  "id")));
        json_object_set_new(row, "pending",
                            json_integer(v ? json_integer_value(v) : 0));
    }

    json_decref(counts);

    return sv_operator_json(c, 200, json_pack("{s:o, s:I}", "bottles", list,
                                 "now", (json_int_t) bottle_decision_now()));
}


/*
 * GET /api/bottles/ID: {bottle, pending: [...], decisions: [...],
 * refusals: [...]}, the last two the newest SV_OPERATOR_RECENT
 */

enum MHD_Result
sv_operator_bottle(sv_operator_t *op, struct MHD_Connection *c,
    const char *id)
{
    char           err[1024], last[SV_OPERATOR_STREAM_ID_MAX];
    json_t        *row, *pending, *decided, *refusals;
    redisReply    *r, *ids;
    redisContext  *rc;
    sv_filter_t    f;

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    r = redisCommand(rc, "HMGET %s%s %s %s", BOTTLE_STORE_POLICY_PREFIX, id,
                     BOTTLE_STORE_F_JSON, BOTTLE_STORE_F_VERSION);

    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        redisFree(rc);
        if (r == NULL) {
            return sv_operator_error(c, 502, "the store failed");
        }
        freeReplyObject(r);
        return sv_operator_error(c, 404, "no bottle \"%s\"", id);
    }

    row = sv_operator_bottle_row(id, r->element[1]->type == REDIS_REPLY_STRING
                                     ? atoll(r->element[1]->str) : 0,
                                 r->element[0]->str, r->element[0]->len);
    freeReplyObject(r);

    memset(&f, 0, sizeof(f));
    f.bottle = id;
    pending = NULL;
    decided = NULL;
    refusals = NULL;

    ids = redisCommand(rc, "ZREVRANGE %s%s 0 %d", BOTTLE_PROPOSALS_OF, id,
                       SV_OPERATOR_SCAN - 1);
    if (ids) {
        decided = sv_operator_recent(rc, ids, SV_OPERATOR_RECENT, 1, &f);
        freeReplyObject(ids);
    }

    ids = decided ? redisCommand(rc, "ZRANGE %s 0 -1",
                                 BOTTLE_PROPOSALS_PENDING)
                  : NULL;
    if (ids) {
        pending = sv_operator_recent(rc, ids, SV_OPERATOR_PAGE_MAX, 0, &f);
        freeReplyObject(ids);
    }

    if (pending) {
        refusals = sv_operator_scan(rc, NULL, id, SV_OPERATOR_RECENT, last,
                                    sizeof(last));
    }

    redisFree(rc);

    if (row == NULL || pending == NULL || decided == NULL
        || refusals == NULL)
    {
        json_decref(row);
        json_decref(pending);
        json_decref(decided);
        json_decref(refusals);
        return sv_operator_error(c, 502, "the store failed to read bottle "
                                 "\"%s\"", id);
    }

    return sv_operator_json(c, 200, json_pack("{s:o, s:o, s:o, s:o, s:I}",
                                 "bottle", row, "pending", pending,
                                 "decisions", decided, "refusals", refusals,
                                 "now", (json_int_t) bottle_decision_now()));
}


/*
 * GET /api/refusals?after=STREAM-ID&bottle=B: {refusals: [newest first],
 * last}: without after, the newest SV_OPERATOR_FEED among the newest
 * SV_OPERATOR_JOURNAL_SCAN entries; with it, those after it (at most
 * SV_OPERATOR_JOURNAL_SCAN entries read: last is where the next call goes
 * on)
 */

enum MHD_Result
sv_operator_refusals(sv_operator_t *op, struct MHD_Connection *c)
{
    char           err[1024], last[SV_OPERATOR_STREAM_ID_MAX];
    json_t        *list;
    const char    *after;
    redisContext  *rc;
    sv_filter_t    f;

    if (sv_operator_filter(c, &f, err, sizeof(err)) != 0) {
        return sv_operator_error(c, 400, "%s", err);
    }

    after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    if (after && after[0] == '\0') {
        after = NULL;
    }

    if (after && !sv_operator_stream_id(after)) {
        return sv_operator_error(c, 400, "after: a journal entry id "
                                 "(<ms>-<n>)");
    }

    rc = sv_operator_connect(op, err, sizeof(err));
    if (rc == NULL) {
        return sv_operator_error(c, 502, "%s", err);
    }

    list = sv_operator_scan(rc, after, f.bottle, SV_OPERATOR_FEED, last,
                            sizeof(last));
    redisFree(rc);

    if (list == NULL) {
        return sv_operator_error(c, 502, "the store failed to read the "
                                 "journal");
    }

    return sv_operator_json(c, 200, json_pack("{s:o, s:s, s:I}",
                                 "refusals", list, "last", last,
                                 "now", (json_int_t) bottle_decision_now()));
}


/*
 * The refusals in the journal, newest first, max at most: after an entry
 * id (XRANGE, oldest first) or the newest (XREVRANGE); *last the newest
 * entry id read (or after, or "0-0")
 */

static json_t *
sv_operator_scan(redisContext *rc, const char *after, const char *bottle,
    size_t max, char *last, size_t lastlen)
{
    size_t        i, k;
    json_t       *out, *e;
    redisReply   *r, *entry, *fields;

    snprintf(last, lastlen, "%s", after ? after : "0-0");

    if (after) {
        r = redisCommand(rc, "XRANGE %s (%s + COUNT %d", BOTTLE_STORE_AUDIT,
                         after, SV_OPERATOR_JOURNAL_SCAN);

    } else {
        r = redisCommand(rc, "XREVRANGE %s + - COUNT %d", BOTTLE_STORE_AUDIT,
                         SV_OPERATOR_JOURNAL_SCAN);
    }

    if (r == NULL) {
        return NULL;
    }

    out = json_array();

    for (i = 0; out && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {

        /* newest first either way */

        entry = r->element[after ? r->elements - 1 - i : i];

        if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2
            || entry->element[0]->type != REDIS_REPLY_STRING)
        {
            continue;
        }

        if (i == 0) {
            snprintf(last, lastlen, "%s", entry->element[0]->str);
        }

        fields = entry->element[1];

        for (k = 0; json_array_size(out) < max
                    && fields->type == REDIS_REPLY_ARRAY
                    && k + 1 < fields->elements; k += 2)
        {
            if (fields->element[k]->type != REDIS_REPLY_STRING
                || strcmp(fields->element[k]->str, "event") != 0
                || fields->element[k + 1]->type != REDIS_REPLY_STRING
                || sv_operator_refusal(fields->element[k + 1]->str,
                                       fields->element[k + 1]->len, bottle,
                                       &e) != 0)
            {
                continue;
            }

            json_object_set_new(e, "entry",
                                json_string(entry->element[0]->str));
            json_array_append_new(out, e);
        }
    }

    freeReplyObject(r);

    return out;
}


/* 0 and a row if the event is a refusal (of bottle, if given) */

static int
sv_operator_refusal(const char *json, size_t len, const char *bottle,
    json_t **out)
{
    size_t         i;
    json_t        *ev, *row;
    const char    *type, *b;

    static const char  *const keep[] = {
        "time", "type", "producer", "bottle", "host", "rule", "status",
        "reason", "method", "port", "repo", "correlation_id"
    };

    ev = json_loadb(json, len, 0, NULL);
    type = json_string_value(json_object_get(ev, "type"));
    b = json_string_value(json_object_get(ev, "bottle"));

    if (type == NULL
        || (strcmp(type, "egress.refusal") != 0
            && (strcmp(type, "git.push") != 0
                || !json_is_string(json_object_get(ev, "verdict"))
                || strcmp(json_string_value(json_object_get(ev, "verdict")),
                          "refused") != 0))
        || (bottle && (b == NULL || strcmp(b, bottle) != 0)))
    {
        json_decref(ev);
        return -1;
    }

    row = json_object();

    for (i = 0; row && i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_object_set(row, keep[i], json_object_get(ev, keep[i])
                                      ? json_object_get(ev, keep[i])
                                      : json_null());
    }

    json_decref(ev);
    *out = row;

    return row ? 0 : -1;
}


/* a bottle as the view lists it: no secret, routes in a line each */

static json_t *
sv_operator_bottle_row(const char *id, long long version, const char *json,
    size_t len)
{
    size_t         i;
    json_t        *b, *row, *routes, *repos;
    const json_t  *r;

    b = json_loadb(json, len, 0, NULL);
    routes = json_array();
    repos = json_object_get(b, "repos");

    json_array_foreach(json_object_get(b, "routes"), i, r) {
        if (routes) {
            json_array_append_new(routes, sv_operator_route_row(r));
        }
    }

    row = json_pack("{s:s, s:I, s:o, s:o}", "id", id,
                    "version", (json_int_t) version, "routes", routes,
                    "repos", json_is_array(repos) ? json_incref(repos)
                                                  : json_array());
    json_decref(b);

    return row;
}


/* {host, summary}: "GET, POST; auth bearer; 2 paths" */

static json_t *
sv_operator_route_row(const json_t *r)
{
    char           s[512];
    size_t         n, i;
    const char    *m, *t;
    const json_t  *v;

    n = 0;
    s[0] = '\0';

    if (json_is_true(json_object_get(r, "passthrough"))) {
        n += snprintf(s, sizeof(s), "passthrough");

    } else if (json_is_array(json_object_get(r, "methods"))) {
        json_array_foreach(json_object_get(r, "methods"), i, v) {
            m = json_string_value(v);
            if (m && n < sizeof(s)) {
                n += snprintf(s + n, sizeof(s) - n, "%s%s", i ? "," : "", m);
            }
        }

    } else {
        n += snprintf(s, sizeof(s), "GET,HEAD");
    }

    t = json_string_value(json_object_get(json_object_get(r, "auth"),
                                          "type"));
    if (t && n < sizeof(s)) {
        n += snprintf(s + n, sizeof(s) - n, "; auth %s", t);
    }

    if (json_is_array(json_object_get(r, "allow")) && n < sizeof(s)) {
        n += snprintf(s + n, sizeof(s) - n, "; %zu allow entries",
                      json_array_size(json_object_get(r, "allow")));
    }

    if (json_is_true(json_object_get(json_object_get(r, "git"), "fetch"))
        && n < sizeof(s))
    {
        snprintf(s + n, sizeof(s) - n, "; git fetch");
    }

    return json_pack("{s:O, s:s}", "host", json_object_get(r, "host")
                                           ? json_object_get(r, "host")
                                           : json_null(),
                     "summary", s);
}


/* {bottle: pending proposals}: HGET bottle of each pending one */

static json_t *
sv_operator_pending_counts(redisContext *rc)
{
    size_t       i;
    json_t      *o, *v;
    redisReply  *ids, *r;

    ids = redisCommand(rc, "ZRANGE %s 0 -1", BOTTLE_PROPOSALS_PENDING);
    if (ids == NULL || ids->type != REDIS_REPLY_ARRAY) {
        if (ids) {
            freeReplyObject(ids);
        }
        return NULL;
    }

    for (i = 0; i < ids->elements; i++) {
        redisAppendCommand(rc, "HGET %s%b %s", BOTTLE_PROPOSAL_PREFIX,
                           ids->element[i]->str,
                           (size_t) ids->element[i]->len,
                           BOTTLE_PROPOSAL_F_BOTTLE);
    }

    o = json_object();

    for (i = 0; i < ids->elements; i++) {
        if (redisGetReply(rc, (void **) &r) != REDIS_OK || r == NULL) {
            json_decref(o);
            freeReplyObject(ids);
            return NULL;
        }

        if (o && r->type == REDIS_REPLY_STRING) {
            v = json_object_get(o, r->str);
            json_object_set_new(o, r->str,
                json_integer(v ? json_integer_value(v) + 1 : 1));
        }

        freeReplyObject(r);
    }

    freeReplyObject(ids);

    return o;
}


/* "<digits>-<digits>" */

static int
sv_operator_stream_id(const char *s)
{
    size_t  i, dash;

    dash = 0;

    for (i = 0; s[i]; i++) {
        if (s[i] == '-' && i > 0 && dash == 0) {
            dash = i;

        } else if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }

    return dash > 0 && s[dash + 1] != '\0' && i < SV_OPERATOR_STREAM_ID_MAX;
}
