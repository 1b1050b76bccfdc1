/*
 * The forge tools (docs/supervise.md): forge-connect, add-repo and
 * create-repo, each checked against the forges the gateway has connected
 * (sv_forge.c asks the forge) before its proposal is queued; a create
 * the bottle's git_gate.actions.create allows made at once, no card.
 */

#define _POSIX_C_SOURCE  200809L

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>

#include "bottle_forge.h"
#include "bottle_forge_client.h"
#include "supervise.h"
#include "sv_tools_int.h"


static json_t *sv_create_allowed(sv_tool_t *t, const bottle_repo_t *repo,
    const bottle_repo_pattern_t *by, json_t *args);
static json_t *sv_repo_check(sv_tool_t *t, bottle_repo_t *repo,
    int with_mode);


/*
 * forge-connect: an https URL of a forge; a well-known host of another
 * kind is refused, a URL with credentials in it too.
 */

json_t *
sv_forge_connect(sv_tool_t *t)
{
    int             bad;
    char            forge[BOTTLE_FORGE_NAME_MAX + 8];
    char            probe[BOTTLE_FORGE_NAME_MAX + 16];
    size_t          n, i;
    json_t         *args;
    const char     *url, *other, *a;
    bottle_repo_t   repo;

    bad = 0;
    url = sv_string(t->in, "url", &bad);

    if (url == NULL || bad) {
        return sv_refuse(t, "url: a string is required (https://host/)");
    }

    if (strncasecmp(url, "https://", 8) != 0) {
        return sv_refuse(t, "url: only an https URL of a forge can be "
                         "connected (https://host/)");
    }

    a = url + 8;
    n = strcspn(a, "/?#");

    if (memchr(a, '@', n)) {
        return sv_refuse(t, "url: no user or token in the URL: the "
                         "operator gives the token, never the agent");
    }

    if (n == 0 || n > BOTTLE_FORGE_NAME_MAX) {
        return sv_refuse(t, "url: no valid host in it");
    }

    for (i = 0; i < n; i++) {
        forge[i] = (char) tolower((unsigned char) a[i]);
    }

    forge[n] = '\0';

    /* the forge's name as a grant names it: the grant's own grammar */

    snprintf(probe, sizeof(probe), "%s/o/r", forge);

    if (bottle_repo_parse(&repo, probe, strlen(probe), 0, t->err,
                          sizeof(t->err)) != 0)
    {
        return sv_refuse(t, "url: '%s' is not a valid forge host", forge);
    }

    other = bottle_forge_other_kind(forge);
    if (other) {
        return sv_refuse(t, "%s runs %s: the gateway serves Gitea and GitHub "
                         "forges only", forge, other);
    }

    args = json_pack("{s:s}", "url", url);
    if (args == NULL) {
        return sv_refuse(t, "url: not UTF-8");
    }

    if (sv_forge_probe(forge, t->err, sizeof(t->err)) != 0) {
        json_decref(args);
        return sv_refuse(t, "%s", t->err);
    }

    return sv_queue(t, BOTTLE_PROPOSAL_FORGE_CONNECT, args, -1, NULL);
}


/*
 * A grant "<forge>/<owner>/<repo>[:write]" on a forge the gateway has
 * connected: NULL when it is one, else the refusal.
 */

static json_t *
sv_repo_check(sv_tool_t *t, bottle_repo_t *repo, int with_mode)
{
    int            bad;
    const char    *s, *other;
    redisReply    *r;

    bad = 0;
    s = sv_string(t->in, "repo", &bad);

    if (s == NULL || bad) {
        return sv_refuse(t, "repo: a string is required "
                         "(<forge>/<owner>/<repo>%s)",
                         with_mode ? "[:write]" : "");
    }

    if (bottle_repo_parse(repo, s, strlen(s), with_mode, t->err,
                          sizeof(t->err)) != 0)
    {
        return sv_refuse(t, "repo: %s", t->err);
    }

    other = bottle_forge_other_kind(repo->forge);
    if (other) {
        return sv_refuse(t, "%s runs %s: the gateway serves Gitea and GitHub "
                         "forges only", repo->forge, other);
    }

    r = sv_store_read(t->err, sizeof(t->err), "SISMEMBER %s %s",
                      BOTTLE_FORGES, repo->forge);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        if (r) {
            freeReplyObject(r);
        }
        return sv_refuse(t, "cannot read the connected forges from the "
                         "store");
    }

    bad = r->integer == 0;
    freeReplyObject(r);

    if (bad) {
        return sv_refuse(t, "forge %s is not connected to this gateway: ask "
                         "for it with forge-connect (https://%s/) first",
                         repo->forge, repo->forge);
    }

    return NULL;
}


json_t *
sv_add_repo(sv_tool_t *t)
{
    char            name[BOTTLE_FORGE_NAME_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX
                         + 8];
    json_t         *refused;
    bottle_repo_t   repo;

    refused = sv_repo_check(t, &repo, 1);
    if (refused) {
        return refused;
    }

    snprintf(name, sizeof(name), "%s/%s/%s", repo.forge, repo.owner,
             repo.repo);

    return sv_queue(t, BOTTLE_PROPOSAL_ADD_REPO,
                    json_pack("{s:s, s:b}", "repo", name, "write",
                              repo.write),
                    -1, NULL);
}


