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

#include "bottle_audit_chain.h"
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
bottle_decision_event_arg(bottle_audit_event_t *e, const char *producer,
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

    return bottle_audit_chained(e, len);
}


/* a grant naming the proposal's repo ("repo" of its args), no more write
 * than may be given */

static int
bottle_decision_repo_check(const json_t *proposal, const json_t *grant,
    int write_ok, char *err, size_t errlen)
{
    char           e[256];
    const char    *s, *asked;
    const json_t  *args;
    bottle_repo_t  want, got;

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

    want.write |= json_is_true(json_object_get(args, "write")) || write_ok;

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


/* {"forge": the forge of the proposal's url, "account": its account} */

static int
bottle_decision_forge_check(const json_t *proposal, const json_t *grant,
    char *err, size_t errlen)
{
    char          name[BOTTLE_FORGE_NAME_MAX + 1], e[256];
    size_t        i;
    const char   *forge, *account, *url;

    forge = json_string_value(json_object_get(grant, "forge"));
    account = json_string_value(json_object_get(grant, "account"));

    if (!json_is_object(grant) || forge == NULL || account == NULL
        || json_object_size(grant) != 2)
    {
        return bottle_errf(err, errlen, "not a forge grant {\"forge\": "
                           "\"<forge>\", \"account\": \"<account>\"}");
    }

    if (account[0] == '\0' || strlen(account) > BOTTLE_FORGE_ACCOUNT_MAX) {
        return bottle_errf(err, errlen, "account: 1 to %d bytes",
                           BOTTLE_FORGE_ACCOUNT_MAX);
    }

    for (i = 0; account[i]; i++) {
        if ((unsigned char) account[i] < 0x20 || account[i] == 0x7f) {
            return bottle_errf(err, errlen, "account: no control bytes");
        }
    }

    url = json_string_value(json_object_get(json_object_get(proposal,
                                                            "args"), "url"));

    if (url == NULL || bottle_forge_url_name(name, url, e, sizeof(e)) != 0) {
        return bottle_errf(err, errlen, "the proposal's url is invalid: %s",
                           url ? e : "none");
    }

    if (strcmp(forge, name) != 0) {
        return bottle_errf(err, errlen, "forge: a forge-connect is answered "
                           "with the forge of its own url (%s)", name);
    }

    return 0;
}


/* a launch spec: the proposal's own values, its bottles or fewer */

static int
bottle_decision_launch_check(const json_t *proposal, const json_t *grant,
    char *err, size_t errlen)
{
    size_t        i, j;
    const char   *key, *s;
    const json_t *args, *v, *asked, *b;

    static const char  *same[] = { "agent", "prompt", "label", NULL };

    if (!json_is_object(grant)) {
        return bottle_errf(err, errlen, "not a launch spec {\"agent\", "
                           "\"prompt\", \"bottles\", \"label\"}");
    }

    args = json_object_get(proposal, "args");

    json_object_foreach((json_t *) grant, key, v) {
        if (strcmp(key, "bottles") == 0) {
            continue;
        }

        for (i = 0; same[i]; i++) {
            if (strcmp(key, same[i]) == 0) {
                break;
            }
        }

        if (same[i] == NULL) {
            return bottle_errf(err, errlen, "launch: unknown field \"%s\" "
                               "(agent, prompt, bottles, label)", key);
        }

        if (!json_equal((json_t *) v, json_object_get(args, key))) {
            return bottle_errf(err, errlen, "launch: %s is the proposal's; "
                               "only bottles can be trimmed", key);
        }
    }

    b = json_object_get(grant, "bottles");
    if (b == NULL) {
        return 0;
    }

    if (!json_is_array(b)) {
        return bottle_errf(err, errlen, "launch: bottles is an array of "
                           "names");
    }

    asked = json_object_get(args, "bottles");

    for (i = 0; i < json_array_size(b); i++) {
        s = json_string_value(json_array_get(b, i));

        if (s == NULL) {
            return bottle_errf(err, errlen, "launch: bottles is an array of "
                               "names");
        }

        for (j = 0; j < i; j++) {
            if (strcmp(s, json_string_value(json_array_get(b, j))) == 0) {
                return bottle_errf(err, errlen, "launch: bottle \"%s\" "
                                   "named twice", s);
            }
        }

        for (j = 0; j < json_array_size(asked); j++) {
            if (json_is_string(json_array_get(asked, j))
                && strcmp(s, json_string_value(json_array_get(asked, j)))
                   == 0)
            {
                break;
            }
        }

        if (j == json_array_size(asked)) {
            return bottle_errf(err, errlen, "launch: bottle \"%s\" is not "
                               "one the proposal asked for", s);
        }
    }

    return 0;
}


json_t *
bottle_decision_launch(const json_t *proposal, const json_t *grant)
{
    json_t        *o, *b;
    const json_t  *args;

    args = json_object_get(proposal, "args");
    b = json_object_get(grant, "bottles");
    if (b == NULL) {
        b = json_object_get(args, "bottles");
    }

    /* O*: a field the proposal had not is left out; the parent and what
       is beyond it are supervise's, for whatever launches the child */
    o = json_pack("{s:O*, s:O*, s:O*, s:O*, s:O*, s:O*}",
                  "agent", json_object_get(args, "agent"),
                  "prompt", json_object_get(args, "prompt"),
                  "bottles", b,
                  "label", json_object_get(args, "label"),
                  "parent", json_object_get(proposal, "bottle"),
                  "removed", json_object_get(args, "removed"));

    return o;
}


int
bottle_decision_grant_check(bottle_proposal_kind_e kind,
    const json_t *proposal, const json_t *grant, char *err, size_t errlen)
{
    switch (kind) {

    case BOTTLE_PROPOSAL_EGRESS_ALLOW:
        if (!json_is_object(grant)
            || json_string_value(json_object_get(grant, "host")) == NULL)
        {
            return bottle_errf(err, errlen, "not a route object with a "
                               "\"host\"");
        }

        return 0;

    case BOTTLE_PROPOSAL_ADD_REPO:
        return bottle_decision_repo_check(proposal, grant, 0, err, errlen);

    case BOTTLE_PROPOSAL_CREATE_REPO:
        return bottle_decision_repo_check(proposal, grant, 1, err, errlen);

    case BOTTLE_PROPOSAL_FORGE_CONNECT:
        return bottle_decision_forge_check(proposal, grant, err, errlen);

    case BOTTLE_PROPOSAL_LAUNCH_BOTTLE:
        return bottle_decision_launch_check(proposal, grant, err, errlen);

    default:
        return bottle_errf(err, errlen, "a %s proposal takes no grant",
                           bottle_proposal_kind_name(kind));
    }
}
