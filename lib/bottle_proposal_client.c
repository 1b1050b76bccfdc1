/*
 * Proposals over a synchronous hiredis connection (bottle_proposal.h,
 * "over a hiredis connection"): queue one, check one, count a bottle's.
 * bottlectl and supervise-helper run the same code, so a proposal and its
 * decision.proposed event look the same whoever queued them.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "bottle_audit.h"
#include "bottle_audit_chain.h"
#include "bottle_proposal.h"
#include "bottle_util.h"


static int bottle_proposal_reply_error(const redisContext *c,
    const redisReply *r, char *err, size_t errlen);
static char *bottle_proposal_event(const json_t *p, const char *id,
    const char *bottle, bottle_proposal_kind_e kind,
    const char *justification, const bottle_proposal_origin_t *origin);
static const char *bottle_proposal_str(const redisReply *r, size_t i);
static int64_t bottle_proposal_now(void);


/*
 * The bottle's index walked once: a bottle's proposals are few (the
 * producers bound the pending ones), and the answered ones are kept, so
 * this is linear in its history.
 */
int
bottle_proposal_propose(bottle_proposal_queued_t *out, redisContext *c,
    const char *bottle, bottle_proposal_kind_e kind, const json_t *args,
    const char *justification, const bottle_proposal_origin_t *origin,
    char *err, size_t errlen)
{
    int          rc;
    int          ac;
    char        *n;
    char         created[32], maxlen[32], pmax[32], kmax[32], *text, *event;
    char        *unless;
    json_t      *p;
    redisReply  *r;
    const char  *av[14], *name;

    text = NULL;
    event = NULL;
    unless = NULL;
    r = NULL;
    rc = BOTTLE_PROPOSAL_EINVALID;

    name = bottle_proposal_kind_name(kind);
    if (name == NULL) {
        return bottle_errf(err, errlen, "unknown kind");
    }

    out->journal_err[0] = '\0';
    out->state[0] = '\0';
    out->created_ms = bottle_proposal_now();

    if (out->id[0] == '\0'
        && bottle_proposal_id(out->id, out->created_ms) != 0)
    {
        return bottle_errf(err, errlen, "cannot make a proposal id");
    }

    p = bottle_proposal_build(out->id, bottle, kind, args, justification,
                              out->created_ms, origin->producer, err,
                              errlen);
    if (p == NULL) {
        return BOTTLE_PROPOSAL_EINVALID;
    }

    text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    event = bottle_proposal_event(p, out->id, bottle, kind, justification,
                                  origin);

    if (text == NULL || event == NULL) {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    if (strlen(text) > BOTTLE_PROPOSAL_JSON_MAX) {
        bottle_errf(err, errlen, "larger than %d bytes",
                    BOTTLE_PROPOSAL_JSON_MAX);
        goto cleanup;
    }

    snprintf(created, sizeof(created), "%lld", (long long) out->created_ms);
    snprintf(maxlen, sizeof(maxlen), "%llu",
             origin->stream_max ? origin->stream_max
                                : BOTTLE_PROPOSAL_STREAM_MAX);

    av[0] = "EVAL";
    av[1] = bottle_proposal_propose_script;
    av[2] = "0";
    av[3] = out->id;
    av[4] = bottle;
    av[5] = name;
    av[6] = created;
    av[7] = text;
    av[8] = maxlen;
    av[9] = event;
    ac = 10;

    if (origin->pending_max > 0 || origin->kind_max > 0 || origin->unless) {
        pmax[0] = '\0';
        kmax[0] = '\0';
        if (origin->pending_max > 0) {
            snprintf(pmax, sizeof(pmax), "%lld", origin->pending_max);
        }
        if (origin->kind_max > 0) {
            snprintf(kmax, sizeof(kmax), "%lld", origin->kind_max);
        }
        av[10] = pmax;
        av[11] = kmax;
        ac = 12;
    }

    if (origin->unless) {
        unless = json_dumps(origin->unless, JSON_COMPACT);
        if (unless == NULL) {
            bottle_errf(err, errlen, "out of memory");
            goto cleanup;
        }
        av[12] = unless;
        av[13] = origin->unless_states ? origin->unless_states : "";
        ac = 14;
    }

    r = redisCommandArgv(c, ac, av, NULL);

    rc = bottle_proposal_reply_error(c, r, err, errlen);
    if (rc != 0) {
        if (rc == BOTTLE_PROPOSAL_ESTORE
            && strncmp(r->str, "NOBOTTLE ", 9) == 0)
        {
            bottle_errf(err, errlen, "%s", r->str + 9);
            rc = BOTTLE_PROPOSAL_ENOBOTTLE;

        } else if (rc == BOTTLE_PROPOSAL_ESTORE
                   && strncmp(r->str, "LIMIT ", 6) == 0)
        {
            rc = strncmp(r->str + 6, "kind ", 5) == 0
                 ? BOTTLE_PROPOSAL_EKIND : BOTTLE_PROPOSAL_EPENDING;
            n = strrchr(r->str, ' ');
            out->count = strtoll(n + 1, NULL, 10);
            bottle_errf(err, errlen, "%s", r->str + 6);

        } else if (rc == BOTTLE_PROPOSAL_ESTORE
                   && strncmp(r->str, "JOURNAL ", 8) == 0)
        {
            bottle_errf(err, errlen, "%s", r->str + 8);
            rc = BOTTLE_PROPOSAL_EJOURNAL;
        }

        goto cleanup;
    }

    /* [id, journal error], or [id of the match, "", its state] */

    if (r->type != REDIS_REPLY_ARRAY
        || (r->elements != 2
            && (r->elements != 3 || origin->unless == NULL
                || strlen(bottle_proposal_str(r, 0)) >= BOTTLE_PROPOSAL_ID_LEN
                || strlen(bottle_proposal_str(r, 2))
                   >= BOTTLE_PROPOSAL_STATE_LEN
                || bottle_proposal_str(r, 2)[0] == '\0')))
    {
        bottle_errf(err, errlen, "unexpected reply from the store to the "
                    "propose script");
        rc = BOTTLE_PROPOSAL_ESTORE;
        goto cleanup;
    }

    if (r->elements == 3) {
        strcpy(out->id, bottle_proposal_str(r, 0));
        strcpy(out->state, bottle_proposal_str(r, 2));
    }

    snprintf(out->journal_err, sizeof(out->journal_err), "%s",
             bottle_proposal_str(r, 1));
    rc = 0;

cleanup:

    if (r) {
        freeReplyObject(r);
    }

    free(unless);
    free(event);
    free(text);
    json_decref(p);

    return rc;
}


/* decision.proposed, as every producer journals it */

static char *
bottle_proposal_event(const json_t *p, const char *id, const char *bottle,
    bottle_proposal_kind_e kind, const char *justification,
    const bottle_proposal_origin_t *origin)
{
    char                  summary[256], eid[256];
    size_t                len;
    const char           *gw;
    bottle_audit_event_t  e;

    bottle_proposal_summary(summary, sizeof(summary), p);

    gw = origin->gateway ? origin->gateway : "";
    justification = justification ? justification : "";

    memset(&e, 0, sizeof(e));
    e.type = BOTTLE_AUDIT_PROPOSED;
    e.producer = origin->producer;
    e.time_ms = bottle_proposal_now();
    e.gateway.data = gw;
    e.gateway.len = strlen(gw);
    e.id.data = eid;
    e.id.len = bottle_audit_id(eid, sizeof(eid), gw, strlen(gw), e.time_ms,
                               origin->seq);
    e.bottle.data = bottle;
    e.bottle.len = strlen(bottle);
    e.host.data = json_string_value(
                      json_object_get(json_object_get(p, "args"), "host"));
    e.host.len = e.host.data ? strlen(e.host.data) : 0;
    e.correlation_id.data = id;
    e.correlation_id.len = strlen(id);
    e.kind.data = bottle_proposal_kind_name(kind);
    e.kind.len = strlen(e.kind.data);
    e.summary.data = summary;
    e.summary.len = strlen(summary);
    e.justification.data = justification;
    e.justification.len = strlen(justification);

    return bottle_audit_chained(&e, &len);
}


int
bottle_proposal_check(json_t **out, redisContext *c, const char *bottle,
    const char *id, char *err, size_t errlen)
{
    int          rc;
    json_t      *p, *d;
    redisReply  *r;
    const char  *av[5];

    *out = NULL;

    av[0] = "EVAL";
    av[1] = bottle_proposal_check_script;
    av[2] = "0";
    av[3] = bottle;
    av[4] = id;

    r = redisCommandArgv(c, 5, av, NULL);

    rc = bottle_proposal_reply_error(c, r, err, errlen);
    if (rc != 0) {
        goto cleanup;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        bottle_errf(err, errlen, "no proposal \"%s\" of bottle \"%s\"", id,
                    bottle);
        rc = BOTTLE_PROPOSAL_ENONE;
        goto cleanup;
    }

    /* json_pack's "o" steals both, NULL included (then it fails) */

    p = json_loads(bottle_proposal_str(r, 1), 0, NULL);
    d = bottle_proposal_str(r, 2)[0]
        ? json_loads(bottle_proposal_str(r, 2), 0, NULL) : json_null();

    *out = json_pack("{s:s, s:o, s:o}", "state", bottle_proposal_str(r, 0),
                     "proposal", p, "decision", d);
    if (*out == NULL) {
        bottle_errf(err, errlen, "the stored proposal is invalid");
        rc = BOTTLE_PROPOSAL_ESTORE;
    }

cleanup:

    if (r) {
        freeReplyObject(r);
    }

    return rc;
}


/* no reply (ELOST), NOAUTH (ELOST: not reachable for us), an error reply
 * (ESTORE), or 0 */

static int
bottle_proposal_reply_error(const redisContext *c, const redisReply *r,
    char *err, size_t errlen)
{
    if (r == NULL) {
        bottle_errf(err, errlen, "%s",
                    c->err ? c->errstr : "connection lost");
        return BOTTLE_PROPOSAL_ELOST;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOAUTH", 6) == 0) {
            bottle_errf(err, errlen, "authentication required");
            return BOTTLE_PROPOSAL_ELOST;
        }

        bottle_errf(err, errlen, "%s", r->str);
        return BOTTLE_PROPOSAL_ESTORE;
    }

    return 0;
}


static const char *
bottle_proposal_str(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements
        || r->element[i]->type != REDIS_REPLY_STRING)
    {
        return "";
    }

    return r->element[i]->str;
}


static int64_t
bottle_proposal_now(void)
{
    struct timeval  tv;

    gettimeofday(&tv, NULL);

    return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}
