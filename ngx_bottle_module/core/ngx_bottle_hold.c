
/*
 * One held request (docs/dlp.md "Held requests"): its egress-token-allow
 * proposal queued with the propose script, then its decision (a message on
 * bottle:decisions, read by ngx_bottle_supervise.c) or its timer; an end
 * without a decision withdraws the proposal.  Nothing here blocks the
 * worker.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <jansson.h>

#include "bottle_audit.h"
#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"
#include "ngx_bottle_supervise.h"


#define NGX_BOTTLE_SUPERVISE_NOTE      200     /* of the operator's note */


static ngx_int_t ngx_bottle_hold_propose(ngx_bottle_hold_t *h);
static void ngx_bottle_hold_proposed(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_hold_checked(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_hold_denied(ngx_bottle_hold_t *h, const char *state,
    redisReply *decision);
static void ngx_bottle_hold_timeout(ngx_event_t *ev);
static void ngx_bottle_hold_withdraw(ngx_bottle_hold_t *h,
    const char *reason);
static void ngx_bottle_hold_withdrawn(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_hold_done(ngx_event_t *ev);
static void ngx_cdecl ngx_bottle_hold_finish(ngx_bottle_hold_t *h,
    ngx_int_t rc, const char *why, const char *fmt, ...);
static void ngx_bottle_hold_stop(ngx_bottle_hold_t *h, const char *why);
static ngx_uint_t ngx_bottle_hold_outcome(const char *why);
static void ngx_bottle_hold_free(ngx_bottle_hold_t *h);




ngx_bottle_hold_t *
ngx_bottle_hold_create(ngx_str_t *bottle, ngx_str_t *host, ngx_log_t *log)
{
    u_char             *p;
    ngx_bottle_hold_t  *h;

    h = ngx_calloc(sizeof(ngx_bottle_hold_t) + bottle->len + host->len,
                   log);
    if (h == NULL) {
        return NULL;
    }

    p = (u_char *) (h + 1);
    h->bottle.data = p;
    h->bottle.len = bottle->len;
    p = ngx_cpymem(p, bottle->data, bottle->len);
    h->host.data = p;
    h->host.len = host->len;
    ngx_memcpy(p, host->data, host->len);

    h->log = log;
    h->rc = NGX_DECLINED;

    return h;
}


/* NGX_AGAIN: held; NGX_DECLINED: refused at once, h->reason says why */

ngx_int_t
ngx_bottle_hold_start(ngx_bottle_hold_t *h)
{
    ngx_int_t                     rc;
    ngx_bottle_supervise_t       *s = &ngx_bottle_supervise;
    ngx_bottle_supervise_conf_t  *scf;

    if (!s->on) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "the operator is not reachable for this "
                               "bottle");
        return NGX_DECLINED;
    }

    scf = s->conf;

    if (!ngx_bottle_redis_ready(&s->cmd) || !s->subscribed) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "the operator is not reachable: the control "
                               "plane %s is unreachable", scf->name);
        return NGX_DECLINED;
    }

    rc = ngx_bottle_zone_held(&h->bottle, 1, h->body, scf->held,
                              (off_t) scf->held_body);

    if (rc == NGX_BUSY || rc == NGX_DECLINED) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_HELD_FULL);
    }

    if (rc == NGX_BUSY) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "too many requests held for the operator "
                               "(%ui for this bottle)", scf->held);
        return NGX_DECLINED;
    }

    if (rc == NGX_DECLINED) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "too many request bytes held for the "
                               "operator (%uz for this bottle)",
                               scf->held_body);
        return NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "no room in the bottle zone to count it");
        return NGX_DECLINED;
    }

    h->counted = 1;

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_HELD_TOTAL);
    ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_HELD, 1);

    if (ngx_bottle_hold_propose(h) != NGX_OK) {
        /* h->reason is set */
        return NGX_DECLINED;
    }

    h->timer.handler = ngx_bottle_hold_timeout;
    h->timer.data = h;
    h->timer.log = s->log;
    /* a graceful shutdown (a reload) waits for the answer too */
    h->timer.cancelable = 0;
    ngx_add_timer(&h->timer, scf->timeout);

    h->done.handler = ngx_bottle_hold_done;
    h->done.data = h;
    h->done.log = s->log;

    return NGX_AGAIN;
}


/*
 * The proposal: egress-token-allow {host, detector, location, digest,
 * rule}, never the value; and its decision.proposed event, which the
 * script journals (before anything else, for a bottle that requires it).
 */

