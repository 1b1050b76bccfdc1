/*
 * gitleaks-allow (docs/gitgate.md, "Marked lines"): a token shape on a line
 * marked "gitleaks:allow" is never let through on the marker alone.  The
 * push is refused and a gitleaks-allow proposal queued for the operator
 * (the value only as its digest); once approved, the decide script has put
 * "<repo> <rule> <digest>" on the bottle's BOTTLE_GITLEAKS_ALLOWED set, and
 * the same marked value in the same repo passes the next push's scan.
 */

#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bottle_proposal.h"
#include "gg_gate.h"
#include "gg_hook.h"


/* "<repo> <rule> <digest>", the allow set's member */
static int
gg_allow_member(char **out, const gg_ctx_t *ctx, const gg_finding_t *f)
{
    if (asprintf(out, "%s %s %s", ctx->name, f->rule, f->digest) < 0) {
        *out = NULL;
        return -1;
    }

    return 0;
}


int
gg_allow_check(gg_ctx_t *ctx, gg_report_t *r, char *err, size_t errlen)
{
    int            in, left;
    char          *key, *member;
    size_t         i;
    gg_finding_t  *f;

    if (asprintf(&key, "%s%s", BOTTLE_GITLEAKS_ALLOWED, ctx->bottle_id) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    left = 0;

    for (i = 0; i < r->n; i++) {
        f = &r->f[i];

        if (f->outcome != GG_NEEDS_ALLOW) {
            left++;
            continue;
        }

        if (gg_allow_member(&member, ctx, f) != 0) {
            snprintf(err, errlen, "out of memory");
            free(key);
            return -1;
        }

        if (gg_store_sismember(&in, ctx->store, key, member, err, errlen)
            != 0)
        {
            free(member);
            free(key);
            return -1;
        }

        free(member);

        f->allowed = in;
        left += !in;
    }

    free(key);
    return left;
}


/* one finding's proposal: the pending one of the same value, or a new one */

static int
gg_allow_one(gg_ctx_t *ctx, const gg_finding_t *f, char *id, char *state,
    int *queued, long long *pending, char *err, size_t errlen)
{
    int                        rc;
    char                       host[128], gw[192], why[1024];
    json_t                    *match, *args;
    bottle_proposal_queued_t   q;
    bottle_proposal_origin_t   o;

    static uint64_t            seq;

    *queued = 0;
    args = NULL;
    rc = -1;

    match = json_pack("{s:s, s:s, s:s}", "repo", ctx->name, "rule", f->rule,
                      "digest", f->digest);
    if (match == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    args = json_deep_copy(match);
    if (args == NULL
        || json_object_set_new(args, "commit", json_string(f->commit)) != 0
        || json_object_set_new(args, "line", json_integer((json_int_t) f->line))
           != 0
        || (f->file
            && json_object_set_new(args, "file", json_string(f->file)) != 0))
    {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto cleanup;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "git-gate");
    }
    host[sizeof(host) - 1] = '\0';
    snprintf(gw, sizeof(gw), "%s:%ld", host, (long) getpid());

    memset(&o, 0, sizeof(o));
    o.producer = "git-gate";
    o.gateway = gw;
    o.seq = ++seq;

    /* the bottle's pending proposals of every source, counted where it is
     * queued (so two pushes at once cannot pass it together) */
    o.pending_max = BOTTLE_PROPOSAL_PENDING_MAX;

    /* one waiting already, or denied: no other proposal of it (looked for
     * in the script that queues, so two pushes at once queue one) */
    o.unless = match;
    o.unless_states = "pending,denied";

    snprintf(why, sizeof(why), "git-gate found %s on a line marked "
             "gitleaks:allow in a push to %s (%s)", f->rule, ctx->name,
             f->where);

    memset(&q, 0, sizeof(q));

    rc = bottle_proposal_propose(&q, gg_store_redis(ctx->store),
                                 ctx->bottle_id,
                                 BOTTLE_PROPOSAL_GITLEAKS_ALLOW, args, why,
                                 &o, err, errlen);

    if (rc == BOTTLE_PROPOSAL_EPENDING) {
        /* at the bound: nothing queued for it */
        *pending = q.count;
        state[0] = '\0';
        rc = 0;
        goto cleanup;
    }

    if (rc != 0) {
        rc = -1;
        goto cleanup;
    }

    memcpy(id, q.id, BOTTLE_PROPOSAL_ID_LEN);
    strcpy(state, q.state[0] ? q.state : "pending");
    *queued = q.state[0] == '\0';

cleanup:

    json_decref(args);
    json_decref(match);
    return rc;
}


int
gg_allow_propose(gg_ctx_t *ctx, const gg_report_t *r, char *err,
    size_t errlen)
{
    int                  queued, waiting;
    char                 id[BOTTLE_PROPOSAL_ID_LEN];
    char                 state[BOTTLE_PROPOSAL_STATE_LEN];
    size_t               i, over;
    long long            pending;
    const gg_finding_t  *f;

    waiting = 0;
    over = 0;
    pending = 0;

    for (i = 0; i < r->n; i++) {
        f = &r->f[i];

        if (f->outcome != GG_NEEDS_ALLOW || f->allowed) {
            continue;
        }

        /* one finding per value (gg_add_finding()): one proposal */

        if (gg_allow_one(ctx, f, id, state, &queued, &pending, err, errlen)
            != 0)
        {
            return -1;
        }

        if (state[0] == '\0') {
            over++;
            gg_report_marked(f, "needs gitleaks-allow approval, not asked");
            fprintf(stderr, "  the line is marked gitleaks:allow; the "
                    "operator is not asked: too many proposals pending\n");
            continue;
        }

        if (strcmp(state, "denied") == 0) {
            gg_report_marked(f, "gitleaks-allow denied");
            fprintf(stderr, "  the operator denied this value (proposal %s); "
                    "remove it from the commits that carry it\n", id);
            continue;
        }

        waiting++;
        gg_report_marked(f, "needs gitleaks-allow approval");
        fprintf(stderr, "  the line is marked gitleaks:allow; the operator is "
                "asked (proposal %s%s)\n", id,
                queued ? "" : ", already waiting");
    }

    if (over) {
        fprintf(stderr, "git-gate refused this push (rule: %s)\n"
                "  this bottle has %lld proposals pending, at most %d "
                "(supervise's tools, held requests and gitleaks-allow "
                "together): %zu marked value%s not put to the operator; "
                "wait for the operator to answer the pending ones, then "
                "push again\n", GG_PENDING_RULE, pending,
                BOTTLE_PROPOSAL_PENDING_MAX, over,
                over == 1 ? " was" : "s were");
        return 1;
    }

    if (waiting) {
        fprintf(stderr, "git-gate: push again once the operator has "
                "approved; a denied value stays refused: then remove it "
                "from the commits that carry it\n");
    }

    return 0;
}
