/*
 * The eight tools (docs/supervise.md): each checks its arguments and
 * refuses what the operator would never see (a bad route, a forge of
 * another kind, a forge not connected, a nested launch, too many pending
 * proposals) before anything is queued; the rest is one proposal queued
 * by libbottle's propose script, producer "supervise", attributed to the
 * bottle nginx named.  Refusals are tool results with isError and a line
 * in the log.
 */

#define _POSIX_C_SOURCE  200809L

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>

#include "bottle_forge.h"
#include "bottle_forge_client.h"
#include "bottle_introspect.h"
#include "bottle_mcp.h"
#include "supervise.h"
#include "sv_tools_int.h"


typedef json_t *(*sv_tool_pt)(sv_tool_t *t);

typedef struct {
    const char             *name;
    sv_tool_pt              handler;
    int                     needs_why;
} sv_tool_def_t;


static json_t *sv_egress_allow(sv_tool_t *t);
static json_t *sv_egress_block(sv_tool_t *t);
static json_t *sv_list_routes(sv_tool_t *t);
static json_t *sv_forge_connect(sv_tool_t *t);
static json_t *sv_add_repo(sv_tool_t *t);
static json_t *sv_create_repo(sv_tool_t *t);
static json_t *sv_check_proposal(sv_tool_t *t);
static json_t *sv_create_allowed(sv_tool_t *t, const bottle_repo_t *repo,
    const bottle_repo_pattern_t *by, json_t *args);
static json_t *sv_repo_check(sv_tool_t *t, bottle_repo_t *repo,
    int with_mode);
static json_t *sv_tool_json(int is_error, json_t *o);
static json_t *sv_decision_json(const char *id, const json_t *checked);


static const sv_tool_def_t  sv_tool_defs[] = {
    { "egress-allow", sv_egress_allow, 1 },
    { "egress-block", sv_egress_block, 1 },
    { "list-egress-routes", sv_list_routes, 0 },
    { "forge-connect", sv_forge_connect, 1 },
    { "add-repo", sv_add_repo, 1 },
    { "launch-bottle", sv_launch_bottle, 1 },
    { "create-repo", sv_create_repo, 1 },
    { "check-proposal", sv_check_proposal, 0 },
    { NULL, NULL, 0 }
};


int
sv_tools_call(json_t **out, sv_call_t *call, const json_t *params,
    char *err, size_t errlen)
{
    int                   rc, bad;
    json_t               *in, *empty;
    const char           *name;
    sv_tool_t             t;
    const sv_tool_def_t  *def;

    *out = NULL;

    name = json_string_value(json_object_get(params, "name"));
    if (name == NULL) {
        snprintf(err, errlen, "invalid params: \"name\" must be a string");
        return SV_RPC_INVALID_PARAMS;
    }

    for (def = sv_tool_defs; def->name; def++) {
        if (strcmp(def->name, name) == 0) {
            break;
        }
    }

    if (def->name == NULL) {
        snprintf(err, errlen, "unknown tool \"%.64s\"", name);
        return SV_RPC_INVALID_PARAMS;
    }

    in = json_object_get(params, "arguments");          /* borrowed */
    empty = NULL;

    if (in == NULL || json_is_null(in)) {
        in = empty = json_object();

    } else if (!json_is_object(in)) {
        snprintf(err, errlen, "invalid params: \"arguments\" must be an "
                 "object");
        return SV_RPC_INVALID_PARAMS;
    }

    snprintf(call->tool, sizeof(call->tool), "%s", def->name);

    memset(&t, 0, sizeof(t));
    t.call = call;
    t.in = in;

    rc = sv_bottle_load(&t.b, call->bottle, t.err, sizeof(t.err));

    if (rc == 1) {
        sv_log("refused bottle=%s tool=%s: not in the store", call->bottle,
               call->tool);
        snprintf(err, errlen, "refused: bottle \"%s\" is not known to the "
                 "control plane", call->bottle);
        json_decref(empty);
        return SV_RPC_SERVER_ERROR;
    }

    if (rc != 0) {
        *out = sv_refuse(&t, "%s", t.err);
        goto done;
    }

    bad = 0;
    t.why = sv_string(in, "justification", &bad);

    if (def->needs_why && (t.why == NULL || t.why[0] == '\0' || bad)) {
        *out = sv_refuse(&t, "justification: a non-empty string is "
                         "required: say why, for the operator");
        goto done;
    }

    if (t.why && strlen(t.why) > BOTTLE_PROPOSAL_TEXT_MAX) {
        *out = sv_refuse(&t, "justification: longer than %d bytes",
                         BOTTLE_PROPOSAL_TEXT_MAX);
        goto done;
    }

    *out = def->handler(&t);

done:

    sv_bottle_free(&t.b);
    json_decref(empty);

    if (*out == NULL && call->proposal[0] == '\0') {
        snprintf(err, errlen, "out of memory");
        return SV_RPC_INTERNAL;
    }

    return 0;
}


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
 * egress-allow: a route, or a host and methods.  The route is checked as
 * an approval would check it: added to a copy of the bottle's stored
 * policy and parsed by the gateway's parser, so that a route the operator
 * could never approve is refused now, with the parser's reason.
 */