json_t *
sv_create_repo(sv_tool_t *t)
{
    int                           public_repo;
    char                          name[BOTTLE_FORGE_NAME_MAX
                                       + 2 * BOTTLE_REPO_SEGMENT_MAX + 8];
    json_t                       *refused, *pub, *args;
    bottle_repo_t                 repo;
    const bottle_repo_pattern_t  *by;

    pub = json_object_get(t->in, "public");
    if (pub && !json_is_null(pub) && !json_is_boolean(pub)) {
        return sv_refuse(t, "public: true or false");
    }

    refused = sv_repo_check(t, &repo, 0);
    if (refused) {
        return refused;
    }

    public_repo = json_is_true(pub);

    snprintf(name, sizeof(name), "%s/%s/%s", repo.forge, repo.owner,
             repo.repo);

    args = json_pack("{s:s, s:b}", "repo", name, "public", public_repo);

    /* the bottle's own policy may allow it without asking anyone */

    by = bottle_create_allowed(t->b.bottle, &repo, public_repo);

    if (by != NULL) {
        return sv_create_allowed(t, &repo, by, args);
    }

    if (sv_forge_create_check(&repo, t->err, sizeof(t->err)) != 0) {
        json_decref(args);
        return sv_refuse(t, "%s", t->err);
    }

    return sv_queue(t, BOTTLE_PROPOSAL_CREATE_REPO, args, -1, NULL);
}


/*
 * A create-repo the bottle's git_gate.actions.create allows: no card.  The
 * repo is made first, with the code the operator's Create runs
 * (bottle_forge_create_repo()), so that a forge error (the repo exists:
 * a second call racing the first one gets the forge's 409) queues and
 * grants nothing.  Then the proposal is queued and answered at once as an
 * approved create is (bottle_forge_create_grant()), the decision the
 * policy's (SV_POLICY_OPERATOR): decision.proposed and decision.resolved
 * in the journal, the :write grant in a new policy version, and the
 * answer an approved create gives.  args: a new reference, stolen.
 */

static json_t *
sv_create_allowed(sv_tool_t *t, const bottle_repo_t *repo,
    const bottle_repo_pattern_t *by, json_t *args)
{
    int                        rc, lost, pending;
    char                       made[BOTTLE_FORGE_MADE_MAX];
    json_t                    *refused, *answer;
    const char                *name;
    redisContext              *c;
    bottle_decision_result_t   res;
    bottle_forge_create_req_t  cr;
    bottle_proposal_origin_t   o;
    bottle_proposal_queued_t   q;

    if (args == NULL) {
        return sv_refuse(t, "invalid arguments (not UTF-8?)");
    }

    name = json_string_value(json_object_get(args, "repo"));

    c = sv_store(t->err, sizeof(t->err));
    if (c == NULL) {
        json_decref(args);
        return sv_refuse(t, "%s", t->err);
    }

    if (bottle_forge_create_repo(made, sizeof(made), c, repo,
                                 json_is_true(json_object_get(args,
                                                              "public")),
                                 &lost, t->err, sizeof(t->err))
        != 0)
    {
        if (lost) {
            sv_store_lost();
        }

        refused = sv_refuse(t, "cannot create %s: %s", name, t->err);
        json_decref(args);

        return refused;
    }

    /*
     * No pending_max: the proposal is answered at once and waits for no
     * operator, and a bound counted now, with the repo made, could only
     * leave it made and not granted.
     */

    memset(&o, 0, sizeof(o));
    o.producer = "supervise";
    o.gateway = sv_conf.gateway;
    o.seq = sv_seq();
    o.stream_max = sv_conf.stream_max;

    q.id[0] = '\0';
    q.created_ms = sv_now();

    rc = bottle_proposal_id(q.id, q.created_ms);

    if (rc == 0) {
        rc = bottle_proposal_propose(&q, c, t->call->bottle,
                                     BOTTLE_PROPOSAL_CREATE_REPO, args,
                                     t->why, &o, t->err, sizeof(t->err));
    }

    if (rc != 0) {
        /* made, but with no record it is not granted: an operator can */

        if (rc == BOTTLE_PROPOSAL_ELOST) {
            sv_store_lost();
        }

        sv_log("failure 'create-repo' bottle=%s request=%s: made %s but "
               "cannot record it, not granted: %s", t->call->bottle,
               t->call->request_id[0] ? t->call->request_id : "-", made,
               t->err);

        answer = sv_tool_text(1, "created %s, but it cannot be recorded, "
                              "so it is not granted: %s; ask for it with "
                              "add-repo %s:write", made, t->err, name);
        json_decref(args);

        return answer;
    }

    memset(&cr, 0, sizeof(cr));
    cr.proposal = q.id;
    cr.repo = repo;
    cr.made = made;
    cr.operator_name = SV_POLICY_OPERATOR;
    cr.producer = "supervise";

    rc = bottle_forge_create_grant(&res, c, &cr);

    /*
     * Answered by someone else meanwhile (an operator who saw the card in
     * that moment): that answer stands, and is the agent's.  Else the
     * proposal is left pending for an operator, which the answer says.
     */

    if (rc != 0 && res.status == BOTTLE_DECISION_UNREACHABLE) {
        sv_store_lost();
    }

    if (rc == 0) {
        sv_log("proposal %s bottle=%s tool=create-repo request=%s: created "
               "%s, granted %s:write by git_gate.actions.create "
               "\"%s/%s/%s%s%s\"", q.id, t->call->bottle,
               t->call->request_id[0] ? t->call->request_id : "-", made,
               name, by->forge, by->owner, by->name, by->prefix ? "*" : "",
               by->public_ok ? ":public" : "");

    } else {
        sv_log("failure 'create-repo' proposal %s bottle=%s request=%s: "
               "created %s, not granted: %s", q.id,
               t->call->bottle,
               t->call->request_id[0] ? t->call->request_id : "-", made,
               res.err);
    }

    bottle_decision_result_free(&res);
    json_decref(args);

    snprintf(t->call->proposal, sizeof(t->call->proposal), "%s", q.id);

    answer = sv_tools_answer(t->call, &pending);

    if (answer == NULL) {
        t->call->proposal[0] = '\0';
    }

    return answer;
}
