/*
 * An operator's answer to a proposal over a hiredis connection
 * (bottle_decision.h): bottlectl's approve / deny / modify and the
 * operator page (supervise-helper/sv_operator.c) both call
 * bottle_decision_answer().
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bottle_audit_chain.h"
#include "bottle_decision.h"
#include "bottle_diff.h"
#include "bottle_forge.h"
#include "bottle_policy.h"
#include "bottle_store.h"
#include "bottle_util.h"
#include "bottle_warn.h"


/* an add-repo's note: the operator's, "; granted https://", the repo */
#define BOTTLE_DECISION_NOTE_MAX                                              \
    (BOTTLE_PROPOSAL_TEXT_MAX + sizeof("; granted https:///  with write")     \
     + BOTTLE_FORGE_NAME_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX)


typedef struct {
    const bottle_decision_req_t  *req;
    bottle_decision_result_t     *out;
    redisContext                 *c;
    json_t                       *proposal;     /* new reference */
    bottle_proposal_kind_e        kind;
    const char                   *bottle;       /* borrowed from proposal */
    const json_t                 *grant;        /* what is applied */
    json_t                       *launch;       /* launch-bottle's spec,
                                                   new reference */
} bottle_answer_t;


static int bottle_decision_command(redisContext *c, redisReply **out,
    int argc, const char **argv, bottle_decision_status_e *status,
    char *err, size_t errlen);
static const char *bottle_decision_str(const redisReply *r, size_t i);
static int bottle_decision_load(bottle_answer_t *a, redisReply **out);
static int bottle_decision_refuse(bottle_answer_t *a);
static int bottle_decision_forge_connected(bottle_answer_t *a);
static void bottle_decision_repo_note(bottle_answer_t *a,
    bottle_decision_req_t *noted, char *buf, size_t size);
static int bottle_decision_run(bottle_answer_t *a);
static int bottle_decision_reply(bottle_answer_t *a, redisReply *r,
    const char *decision);
static int bottle_decision_late(bottle_answer_t *a, const char *winner);
static int bottle_decision_parent_check(redisContext *c, const bottle_t *b,
    bottle_decision_status_e *status, char *err, size_t errlen);
static void bottle_decision_event(bottle_audit_event_t *e,
    bottle_audit_type_e type, bottle_answer_t *a, const json_t *args);
static char *bottle_decision_resolved(bottle_answer_t *a,
    const bottle_decision_change_t *chg);
static char *bottle_decision_record(bottle_answer_t *a);


int
bottle_decision_answer(bottle_decision_result_t *out, redisContext *c,
    const bottle_decision_req_t *req)
{
    int              rc;
    char                   note[BOTTLE_DECISION_NOTE_MAX];
    redisReply            *h = NULL;
    bottle_answer_t        a;
    bottle_decision_req_t  noted;

    memset(out, 0, sizeof(*out));
    memset(&a, 0, sizeof(a));
    a.req = req;
    a.out = out;
    a.c = c;

    out->state = bottle_decision_state(req->action);

    if (out->state == NULL) {
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "unknown action \"%s\"", req->action);
    }

    if (!bottle_proposal_id_valid(req->proposal)) {
        return bottle_decision_fail(out, BOTTLE_DECISION_NOT_FOUND,
                                    "no proposal \"%s\"", req->proposal);
    }

    if (req->notes && strlen(req->notes) > BOTTLE_PROPOSAL_TEXT_MAX) {
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "note: longer than %d bytes",
                                    BOTTLE_PROPOSAL_TEXT_MAX);
    }

    if (bottle_audit_random_id(out->id) != 0) {
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "cannot make a decision id");
    }

    rc = bottle_decision_load(&a, &h);
    if (rc != 0) {
        return rc;
    }

    /* answered already: no need to compute anything, it is late */

    if (strcmp(bottle_decision_str(h, 1), "pending") != 0) {
        rc = bottle_decision_late(&a, bottle_decision_str(h, 2));
        goto cleanup;
    }

    rc = bottle_decision_refuse(&a);
    if (rc == 0) {
        bottle_decision_repo_note(&a, &noted, note, sizeof(note));
        rc = bottle_decision_run(&a);
    }