static ngx_int_t
ngx_bottle_hold_propose(ngx_bottle_hold_t *h)
{
    char                    err[256], why[512], summary[256], created[32];
    char                    pmax[32];
    char                   *bottle, *host, *text, *event;
    char                    digest[sizeof("sha256:") + 64];
    size_t                  len;
    int64_t                 ms;
    json_t                 *args, *p;
    ngx_int_t               rc;
    ngx_time_t             *tp;
    const char             *maxlen, *argv[12];
    size_t                  argvlen[12];
    ngx_bottle_supervise_t *s = &ngx_bottle_supervise;

    tp = ngx_timeofday();
    ms = (int64_t) tp->sec * 1000 + tp->msec;

    ngx_memcpy(digest, "sha256:", 7);
    *ngx_hex_dump((u_char *) digest + 7, h->digest, 32) = '\0';

    bottle = ngx_alloc(h->bottle.len + 1 + h->host.len + 1, h->log);
    if (bottle == NULL) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL, "out of memory");
        return NGX_ERROR;
    }

    host = bottle + h->bottle.len + 1;
    *ngx_cpymem(bottle, h->bottle.data, h->bottle.len) = '\0';
    *ngx_cpymem(host, h->host.data, h->host.len) = '\0';

    ngx_snprintf((u_char *) why, sizeof(why) - 1,
                 "DLP found %s in the %s of a request to %s%Z", h->detector,
                 h->location, host);

    args = json_pack("{s:s, s:s, s:s, s:s, s:s}", "host", host, "detector",
                     h->detector, "location", h->location, "digest", digest,
                     "rule", h->rule);

    p = NULL;
    text = NULL;
    event = NULL;
    rc = NGX_ERROR;

    if (args == NULL || bottle_proposal_id(h->id, ms) != 0) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL, "out of memory");
        goto cleanup;
    }

    p = bottle_proposal_build(h->id, bottle,
                              BOTTLE_PROPOSAL_EGRESS_TOKEN_ALLOW, args, why,
                              ms, "egress", err, sizeof(err));
    if (p == NULL) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "the proposal could not be built: %s", err);
        goto cleanup;
    }

    bottle_proposal_summary(summary, sizeof(summary), p);

    text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    event = ngx_bottle_audit_proposed(&h->bottle, &h->host, h->id,
                                      "egress-token-allow", summary, why,
                                      &len, &maxlen);

    if (text == NULL || event == NULL) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL, "out of memory");
        goto cleanup;
    }

    ngx_snprintf((u_char *) created, sizeof(created) - 1, "%L%Z", ms);
    ngx_snprintf((u_char *) pmax, sizeof(pmax) - 1, "%d%Z",
                 BOTTLE_PROPOSAL_PENDING_MAX);

    argv[0] = "EVAL";
    argv[1] = bottle_proposal_propose_script;
    argv[2] = "0";
    argv[3] = h->id;
    argv[4] = bottle;
    argv[5] = "egress-token-allow";
    argv[6] = created;
    argv[7] = text;
    argv[8] = maxlen;
    argv[9] = event;
    /* the bottle's pending proposals of every source, counted by the
     * script (docs/control-plane.md); no bound of the kind */
    argv[10] = pmax;
    argv[11] = "";

    for (rc = 0; rc < 12; rc++) {
        argvlen[rc] = ngx_strlen(argv[rc]);
    }

    argvlen[9] = len;

    /* hiredis has copied the command when this returns */

    if (ngx_bottle_redis_command(&s->cmd, ngx_bottle_hold_proposed, h, 12,
                                 argv, argvlen)
        != NGX_OK)
    {
        ngx_bottle_hold_finish(h, NGX_DECLINED, NULL,
                               "the operator is not reachable: the control "
                               "plane %s is unreachable", s->conf->name);
        rc = NGX_ERROR;
        goto cleanup;
    }

    h->inflight++;
    h->state = NGX_BOTTLE_HOLD_PROPOSING;
    h->sn.node.key = ngx_crc32_short((u_char *) h->id, ngx_strlen(h->id));
    h->sn.str.data = (u_char *) h->id;
    h->sn.str.len = ngx_strlen(h->id);
    ngx_rbtree_insert(&s->holds, &h->sn.node);

    rc = NGX_OK;

cleanup:

    if (rc != NGX_OK) {
        /* nothing was queued under it */
        h->id[0] = '\0';
    }

    free(event);
    free(text);
    json_decref(p);
    json_decref(args);
    ngx_free(bottle);

    return rc;
}