static json_t *
sv_egress_allow(sv_tool_t *t)
{
    int                 changed, bad;
    char               *text;
    json_t             *route, *methods, *nb, *mcp;
    const char         *host;
    bottle_policy_t    *p;

    bad = 0;
    route = json_object_get(t->in, "route");
    host = sv_string(t->in, "host", &bad);
    methods = json_object_get(t->in, "methods");
    mcp = json_object_get(t->in, "mcp");

    if (mcp && !json_is_null(mcp)) {
        /* a tool, resource or prompt of the host's MCP server */

        if ((route && !json_is_null(route))
            || (methods && !json_is_null(methods)) || host == NULL || bad)
        {
            return sv_refuse(t, "mcp: give it with a host, and no route or "
                             "methods");
        }

        route = bottle_mcp_grant(t->b.json, host, mcp, t->err,
                                 sizeof(t->err));
        if (route == NULL) {
            return sv_refuse(t, "%s", t->err);
        }

    } else if (route && !json_is_null(route)) {
        if (host || (methods && !json_is_null(methods))) {
            return sv_refuse(t, "give a route, or a host and methods, not "
                             "both");
        }

        if (!json_is_object(route)) {
            return sv_refuse(t, "route: an object is required (a route as "
                             "in the gateway's policy)");
        }

        route = json_deep_copy(route);

    } else {
        if (host == NULL || bad) {
            return sv_refuse(t, "host: a string is required (or a route)");
        }

        route = json_pack("{s:s}", "host", host);

        if (route && methods && !json_is_null(methods)) {
            json_object_set(route, "methods", methods);
        }
    }

    if (route == NULL) {
        return NULL;
    }

    if (bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_ALLOW, route,
                                   t->err, sizeof(t->err))
        != 0)
    {
        json_decref(route);
        return sv_refuse(t, "%s", t->err);
    }

    nb = bottle_proposal_apply(t->b.json, BOTTLE_PROPOSAL_EGRESS_ALLOW,
                               route, &changed, t->err, sizeof(t->err));
    if (nb == NULL) {
        json_decref(route);
        return sv_refuse(t, "route: %s", t->err);
    }

    text = json_dumps(nb, JSON_COMPACT);
    json_decref(nb);

    if (text == NULL) {
        json_decref(route);
        return NULL;
    }

    p = NULL;

    if (bottle_policy_parse(&p, text, strlen(text), "egress-allow", t->err,
                            sizeof(t->err)) != 0
        || bottle_policy_unsupported(p, t->err, sizeof(t->err)) != 0)
    {
        free(text);
        if (p) {
            bottle_policy_free(p);
        }
        json_decref(route);
        return sv_refuse(t, "the route is not one the gateway could serve: "
                         "%s", t->err);
    }

    free(text);
    bottle_policy_free(p);

    if (!changed) {
        json_decref(route);
        return sv_refuse(t, "this bottle has exactly this route already "
                         "(list-egress-routes)");
    }

    return sv_queue(t, BOTTLE_PROPOSAL_EGRESS_ALLOW, route, -1, NULL);
}


static json_t *
sv_egress_block(sv_tool_t *t)
{
    int          bad;
    json_t      *args;
    const char  *host;

    bad = 0;
    host = sv_string(t->in, "host", &bad);

    if (host == NULL || host[0] == '\0' || bad) {
        return sv_refuse(t, "host: a non-empty string is required");
    }

    args = json_pack("{s:s}", "host", host);
    if (args == NULL) {
        return sv_refuse(t, "host: not UTF-8");
    }

    return sv_queue(t, BOTTLE_PROPOSAL_EGRESS_BLOCK, args, -1, NULL);
}


/* answered here, from the bottle's policy: no operator, no token */

static json_t *
sv_list_routes(sv_tool_t *t)
{
    char    *text;
    size_t   len;
    json_t  *o;

    text = bottle_allowlist_json(t->b.bottle, &len);
    if (text == NULL) {
        return NULL;
    }

    o = json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text",
                  "text", json_stringn(text, len), "isError", 0);
    free(text);

    return o;
}


/*
 * forge-connect: an https URL of a forge; a well-known host of another
 * kind is refused, a URL with credentials in it too.
 */

static json_t *
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


static json_t *
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


static json_t *
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


static json_t *
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