cleanup:

    freeReplyObject(h);
    json_decref(a.proposal);
    json_decref(a.launch);

    return rc;
}


void
bottle_decision_result_free(bottle_decision_result_t *r)
{
    json_decref(r->decision);
    r->decision = NULL;
}


int
bottle_decision_fail(bottle_decision_result_t *out,
    bottle_decision_status_e status, const char *fmt, ...)
{
    va_list  ap;

    out->status = status;

    va_start(ap, fmt);
    vsnprintf(out->err, sizeof(out->err), fmt, ap);
    va_end(ap);

    return -1;
}


/* a reply, or -1 UNREACHABLE with the reason alone (the caller names the
 * store) */

static int
bottle_decision_command(redisContext *c, redisReply **out, int argc,
    const char **argv, bottle_decision_status_e *status, char *err,
    size_t errlen)
{
    *out = redisCommandArgv(c, argc, argv, NULL);

    if (*out == NULL) {
        *status = BOTTLE_DECISION_UNREACHABLE;
        return bottle_errf(err, errlen, "%s",
                           c->err ? c->errstr : "connection lost");
    }

    if ((*out)->type == REDIS_REPLY_ERROR
        && strncmp((*out)->str, "NOAUTH", 6) == 0)
    {
        freeReplyObject(*out);
        *out = NULL;
        *status = BOTTLE_DECISION_UNREACHABLE;
        return bottle_errf(err, errlen, "authentication required");
    }

    return 0;
}


static const char *
bottle_decision_str(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements
        || r->element[i]->type != REDIS_REPLY_STRING)
    {
        return "";
    }

    return r->element[i]->str;
}


/* HMGET the proposal: [json, state, decision]; a->proposal parsed */

static int
bottle_decision_load(bottle_answer_t *a, redisReply **out)
{
    char          key[sizeof(BOTTLE_PROPOSAL_PREFIX) + BOTTLE_PROPOSAL_ID_LEN];
    char          err[512];
    const char   *av[5], *b;
    redisReply   *r;

    snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX,
             a->req->proposal);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_PROPOSAL_F_JSON;
    av[3] = BOTTLE_PROPOSAL_F_STATE;
    av[4] = BOTTLE_PROPOSAL_F_DECISION;

    if (bottle_decision_command(a->c, &r, 5, av, &a->out->status,
                                a->out->err, sizeof(a->out->err))
        != 0)
    {
        return -1;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        freeReplyObject(r);
        return bottle_decision_fail(a->out, BOTTLE_DECISION_NOT_FOUND,
                                    "no proposal \"%s\"", a->req->proposal);
    }

    a->proposal = bottle_proposal_parse(r->element[0]->str,
                                        r->element[0]->len, &a->kind, err,
                                        sizeof(err));
    if (a->proposal == NULL) {
        freeReplyObject(r);
        return bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID,
                                    "proposal \"%s\": %s", a->req->proposal,
                                    err);
    }

    b = json_string_value(json_object_get(a->proposal, "bottle"));
    a->bottle = b;
    snprintf(a->out->bottle, sizeof(a->out->bottle), "%s", b);
    *out = r;

    return 0;
}


/*
 * An add-repo granted: its note carries the repo's URL, the one the agent
 * clones and pushes through git-gate (docs/supervise.md), after the
 * operator's own notes: "[<notes>; ]granted https://<forge>/<owner>/<repo>
 * read-only|with write".  The decision, decision.resolved and
 * check-proposal's answer all say it.
 */

static void
bottle_decision_repo_note(bottle_answer_t *a, bottle_decision_req_t *noted,
    char *buf, size_t size)
{
    char            err[256];
    const char     *s, *notes;
    bottle_repo_t   repo;

    if (a->kind != BOTTLE_PROPOSAL_ADD_REPO
        || strcmp(a->req->action, "modify") != 0)
    {
        return;
    }

    s = json_string_value(json_object_get(a->grant, "repo"));

    if (s == NULL
        || bottle_repo_parse(&repo, s, strlen(s), 1, err, sizeof(err)) != 0)
    {
        return;
    }

    notes = a->req->notes ? a->req->notes : "";

    /* notes: at most BOTTLE_PROPOSAL_TEXT_MAX bytes, checked */

    snprintf(buf, size, "%s%sgranted https://%s/%s/%s %s", notes,
             *notes ? "; " : "", repo.forge, repo.owner, repo.repo,
             repo.write ? "with write" : "read-only");

    *noted = *a->req;
    noted->notes = buf;
    a->req = noted;
}