static void
ngx_bottle_hold_proposed(redisAsyncContext *ac, void *r, void *privdata)
{
    size_t              n;
    redisReply         *reply = r;
    ngx_bottle_hold_t  *h = privdata;

    h->inflight--;

    if (h->gone) {
        ngx_bottle_hold_free(h);
        return;
    }

    if (h->state != NGX_BOTTLE_HOLD_PROPOSING) {
        return;
    }

    if (reply == NULL) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, "store lost",
                               "the control plane was lost before the "
                               "proposal was queued");
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        n = sizeof(BOTTLE_PROPOSAL_LIMIT_PENDING) - 1;

        if (reply->len > n
            && ngx_strncmp(reply->str, BOTTLE_PROPOSAL_LIMIT_PENDING, n) == 0)
        {
            /* answered as at the gateway's own bound: refused at once */
            ngx_bottle_hold_finish(h, NGX_DECLINED, "too many pending",
                                   "too many proposals waiting for the "
                                   "operator (%*s for this bottle, at most "
                                   "%d): wait for answers",
                                   ngx_min(reply->len - n, 20),
                                   reply->str + n,
                                   BOTTLE_PROPOSAL_PENDING_MAX);

        } else if (reply->len > 8
                   && ngx_strncmp(reply->str, "JOURNAL ", 8) == 0)
        {
            ngx_bottle_hold_finish(h, NGX_DECLINED, "not journalled",
                                   "the proposal could not be journalled, "
                                   "and the bottle requires it "
                                   "(audit.delivery \"required\"): %*s",
                                   ngx_min(reply->len - 8, 200),
                                   reply->str + 8);

        } else {
            ngx_bottle_hold_finish(h, NGX_DECLINED, "not queued",
                                   "the proposal was not queued: %*s",
                                   ngx_min(reply->len, 200), reply->str);
        }

        /* the script wrote nothing: there is no proposal to name */
        h->id[0] = '\0';
        return;
    }

    h->state = NGX_BOTTLE_HOLD_WAITING;

    ngx_bottle_log(NGX_LOG_NOTICE, h->log,
                   "bottle supervise: bottle=\"%V\" host=\"%V\" "
                   "detector=%s location=\"%s\" value=sha256:%*xs "
                   "proposal=%s held for the operator",
                   &h->bottle, &h->host, h->detector, h->location,
                   (size_t) 8, h->digest, h->id);

    /* else a decision that came meanwhile is read once subscribed again */

    if (h->recheck && ngx_bottle_supervise.subscribed) {
        ngx_bottle_hold_check(h);
    }
}


/* the proposal's state and decision */

void
ngx_bottle_hold_check(ngx_bottle_hold_t *h)
{
    u_char                   key[sizeof(BOTTLE_PROPOSAL_PREFIX)
                                 + BOTTLE_PROPOSAL_ID_LEN];
    const char              *argv[4];
    size_t                   argvlen[4];
    ngx_bottle_supervise_t  *s = &ngx_bottle_supervise;

    argv[0] = "HMGET";
    argv[1] = (char *) key;
    argv[2] = BOTTLE_PROPOSAL_F_STATE;
    argv[3] = BOTTLE_PROPOSAL_F_DECISION;

    argvlen[0] = 5;
    argvlen[1] = ngx_sprintf(key, BOTTLE_PROPOSAL_PREFIX "%s", h->id) - key;
    argvlen[2] = sizeof(BOTTLE_PROPOSAL_F_STATE) - 1;
    argvlen[3] = sizeof(BOTTLE_PROPOSAL_F_DECISION) - 1;

    if (ngx_bottle_redis_command(&s->cmd, ngx_bottle_hold_checked, h, 4,
                                 argv, argvlen)
        != NGX_OK)
    {
        /* read again when the connection is back */
        return;
    }

    h->inflight++;
}


static void
ngx_bottle_hold_checked(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply         *reply = r, *state;
    ngx_bottle_hold_t  *h = privdata;

    h->inflight--;

    if (h->gone) {
        ngx_bottle_hold_free(h);
        return;
    }

    if (h->state != NGX_BOTTLE_HOLD_WAITING || reply == NULL) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        return;
    }

    state = reply->element[0];

    if (state->type != REDIS_REPLY_STRING) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, "gone",
                               "the proposal %s is gone from the control "
                               "plane", h->id);
        return;
    }

    if (state->len == 7 && ngx_strncmp(state->str, "pending", 7) == 0) {
        return;
    }

    if (state->len == 8 && ngx_strncmp(state->str, "approved", 8) == 0) {
        ngx_bottle_hold_finish(h, NGX_OK, "approved", "approved");
        return;
    }

    ngx_bottle_hold_denied(h, state->str, reply->element[1]);
}


/* denied, or modified: the operator's note, cut, printable only */

