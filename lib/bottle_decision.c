/*
 * What an operator's answer needs without a store connection
 * (bottle_decision.h): a grant checked against its proposal, an audit
 * event's id, time and gateway.  The unit tests link this; the answer
 * itself, over hiredis, is bottle_proposal_decide.c.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "bottle_decision.h"
#include "bottle_forge.h"
#include "bottle_util.h"


static unsigned long  bottle_decision_counter;


int64_t
bottle_decision_now(void)
{
    struct timeval  tv;

    gettimeofday(&tv, NULL);

    return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}


char *
bottle_decision_event_json(bottle_audit_event_t *e, const char *producer,
    size_t *len)
{
    char  host[128], gw[160], id[256];

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, producer ? producer : "bottlectl");
    }

    host[sizeof(host) - 1] = '\0';
    snprintf(gw, sizeof(gw), "%s:%ld", host, (long) getpid());

    e->time_ms = bottle_decision_now();
    e->gateway.data = gw;
    e->gateway.len = strlen(gw);
    e->id.data = id;

    /* the operator page answers from several threads */
    e->id.len = bottle_audit_id(id, sizeof(id), gw, strlen(gw), e->time_ms,
                    __sync_add_and_fetch(&bottle_decision_counter, 1));

    if (e->producer == NULL) {
        e->producer = producer ? producer : "bottlectl";
    }

    return bottle_audit_json(e, len);
}


int
bottle_decision_grant_check(bottle_proposal_kind_e kind,
    const json_t *proposal, const json_t *grant, char *err, size_t errlen)
{
    char           e[256];
    const char    *s, *asked;
    const json_t  *args;
    bottle_repo_t  want, got;

    if (kind == BOTTLE_PROPOSAL_EGRESS_ALLOW) {
        if (!json_is_object(grant)
            || json_string_value(json_object_get(grant, "host")) == NULL)
        {
            return bottle_errf(err, errlen, "not a route object with a "
                               "\"host\"");
        }

        return 0;
    }

    if (kind != BOTTLE_PROPOSAL_ADD_REPO) {
        return bottle_errf(err, errlen, "a %s proposal takes no grant",
                           bottle_proposal_kind_name(kind));
    }

    s = json_string_value(json_object_get(grant, "repo"));

    if (!json_is_object(grant) || s == NULL || json_object_size(grant) != 1)
    {
        return bottle_errf(err, errlen, "not a repo grant {\"repo\": "
                           "\"<forge>/<owner>/<repo>[:write]\"}");
    }

    if (bottle_repo_parse(&got, s, strlen(s), 1, e, sizeof(e)) != 0) {
        return bottle_errf(err, errlen, "repo: %s", e);
    }

    args = json_object_get(proposal, "args");
    asked = json_string_value(json_object_get(args, "repo"));

    if (asked == NULL
        || bottle_repo_parse(&want, asked, strlen(asked), 1, e, sizeof(e))
           != 0)
    {
        return bottle_errf(err, errlen, "the proposal's repo is invalid: %s",
                           asked ? e : "none");
    }

    want.write |= json_is_true(json_object_get(args, "write"));

    if (!bottle_repo_same(&got, &want)) {
        return bottle_errf(err, errlen, "repo: a grant names the repo the "
                           "agent asked for (%s/%s/%s)", want.forge,
                           want.owner, want.repo);
    }

    if (got.write && !want.write) {
        return bottle_errf(err, errlen, "repo: the agent asked for read "
                           "access; a grant gives no more than was asked");
    }

    return 0;
}