/* no plain allow; what modify takes; the grant checked */

static int
bottle_decision_refuse(bottle_answer_t *a)
{
    char         err[512];
    const char  *action, *why, *kind;

    action = a->req->action;
    kind = bottle_proposal_kind_name(a->kind);

    if (strcmp(action, "deny") == 0) {
        return 0;
    }

    why = bottle_proposal_no_plain_allow(a->kind);

    if (why && strcmp(action, "approve") == 0) {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_FORBIDDEN,
                   "cannot approve a %s proposal: %s: %s, or deny it", kind,
                   why, a->kind == BOTTLE_PROPOSAL_ADD_REPO
                        ? "grant it with modify and {\"repo\": "
                          "\"<forge>/<owner>/<repo>[:write]\"} (read-only, "
                          "or write if asked)"
                        : a->kind == BOTTLE_PROPOSAL_FORGE_CONNECT
                        ? "connect it with bottlectl forge connect "
                          "--proposal ID (the operator page's Connect...)"
                        : a->kind == BOTTLE_PROPOSAL_CREATE_REPO
                        ? "create it with bottlectl repo create --proposal "
                          "ID (the operator page's Create)"
                        : "launch it with modify and the launch spec "
                          "(the operator page's Launch...)");
    }

    if (strcmp(action, "modify") != 0) {
        a->grant = json_object_get(a->proposal, "args");
        return 0;
    }

    if (a->kind != BOTTLE_PROPOSAL_EGRESS_ALLOW
        && a->kind != BOTTLE_PROPOSAL_ADD_REPO
        && a->kind != BOTTLE_PROPOSAL_CREATE_REPO
        && a->kind != BOTTLE_PROPOSAL_FORGE_CONNECT
        && a->kind != BOTTLE_PROPOSAL_LAUNCH_BOTTLE)
    {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_FORBIDDEN,
                   "cannot modify a %s proposal: modify approves an "
                   "egress-allow with the operator's own route, grants an "
                   "add-repo's or a made create-repo's repo, a connected "
                   "forge, or a launch", kind);
    }

    if (a->req->grant == NULL) {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID,
                                    "modify: no grant given");
    }

    if (bottle_decision_grant_check(a->kind, a->proposal, a->req->grant, err,
                                    sizeof(err))
        != 0)
    {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID, "%s",
                                    err);
    }

    a->grant = a->req->grant;

    switch (a->kind) {

    case BOTTLE_PROPOSAL_CREATE_REPO:

        /* granted once made, never instead of making it */

        if (a->req->created == NULL) {
            return bottle_decision_fail(a->out, BOTTLE_DECISION_FORBIDDEN,
                       "cannot modify a create-repo proposal with a grant "
                       "alone: the repo is made first (bottlectl repo create "
                       "--proposal ID, the operator page's Create)");
        }

        break;

    case BOTTLE_PROPOSAL_FORGE_CONNECT:
        return bottle_decision_forge_connected(a);

    case BOTTLE_PROPOSAL_LAUNCH_BOTTLE:
        a->launch = bottle_decision_launch(a->proposal, a->req->grant);
        if (a->launch == NULL) {
            return bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID,
                                        "out of memory");
        }

        a->grant = a->launch;
        break;

    default:
        break;
    }

    return 0;
}


/* a forge-connect is answered once its forge is connected */