static void
ngx_bottle_hold_denied(ngx_bottle_hold_t *h, const char *state,
    redisReply *decision)
{
    u_char        note[NGX_BOTTLE_SUPERVISE_NOTE + 1];
    size_t        n, i;
    json_t       *d;
    const char   *notes, *op;
    json_error_t  jerr;

    d = NULL;
    notes = NULL;
    op = NULL;

    if (decision->type == REDIS_REPLY_STRING) {
        d = json_loadb(decision->str, decision->len, 0, &jerr);
        notes = json_string_value(json_object_get(d, "notes"));
        op = json_string_value(json_object_get(d, "operator"));
    }

    n = 0;

    if (notes) {
        for (i = 0; notes[i] && n < NGX_BOTTLE_SUPERVISE_NOTE; i++) {
            note[n++] = (notes[i] >= 0x20 && notes[i] < 0x7f && notes[i] != '"')
                        ? (u_char) notes[i] : '?';
        }
    }

    note[n] = '\0';

    if (ngx_strcmp(state, "modified") == 0) {
        ngx_bottle_hold_finish(h, NGX_DECLINED, "modified",
                               "the operator%s%s answered with a "
                               "modification, which does not approve it%s%s",
                               op ? " " : "", op ? op : "",
                               n ? ": " : "", note);

    } else {
        ngx_bottle_hold_finish(h, NGX_DECLINED, "denied",
                               "the operator%s%s denied it%s%s",
                               op ? " " : "", op ? op : "",
                               n ? ": " : "", note);
    }

    json_decref(d);
}


static void
ngx_bottle_hold_timeout(ngx_event_t *ev)
{
    ngx_bottle_hold_t  *h = ev->data;

    ngx_bottle_hold_withdraw(h, "no answer from the operator in time: the "
                                "request was refused");

    ngx_bottle_hold_finish(h, NGX_DECLINED, "timeout",
                           "no answer from the operator within %M s",
                           ngx_bottle_supervise.conf->timeout / 1000);
}


/*
 * The request ends without a decision: its proposal expires, unless an
 * answer came first (the withdraw script decides, atomically).  Best
 * effort, on the command connection, after the propose script if that is
 * still in flight; nothing waits for the reply, so h may be freed first.
 */

static void
ngx_bottle_hold_withdraw(ngx_bottle_hold_t *h, const char *reason)
{
    char                     did[BOTTLE_AUDIT_RANDOM_LEN];
    char                    *decision, *event;
    size_t                   len;
    int64_t                  ms;
    json_t                  *d;
    ngx_time_t              *tp;
    const char              *maxlen, *argv[7];
    size_t                   argvlen[7];
    ngx_uint_t               i;
    ngx_bottle_supervise_t  *s = &ngx_bottle_supervise;

    if (h->id[0] == '\0'
        || (h->state != NGX_BOTTLE_HOLD_PROPOSING
            && h->state != NGX_BOTTLE_HOLD_WAITING))
    {
        return;
    }

    tp = ngx_timeofday();
    ms = (int64_t) tp->sec * 1000 + tp->msec;

    decision = NULL;
    event = NULL;
    d = NULL;

    if (bottle_audit_random_id(did) != 0) {
        goto failed;
    }

    d = bottle_decision_build(did, h->id, "expired", "egress", reason, ms,
                              NULL);
    decision = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    event = ngx_bottle_audit_expired(&h->bottle, &h->host, h->id, did,
                                     "egress-token-allow", reason, &len,
                                     &maxlen);

    if (decision == NULL || event == NULL) {
        goto failed;
    }

    argv[0] = "EVAL";
    argv[1] = bottle_proposal_withdraw_script;
    argv[2] = "0";
    argv[3] = h->id;
    argv[4] = decision;
    argv[5] = maxlen;
    argv[6] = event;

    for (i = 0; i < 7; i++) {
        argvlen[i] = ngx_strlen(argv[i]);
    }

    argvlen[6] = len;

    /* hiredis has copied the command when this returns */

    if (ngx_bottle_redis_command(&s->cmd, ngx_bottle_hold_withdrawn, NULL,
                                 7, argv, argvlen)
        == NGX_OK)
    {
        goto done;
    }

failed:

    ngx_bottle_log(NGX_LOG_WARN, s->log,
                   "bottle supervise: proposal=%s could not be withdrawn: "
                   "it stays pending", h->id);

done:

    free(event);
    free(decision);
    json_decref(d);
}