static int
bottle_decision_forge_connected(bottle_answer_t *a)
{
    int          rc;
    char         key[sizeof(BOTTLE_FORGE_PREFIX) + BOTTLE_FORGE_NAME_MAX];
    const char  *av[3], *forge;
    redisReply  *r;

    forge = json_string_value(json_object_get(a->grant, "forge"));
    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, forge);

    av[0] = "HGET";
    av[1] = key;
    av[2] = BOTTLE_FORGE_F_TOKEN;

    if (bottle_decision_command(a->c, &r, 3, av, &a->out->status,
                                a->out->err, sizeof(a->out->err))
        != 0)
    {
        return -1;
    }

    rc = r->type == REDIS_REPLY_STRING && r->len > 0 ? 0 : -1;
    freeReplyObject(r);

    if (rc != 0) {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_FORBIDDEN,
                   "forge %s is not connected: connect it first (bottlectl "
                   "forge connect --proposal ID, the operator page's "
                   "Connect...)", forge);
    }

    return 0;
}


/* the decide script, computed again while the bottle changes under it */

static int
bottle_decision_run(bottle_answer_t *a)
{
    int                        rc, tries, apply;
    char                      *decision, *event;
    const char                *av[12];
    redisReply                *r;
    bottle_decision_change_t   chg;
    bottle_proposal_kind_e     kind;

    /* a create-repo's grant is added as an add-repo's is */

    kind = a->kind == BOTTLE_PROPOSAL_CREATE_REPO ? BOTTLE_PROPOSAL_ADD_REPO
                                                  : a->kind;
    apply = strcmp(a->req->action, "deny") != 0
            && bottle_proposal_changes_policy(kind);

    decision = bottle_decision_record(a);
    if (decision == NULL) {
        return bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID,
                                    "out of memory");
    }

    rc = -1;

    for (tries = 0; tries < BOTTLE_DECISION_TRIES; tries++) {
        memset(&chg, 0, sizeof(chg));

        if (apply
            && bottle_decision_change(&chg, a->c, a->bottle, kind,
                                      a->grant, &a->out->status, a->out->err,
                                      sizeof(a->out->err))
               != 0)
        {
            bottle_decision_change_free(&chg);
            break;
        }

        event = bottle_decision_resolved(a, &chg);
        if (event == NULL) {
            bottle_decision_change_free(&chg);
            bottle_decision_fail(a->out, BOTTLE_DECISION_INVALID,
                                 "cannot build the audit event");
            break;
        }

        av[0] = "EVAL";
        av[1] = bottle_proposal_decide_script;
        av[2] = "0";
        av[3] = a->req->proposal;
        av[4] = decision;
        av[5] = a->out->state;
        av[6] = BOTTLE_DECISION_MAXLEN;
        av[7] = event;
        av[8] = chg.changed ? chg.version : "";
        av[9] = chg.changed ? a->bottle : "";
        av[10] = chg.changed ? chg.json : "";
        av[11] = chg.changed ? chg.digest : "";

        rc = bottle_decision_command(a->c, &r, 12, av, &a->out->status,
                                     a->out->err, sizeof(a->out->err));

        free(event);
        bottle_decision_change_free(&chg);

        if (rc != 0) {
            break;
        }

        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "CHANGED ", 8) == 0)
        {
            freeReplyObject(r);
            rc = -1;
            continue;
        }

        rc = bottle_decision_reply(a, r, decision);
        freeReplyObject(r);
        break;
    }

    if (tries == BOTTLE_DECISION_TRIES) {
        rc = bottle_decision_fail(a->out, BOTTLE_DECISION_BUSY,
                 "bottle \"%s\" kept changing while the answer was "
                 "computed; nothing decided, try again", a->bottle);
    }

    free(decision);

    return rc;
}


/*
 * the decision's JSON: modify's route for egress-allow, its grant for
 * add-repo and create-repo (and the repo made), the forge connected for
 * forge-connect, the launch spec for launch-bottle
 */

static char *
bottle_decision_record(bottle_answer_t *a)
{
    int          modify, egress;
    char        *s;
    json_t      *d;
    const char  *field;

    modify = strcmp(a->req->action, "modify") == 0;
    egress = a->kind == BOTTLE_PROPOSAL_EGRESS_ALLOW;

    d = bottle_decision_build(a->out->id, a->req->proposal, a->req->action,
                              a->req->operator_name, a->req->notes,
                              bottle_decision_now(),
                              modify && egress ? a->grant : NULL);

    field = a->kind == BOTTLE_PROPOSAL_FORGE_CONNECT ? "forge"
            : a->kind == BOTTLE_PROPOSAL_LAUNCH_BOTTLE ? "launch"
            : "grant";

    if (d && modify && !egress
        && json_object_set_new(d, field, json_deep_copy(a->grant)) != 0)
    {
        json_decref(d);
        d = NULL;
    }

    if (d && modify && a->req->created
        && json_object_set_new(d, "created", json_string(a->req->created))
           != 0)
    {
        json_decref(d);
        d = NULL;
    }

    s = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(d);

    return s;
}


static int
bottle_decision_reply(bottle_answer_t *a, redisReply *r, const char *decision)
{
    bottle_decision_result_t  *out = a->out;

    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOPROPOSAL ", 11) == 0) {
            return bottle_decision_fail(out, BOTTLE_DECISION_NOT_FOUND, "%s",
                                        r->str + 11);
        }

        if (strncmp(r->str, "JOURNAL ", 8) == 0) {
            return bottle_decision_fail(out, BOTTLE_DECISION_JOURNAL,
                       "cannot journal the decision, and bottle \"%s\" "
                       "requires it (audit.delivery \"required\"): %s; "
                       "nothing decided, nothing applied", a->bottle,
                       r->str + 8);
        }

        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "cannot %s proposal \"%s\": %s",
                                    a->req->action, a->req->proposal,
                                    r->str);
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2
        || r->element[0]->type != REDIS_REPLY_INTEGER)
    {
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "unexpected reply from the store to "
                                    "the decide script");
    }

    if (r->element[0]->integer == 0) {
        return bottle_decision_late(a, bottle_decision_str(r, 1));
    }

    out->version = r->elements > 2
                   && r->element[2]->type == REDIS_REPLY_INTEGER
                   ? r->element[2]->integer : 0;

    if (bottle_decision_str(r, 3)[0]) {
        snprintf(out->warning, sizeof(out->warning), "decision.resolved is "
                 "not in the audit journal: %s", bottle_decision_str(r, 3));
    }

    out->decision = json_loads(decision, 0, NULL);
    out->status = BOTTLE_DECISION_OK;

    return 0;
}


/*
 * A later answer: decision.late names the one that stands (best effort:
 * the answer changes nothing either way), then 409.
 */

static int
bottle_decision_late(bottle_answer_t *a, const char *winner)
{
    char                 *event;
    size_t                len;
    json_t               *w;
    redisReply           *r;
    const char           *av[8], *wid, *waction, *wop, *wtime;
    bottle_audit_event_t  e;
    bottle_decision_status_e  st;
    char                  err[256];

    w = json_loads(winner, 0, NULL);
    wid = json_string_value(json_object_get(w, "id"));
    waction = json_string_value(json_object_get(w, "action"));
    wop = json_string_value(json_object_get(w, "operator"));
    wtime = json_string_value(json_object_get(w, "time"));

    bottle_decision_event(&e, BOTTLE_AUDIT_LATE, a,
                          json_object_get(a->proposal, "args"));
    e.lost_to.data = wid;
    e.lost_to.len = wid ? strlen(wid) : 0;
    e.lost_to_action.data = waction;
    e.lost_to_action.len = waction ? strlen(waction) : 0;
    e.lost_to_operator.data = wop;
    e.lost_to_operator.len = wop ? strlen(wop) : 0;

    event = bottle_decision_event_arg(&e, a->req->producer, &len);

    if (event) {
        av[0] = "EVAL";
        av[1] = bottle_audit_append_script;
        av[2] = "0";
        av[3] = BOTTLE_DECISION_MAXLEN;
        av[4] = event;

        if (bottle_decision_command(a->c, &r, 5, av, &st, err, sizeof(err))
            == 0)
        {
            if (r->type == REDIS_REPLY_ERROR) {
                snprintf(a->out->warning, sizeof(a->out->warning),
                         "decision.late is not in the audit journal: %s",
                         r->str);
            }
            freeReplyObject(r);

        } else {
            snprintf(a->out->warning, sizeof(a->out->warning),
                     "decision.late is not in the audit journal: %s", err);
        }

        free(event);
    }

    bottle_decision_fail(a->out, BOTTLE_DECISION_ANSWERED,
                         "proposal \"%s\" was answered already: %s by %s at "
                         "%s; this answer changed nothing (409)",
                         a->req->proposal, waction ? waction : "?",
                         wop ? wop : "?", wtime ? wtime : "?");

    a->out->decision = w;

    return -1;
}