static void
ngx_bottle_hold_withdrawn(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply  *reply = r;

    if (reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_bottle_log(NGX_LOG_WARN, ngx_bottle_supervise.log,
                       "bottle supervise: a proposal could not be "
                       "withdrawn: %*s", ngx_min(reply->len, 200),
                       reply->str);
        return;
    }

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_INTEGER
        && reply->element[0]->integer == 1)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_CORE, ngx_bottle_supervise.log, 0,
                       "bottle supervise: proposal expired");
    }
}


/* the answer, posted: never from inside hiredis */

static void
ngx_bottle_hold_done(ngx_event_t *ev)
{
    ngx_bottle_hold_t  *h = ev->data;

    h->handler(h);
}


/*
 * The hold is over: out of the tree and the bound, the reason set, the
 * handler posted if it was waiting (why: the release's log line).
 */

static void ngx_cdecl
ngx_bottle_hold_finish(ngx_bottle_hold_t *h, ngx_int_t rc, const char *why,
    const char *fmt, ...)
{
    va_list     args;
    ngx_uint_t  waited;

    if (h->state == NGX_BOTTLE_HOLD_DONE) {
        return;
    }

    waited = (h->state != NGX_BOTTLE_HOLD_NEW);

    va_start(args, fmt);
    h->reason_len = ngx_vslprintf(h->reason, h->reason + sizeof(h->reason),
                                  fmt, args)
                    - h->reason;
    va_end(args);

    h->rc = rc;

    ngx_bottle_hold_stop(h, why);

    if (waited) {
        ngx_post_event(&h->done, &ngx_posted_events);
    }
}


/* the metric of a release, by the why its log line gives */

static ngx_uint_t
ngx_bottle_hold_outcome(const char *why)
{
    static const struct {
        const char  *why;
        ngx_uint_t   metric;
    } outcomes[] = {
        { "approved", NGX_BOTTLE_METRIC_HELD_APPROVED },
        { "denied", NGX_BOTTLE_METRIC_HELD_DENIED },
        { "modified", NGX_BOTTLE_METRIC_HELD_DENIED },  /* not as asked */
        { "timeout", NGX_BOTTLE_METRIC_HELD_TIMEOUT },
        { "the client went away", NGX_BOTTLE_METRIC_HELD_CLIENT_GONE },
        { "gone", NGX_BOTTLE_METRIC_HELD_EXPIRED },   /* from the store */
    };

    ngx_uint_t  i;

    for (i = 0; why && i < sizeof(outcomes) / sizeof(outcomes[0]); i++) {
        if (ngx_strcmp(why, outcomes[i].why) == 0) {
            return outcomes[i].metric;
        }
    }

    return NGX_BOTTLE_METRIC_HELD_FAILED;
}


static void
ngx_bottle_hold_stop(ngx_bottle_hold_t *h, const char *why)
{
    ngx_bottle_supervise_t  *s = &ngx_bottle_supervise;

    if (h->state == NGX_BOTTLE_HOLD_PROPOSING
        || h->state == NGX_BOTTLE_HOLD_WAITING)
    {
        ngx_rbtree_delete(&s->holds, &h->sn.node);
    }

    if (h->timer.timer_set) {
        ngx_del_timer(&h->timer);
    }

    if (h->counted) {
        (void) ngx_bottle_zone_held(&h->bottle, -1, h->body, 0, 0);
        h->counted = 0;

        ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_HELD, -1);
        ngx_bottle_metrics_count(ngx_bottle_hold_outcome(why));
    }

    if (why && h->state != NGX_BOTTLE_HOLD_NEW) {
        ngx_bottle_log(NGX_LOG_NOTICE, h->log,
                       "bottle supervise: bottle=\"%V\" host=\"%V\" "
                       "proposal=%s released: %s", &h->bottle, &h->host,
                       h->id, why);
    }

    h->state = NGX_BOTTLE_HOLD_DONE;
}


/* the caller is done with it (answered, or the client went away) */

void
ngx_bottle_hold_release(ngx_bottle_hold_t *h)
{
    ngx_bottle_hold_release_as(h, "the client went away while the request "
                                  "was held");
}


/* the same, its withdrawal saying why the request ended (a revocation) */

void
ngx_bottle_hold_release_as(ngx_bottle_hold_t *h, const char *reason)
{
    if (h->state != NGX_BOTTLE_HOLD_DONE) {
        ngx_bottle_hold_withdraw(h, reason);
        ngx_bottle_hold_stop(h, "the client went away");
    }

    if (h->done.posted) {
        ngx_delete_posted_event(&h->done);
    }

    h->gone = 1;

    ngx_bottle_hold_free(h);
}


static void
ngx_bottle_hold_free(ngx_bottle_hold_t *h)
{
    if (h->inflight == 0) {
        ngx_free(h);
    }
}