/* what decision.resolved and decision.late say alike; host from args */

static void
bottle_decision_event(bottle_audit_event_t *e, bottle_audit_type_e type,
    bottle_answer_t *a, const json_t *args)
{
    const bottle_decision_req_t  *req = a->req;

    memset(e, 0, sizeof(*e));
    e->type = type;
    e->bottle.data = a->bottle;
    e->bottle.len = a->bottle ? strlen(a->bottle) : 0;
    e->host.data = json_string_value(json_object_get(args, "host"));
    e->host.len = e->host.data ? strlen(e->host.data) : 0;
    e->correlation_id.data = req->proposal;
    e->correlation_id.len = strlen(req->proposal);
    e->kind.data = bottle_proposal_kind_name(a->kind);
    e->kind.len = strlen(e->kind.data);
    e->operator_name.data = req->operator_name;
    e->operator_name.len = strlen(req->operator_name);
    e->operator_action.data = req->action;
    e->operator_action.len = strlen(req->action);
    e->operator_notes.data = req->notes;
    e->operator_notes.len = req->notes ? strlen(req->notes) : 0;
    e->decision.data = a->out->id;
    e->decision.len = strlen(a->out->id);
}


static char *
bottle_decision_resolved(bottle_answer_t *a,
    const bottle_decision_change_t *chg)
{
    size_t                len;
    bottle_audit_event_t  e;

    bottle_decision_event(&e, BOTTLE_AUDIT_RESOLVED, a,
                          a->grant ? a->grant
                                   : json_object_get(a->proposal, "args"));

    if (chg->changed) {
        e.diff.data = chg->diff;
        e.diff.len = chg->diff_len;
    }

    return bottle_decision_event_arg(&e, a->req->producer, &len);
}


int
bottle_decision_change(bottle_decision_change_t *out, redisContext *c,
    const char *bottle, bottle_proposal_kind_e kind, const json_t *grant,
    bottle_decision_status_e *status, char *err, size_t errlen)
{
    int               rc;
    char             *key, e[1024], *a_text, *b_text, *la, *lb;
    size_t            len, klen;
    json_t           *before, *after;
    redisReply       *r;
    const char       *av[5];
    bottle_policy_t  *p;

    memset(out, 0, sizeof(*out));

    klen = sizeof(BOTTLE_STORE_POLICY_PREFIX) + strlen(bottle);
    key = malloc(klen);
    la = malloc(2 * klen + 64);     /* the diff's labels */

    if (key == NULL || la == NULL) {
        free(key);
        free(la);
        *status = BOTTLE_DECISION_INVALID;
        return bottle_errf(err, errlen, "out of memory");
    }

    lb = la + klen + 48;
    snprintf(key, klen, "%s%s", BOTTLE_STORE_POLICY_PREFIX, bottle);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_STORE_F_JSON;
    av[3] = BOTTLE_STORE_F_VERSION;
    av[4] = BOTTLE_STORE_F_TOKEN;

    if (bottle_decision_command(c, &r, 5, av, status, err, errlen) != 0) {
        free(key);
        free(la);
        return -1;
    }

    before = NULL;
    after = NULL;
    a_text = NULL;
    b_text = NULL;
    p = NULL;
    rc = -1;
    *status = BOTTLE_DECISION_INVALID;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        *status = BOTTLE_DECISION_NOT_FOUND;
        bottle_errf(err, errlen, "no bottle \"%s\"", bottle);
        goto cleanup;
    }

    before = json_loadb(r->element[0]->str, r->element[0]->len, 0, NULL);

    after = bottle_proposal_apply(before, kind, grant, &out->changed, e,
                                  sizeof(e));
    if (after == NULL) {
        bottle_errf(err, errlen, "cannot approve: %s: %s", key, e);
        goto cleanup;
    }

    out->version = strdup(bottle_decision_str(r, 1));
    out->digest = strdup(bottle_decision_str(r, 2));
    out->json = json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS);

    if (out->version == NULL || out->digest == NULL || out->json == NULL) {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    /* the gateway's own checks of the whole bottle, and its messages */

    len = strlen(out->json);

    if (bottle_policy_parse(&p, out->json, len, key, e, sizeof(e)) != 0
        || bottle_policy_unsupported(p, e, sizeof(e)) != 0)
    {
        bottle_errf(err, errlen, "cannot approve: the bottle's policy would "
                    "be invalid: %s", e);
        goto cleanup;
    }

    if (bottle_policy_count(p) != 1
        || bottle_policy_find_id(p, bottle, strlen(bottle)) == NULL)
    {
        bottle_errf(err, errlen, "cannot approve: %s holds no bottle "
                    "\"%s\"", key, bottle);
        goto cleanup;
    }

    /* a child stays within its parent as the store holds it now */

    if (bottle_policy_at(p, 0)->parent.len
        && bottle_decision_parent_check(c, bottle_policy_at(p, 0), status,
                                        err, errlen)
           != 0)
    {
        goto cleanup;
    }

    a_text = bottle_proposal_pretty(before);
    b_text = bottle_proposal_pretty(after);
    snprintf(la, klen + 48, "a/%s (version %s)", key, out->version);
    snprintf(lb, klen + 8, "b/%s", key);

    if (a_text == NULL || b_text == NULL
        || bottle_diff(&out->diff, &out->diff_len, a_text, strlen(a_text),
                       b_text, strlen(b_text), la, lb) != 0)
    {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    /* what it takes away or widens, for the operator to read first */

    out->warnings = bottle_warn_change(before, after);
    if (out->warnings == NULL) {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    *status = BOTTLE_DECISION_OK;
    rc = 0;

cleanup:

    free(key);
    free(la);
    free(a_text);
    free(b_text);
    bottle_policy_free(p);
    json_decref(before);
    json_decref(after);
    freeReplyObject(r);

    return rc;
}


/* the child b (a new version) within its stored parent: 0, or -1 and err */

static int
bottle_decision_parent_check(redisContext *c, const bottle_t *b,
    bottle_decision_status_e *status, char *err, size_t errlen)
{
    int               rc;
    char             *key, e[1024];
    size_t            klen;
    redisReply       *r;
    const char       *av[3];
    const bottle_t   *parent;
    bottle_policy_t  *p;

    klen = sizeof(BOTTLE_STORE_POLICY_PREFIX) + b->parent.len;
    key = malloc(klen);
    if (key == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    snprintf(key, klen, "%s%s", BOTTLE_STORE_POLICY_PREFIX, b->parent.data);

    av[0] = "HGET";
    av[1] = key;
    av[2] = BOTTLE_STORE_F_JSON;

    if (bottle_decision_command(c, &r, 3, av, status, err, errlen) != 0) {
        free(key);
        return -1;
    }

    *status = BOTTLE_DECISION_INVALID;
    p = NULL;
    rc = -1;

    if (r->type != REDIS_REPLY_STRING) {
        bottle_errf(err, errlen, "cannot approve: bottle \"%s\": parent: no "
                    "bottle \"%s\" in the store", b->id.data, b->parent.data);
        goto done;
    }

    if (bottle_policy_parse(&p, r->str, r->len, key, e, sizeof(e)) != 0) {
        bottle_errf(err, errlen, "cannot approve: the parent's policy: %s", e);
        goto done;
    }

    parent = bottle_policy_find_id(p, b->parent.data, b->parent.len);

    if (parent == NULL) {
        bottle_errf(err, errlen, "cannot approve: %s holds no bottle \"%s\"",
                    key, b->parent.data);
        goto done;
    }

    if (bottle_child_check(b, parent, e, sizeof(e)) != 0) {
        bottle_errf(err, errlen, "cannot approve: %s", e);
        goto done;
    }

    rc = 0;

done:

    if (p) {
        bottle_policy_free(p);
    }

    free(key);
    freeReplyObject(r);

    return rc;
}


void
bottle_decision_change_free(bottle_decision_change_t *chg)
{
    free(chg->version);
    free(chg->digest);
    free(chg->json);
    free(chg->diff);
    json_decref(chg->warnings);
    memset(chg, 0, sizeof(*chg));
}
