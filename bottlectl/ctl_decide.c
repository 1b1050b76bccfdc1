/*
 * bottlectl approve|deny ID [--note TEXT] and modify ID FILE [--note
 * TEXT]: one answer to a proposal (docs/control-plane.md, "Proposals and
 * decisions").
 *
 * An egress approval is computed here (the bottle's stored object with
 * the route added or removed, checked by the gateway's parser, diffed),
 * then the decide script records it, journals decision.resolved and
 * writes the bottle, atomically, only if the proposal is still pending
 * and the bottle still at the version the change was computed from.  A
 * later answer changes nothing: decision.late is journalled naming the
 * answer that stands, and the exit status is 4 (409).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_diff.h"
#include "bottlectl.h"


#define BOTTLECTL_DECIDE_TRIES  8   /* the bottle changed meanwhile */


typedef struct {
    const char             *action;     /* approve, deny, modify */
    const char             *id;
    const char             *note;
    const char             *file;       /* modify's route */
    char                    decision[BOTTLE_AUDIT_RANDOM_LEN];
    json_t                 *proposal;
    json_t                 *route;      /* modify's, new reference */
    bottle_proposal_kind_e  kind;
    const char             *bottle;     /* borrowed from proposal */
} bottlectl_answer_t;


static int bottlectl_answer(bottlectl_t *ctl, const char *action, int argc,
    char **argv);
static int bottlectl_answer_load(bottlectl_t *ctl, bottlectl_answer_t *a,
    redisReply **out);
static int bottlectl_answer_route(bottlectl_answer_t *a);
static int bottlectl_decide(bottlectl_t *ctl, bottlectl_answer_t *a);
static int bottlectl_decide_reply(bottlectl_t *ctl, bottlectl_answer_t *a,
    redisReply *r);
static int bottlectl_late(bottlectl_t *ctl, bottlectl_answer_t *a,
    const char *winner);
static void bottlectl_decision_event(bottle_audit_event_t *e,
    bottle_audit_type_e type, bottlectl_answer_t *a, json_t *args);
static char *bottlectl_resolved_event(bottlectl_answer_t *a,
    const bottlectl_change_t *chg);


int
bottlectl_approve(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "approve", argc, argv);
}


int
bottlectl_deny(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "deny", argc, argv);
}


int
bottlectl_modify(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "modify", argc, argv);
}


static int
bottlectl_answer(bottlectl_t *ctl, const char *action, int argc, char **argv)
{
    int                  rc, i, modify, npos;
    const char          *pos[2], *why;
    redisReply          *h;
    bottlectl_answer_t   a;

    memset(&a, 0, sizeof(a));
    a.action = action;
    modify = strcmp(action, "modify") == 0;
    npos = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--note") == 0 && i + 1 < argc) {
            a.note = argv[++i];

        } else if (strncmp(argv[i], "--note=", 7) == 0) {
            a.note = argv[i] + 7;

        } else if (npos < 2 && (argv[i][0] != '-' || argv[i][1] == '\0')) {
            pos[npos++] = argv[i];

        } else {
            npos = 3;
            break;
        }
    }

    if (npos != 1 + modify) {
        return bottlectl_usage(modify ? "modify ID FILE|- [--note TEXT]"
                                      : strcmp(action, "approve") == 0
                                        ? "approve ID [--note TEXT]"
                                        : "deny ID [--note TEXT]");
    }

    a.id = pos[0];
    a.file = modify ? pos[1] : NULL;

    if (!bottle_proposal_id_valid(a.id)) {
        bottlectl_error("no proposal \"%s\"", a.id);
        return BOTTLECTL_REFUSED;
    }

    if (a.note && strlen(a.note) > BOTTLE_PROPOSAL_TEXT_MAX) {
        bottlectl_error("--note: longer than %d bytes",
                        BOTTLE_PROPOSAL_TEXT_MAX);
        return BOTTLECTL_USAGE;
    }

    if (bottle_audit_random_id(a.decision) != 0) {
        bottlectl_error("cannot make a decision id");
        return BOTTLECTL_REFUSED;
    }

    rc = bottlectl_answer_load(ctl, &a, &h);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    /* answered already: no need to compute anything, it is late */

    if (strcmp(bottlectl_str(h, 1), "pending") != 0) {
        rc = bottlectl_late(ctl, &a, bottlectl_str(h, 2));
        goto cleanup;
    }

    why = strcmp(action, "deny") == 0 ? NULL
                                      : bottle_proposal_no_plain_allow(a.kind);
    if (why) {
        bottlectl_error("cannot %s a %s proposal: %s; that is not available "
                        "in this build yet: deny it, or answer it where it "
                        "can be granted", action,
                        bottle_proposal_kind_name(a.kind), why);
        rc = BOTTLECTL_REFUSED;
        goto cleanup;
    }

    if (modify && a.kind != BOTTLE_PROPOSAL_EGRESS_ALLOW) {
        bottlectl_error("cannot modify a %s proposal: modify approves an "
                        "egress-allow with the operator's own route",
                        bottle_proposal_kind_name(a.kind));
        rc = BOTTLECTL_REFUSED;
        goto cleanup;
    }

    if (modify && bottlectl_answer_route(&a) != 0) {
        rc = BOTTLECTL_REFUSED;
        goto cleanup;
    }

    rc = bottlectl_decide(ctl, &a);

cleanup:

    freeReplyObject(h);
    json_decref(a.proposal);
    json_decref(a.route);

    return rc;
}


/* HMGET the proposal: [json, state, decision]; a.proposal parsed */

static int
bottlectl_answer_load(bottlectl_t *ctl, bottlectl_answer_t *a,
    redisReply **out)
{
    int          rc;
    char         key[sizeof(BOTTLE_PROPOSAL_PREFIX) + BOTTLE_PROPOSAL_ID_LEN];
    char         err[512];
    const char  *av[5];
    redisReply  *r;

    snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX, a->id);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_PROPOSAL_F_JSON;
    av[3] = BOTTLE_PROPOSAL_F_STATE;
    av[4] = BOTTLE_PROPOSAL_F_DECISION;

    rc = bottlectl_command(ctl, &r, 5, av, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        bottlectl_error("no proposal \"%s\"", a->id);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    a->proposal = bottle_proposal_parse(r->element[0]->str,
                                        r->element[0]->len, &a->kind, err,
                                        sizeof(err));
    if (a->proposal == NULL) {
        bottlectl_error("proposal \"%s\": %s", a->id, err);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    a->bottle = json_string_value(json_object_get(a->proposal, "bottle"));
    *out = r;

    return BOTTLECTL_OK;
}


/* modify's FILE: one route object as in policy.md */

static int
bottlectl_answer_route(bottlectl_answer_t *a)
{
    char          *text;
    size_t         len;
    json_error_t   jerr;

    if (bottlectl_read(&text, &len, a->file) != 0) {
        return -1;
    }

    a->route = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);

    if (a->route == NULL) {
        bottlectl_error("%s: invalid JSON: %s", a->file, jerr.text);
        return -1;
    }

    if (!json_is_object(a->route)
        || json_string_value(json_object_get(a->route, "host")) == NULL)
    {
        bottlectl_error("%s: not a route object with a \"host\"", a->file);
        return -1;
    }

    return 0;
}


/* the decide script, computed again while the bottle changes under it */

static int
bottlectl_decide(bottlectl_t *ctl, bottlectl_answer_t *a)
{
    int                  rc, tries, apply;
    char                *decision, *event;
    json_t              *d, *route;
    const char          *av[12], *state;
    redisReply          *r;
    bottlectl_change_t   chg;

    state = bottle_decision_state(a->action);
    route = a->route ? a->route : json_object_get(a->proposal, "args");
    apply = strcmp(a->action, "deny") != 0
            && bottle_proposal_changes_policy(a->kind);

    d = bottle_decision_build(a->decision, a->id, a->action,
                              bottlectl_operator(), a->note, bottlectl_now(),
                              a->route);
    decision = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(d);

    if (decision == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    rc = BOTTLECTL_REFUSED;

    for (tries = 0; tries < BOTTLECTL_DECIDE_TRIES; tries++) {
        memset(&chg, 0, sizeof(chg));

        if (apply) {
            rc = bottlectl_change(ctl, a->bottle, a->kind, route, &chg);
            if (rc != BOTTLECTL_OK) {
                bottlectl_change_free(&chg);
                break;
            }
        }

        event = bottlectl_resolved_event(a, &chg);
        if (event == NULL) {
            bottlectl_change_free(&chg);
            rc = BOTTLECTL_REFUSED;
            break;
        }

        av[0] = "EVAL";
        av[1] = bottle_proposal_decide_script;
        av[2] = "0";
        av[3] = a->id;
        av[4] = decision;
        av[5] = state;
        av[6] = BOTTLECTL_AUDIT_MAXLEN;
        av[7] = event;
        av[8] = chg.changed ? chg.version : "";
        av[9] = chg.changed ? a->bottle : "";
        av[10] = chg.changed ? chg.json : "";
        av[11] = chg.changed ? chg.digest : "";

        rc = bottlectl_command(ctl, &r, 12, av, NULL);

        free(event);
        bottlectl_change_free(&chg);

        if (rc != BOTTLECTL_OK) {
            break;
        }

        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "CHANGED ", 8) == 0)
        {
            freeReplyObject(r);
            rc = BOTTLECTL_REFUSED;
            continue;
        }

        rc = bottlectl_decide_reply(ctl, a, r);
        freeReplyObject(r);
        break;
    }

    if (tries == BOTTLECTL_DECIDE_TRIES) {
        bottlectl_error("bottle \"%s\" kept changing while the answer was "
                        "computed; nothing decided, try again", a->bottle);
    }

    free(decision);

    return rc;
}


static int
bottlectl_decide_reply(bottlectl_t *ctl, bottlectl_answer_t *a,
    redisReply *r)
{
    long long  version;

    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOPROPOSAL ", 11) == 0) {
            bottlectl_error("%s", r->str + 11);

        } else if (strncmp(r->str, "JOURNAL ", 8) == 0) {
            bottlectl_error("cannot journal the decision, and bottle \"%s\" "
                            "requires it (audit.delivery \"required\"): %s; "
                            "nothing decided, nothing applied", a->bottle,
                            r->str + 8);

        } else {
            bottlectl_error("cannot %s proposal \"%s\": %s", a->action,
                            a->id, r->str);
        }

        return BOTTLECTL_REFUSED;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2
        || r->element[0]->type != REDIS_REPLY_INTEGER)
    {
        bottlectl_error("unexpected reply from the store to the decide "
                        "script");
        return BOTTLECTL_REFUSED;
    }

    if (r->element[0]->integer == 0) {
        return bottlectl_late(ctl, a, bottlectl_str(r, 1));
    }

    version = r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER
              ? r->element[2]->integer : 0;

    if (bottlectl_str(r, 3)[0]) {
        bottlectl_error("warning: decision.resolved is not in the audit "
                        "journal: %s", bottlectl_str(r, 3));
    }

    if (version) {
        printf("%s %s: bottle %s version %lld\n", a->id,
               bottle_decision_state(a->action), a->bottle, version);

    } else {
        printf("%s %s\n", a->id, bottle_decision_state(a->action));
    }

    return BOTTLECTL_OK;
}


/*
 * A later answer: decision.late names the one that stands (best effort:
 * the answer changes nothing either way), then 409.
 */

static int
bottlectl_late(bottlectl_t *ctl, bottlectl_answer_t *a, const char *winner)
{
    int                   rc;
    char                 *event;
    size_t                len;
    json_t               *w;
    redisReply           *r;
    const char           *av[8], *wid, *waction, *wop, *wtime;
    bottle_audit_event_t  e;

    w = json_loads(winner, 0, NULL);
    wid = json_string_value(json_object_get(w, "id"));
    waction = json_string_value(json_object_get(w, "action"));
    wop = json_string_value(json_object_get(w, "operator"));
    wtime = json_string_value(json_object_get(w, "time"));

    bottlectl_decision_event(&e, BOTTLE_AUDIT_LATE, a,
                             json_object_get(a->proposal, "args"));
    e.lost_to.data = wid;
    e.lost_to.len = wid ? strlen(wid) : 0;
    e.lost_to_action.data = waction;
    e.lost_to_action.len = waction ? strlen(waction) : 0;
    e.lost_to_operator.data = wop;
    e.lost_to_operator.len = wop ? strlen(wop) : 0;

    event = bottlectl_event_json(&e, &len);

    if (event) {
        av[0] = "XADD";
        av[1] = BOTTLE_STORE_AUDIT;
        av[2] = "MAXLEN";
        av[3] = "~";
        av[4] = BOTTLECTL_AUDIT_MAXLEN;
        av[5] = "*";
        av[6] = "event";
        av[7] = event;

        rc = bottlectl_command(ctl, &r, 8, av, NULL);

        if (rc == BOTTLECTL_OK) {
            if (r->type == REDIS_REPLY_ERROR) {
                bottlectl_error("warning: decision.late is not in the audit "
                                "journal: %s", r->str);
            }
            freeReplyObject(r);
        }

        free(event);
    }

    bottlectl_error("proposal \"%s\" was answered already: %s by %s at %s; "
                    "this answer changed nothing (409)", a->id,
                    waction ? waction : "?", wop ? wop : "?",
                    wtime ? wtime : "?");

    json_decref(w);

    return BOTTLECTL_ANSWERED;
}


/* what decision.resolved and decision.late say alike; host from args */

static void
bottlectl_decision_event(bottle_audit_event_t *e, bottle_audit_type_e type,
    bottlectl_answer_t *a, json_t *args)
{
    memset(e, 0, sizeof(*e));
    e->type = type;
    e->bottle.data = a->bottle;
    e->bottle.len = a->bottle ? strlen(a->bottle) : 0;
    e->host.data = json_string_value(json_object_get(args, "host"));
    e->host.len = e->host.data ? strlen(e->host.data) : 0;
    e->correlation_id.data = a->id;
    e->correlation_id.len = strlen(a->id);
    e->kind.data = bottle_proposal_kind_name(a->kind);
    e->kind.len = strlen(e->kind.data);
    e->operator_name.data = bottlectl_operator();
    e->operator_name.len = strlen(e->operator_name.data);
    e->operator_action.data = a->action;
    e->operator_action.len = strlen(a->action);
    e->operator_notes.data = a->note;
    e->operator_notes.len = a->note ? strlen(a->note) : 0;
    e->decision.data = a->decision;
    e->decision.len = strlen(a->decision);
}


static char *
bottlectl_resolved_event(bottlectl_answer_t *a, const bottlectl_change_t *chg)
{
    size_t                len;
    bottle_audit_event_t  e;

    bottlectl_decision_event(&e, BOTTLE_AUDIT_RESOLVED, a,
                             a->route ? a->route
                                      : json_object_get(a->proposal, "args"));

    if (chg->changed) {
        e.diff.data = chg->diff;
        e.diff.len = chg->diff_len;
    }

    return bottlectl_event_json(&e, &len);
}


int
bottlectl_change(bottlectl_t *ctl, const char *bottle,
    bottle_proposal_kind_e kind, const json_t *route,
    bottlectl_change_t *chg)
{
    int               rc;
    char              key[BOTTLECTL_URL_LEN + 256], err[1024];
    char             *a_text, *b_text, la[BOTTLECTL_URL_LEN + 320];
    char              lb[BOTTLECTL_URL_LEN + 260];
    size_t            len;
    json_t           *before, *after;
    redisReply       *r;
    const char       *av[5];
    bottle_policy_t  *p;

    memset(chg, 0, sizeof(*chg));

    snprintf(key, sizeof(key), "%s%s", BOTTLE_STORE_POLICY_PREFIX, bottle);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_STORE_F_JSON;
    av[3] = BOTTLE_STORE_F_VERSION;
    av[4] = BOTTLE_STORE_F_TOKEN;

    rc = bottlectl_command(ctl, &r, 5, av, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    before = NULL;
    after = NULL;
    a_text = NULL;
    b_text = NULL;
    p = NULL;
    rc = BOTTLECTL_REFUSED;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        bottlectl_error("no bottle \"%s\"", bottle);
        goto cleanup;
    }

    before = json_loadb(r->element[0]->str, r->element[0]->len, 0, NULL);

    after = bottle_proposal_apply(before, kind, route, &chg->changed, err,
                                  sizeof(err));
    if (after == NULL) {
        bottlectl_error("cannot approve: %s: %s", key, err);
        goto cleanup;
    }

    chg->version = strdup(bottlectl_str(r, 1));
    chg->digest = strdup(bottlectl_str(r, 2));
    chg->json = json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS);

    if (chg->version == NULL || chg->digest == NULL || chg->json == NULL) {
        bottlectl_error("out of memory");
        goto cleanup;
    }

    /* the gateway's own checks of the whole bottle, and its messages */

    len = strlen(chg->json);

    if (bottle_policy_parse(&p, chg->json, len, key, err, sizeof(err)) != 0
        || bottle_policy_unsupported(p, err, sizeof(err)) != 0)
    {
        bottlectl_error("cannot approve: the bottle's policy would be "
                        "invalid: %s", err);
        goto cleanup;
    }

    if (bottle_policy_count(p) != 1
        || bottle_policy_find_id(p, bottle, strlen(bottle)) == NULL)
    {
        bottlectl_error("cannot approve: %s holds no bottle \"%s\"", key,
                        bottle);
        goto cleanup;
    }

    a_text = bottle_proposal_pretty(before);
    b_text = bottle_proposal_pretty(after);
    snprintf(la, sizeof(la), "a/%s (version %s)", key, chg->version);
    snprintf(lb, sizeof(lb), "b/%s", key);

    if (a_text == NULL || b_text == NULL
        || bottle_diff(&chg->diff, &chg->diff_len, a_text, strlen(a_text),
                       b_text, strlen(b_text), la, lb) != 0)
    {
        bottlectl_error("out of memory");
        goto cleanup;
    }

    rc = BOTTLECTL_OK;

cleanup:

    free(a_text);
    free(b_text);
    bottle_policy_free(p);
    json_decref(before);
    json_decref(after);
    freeReplyObject(r);

    return rc;
}


void
bottlectl_change_free(bottlectl_change_t *chg)
{
    free(chg->version);
    free(chg->digest);
    free(chg->json);
    free(chg->diff);
    memset(chg, 0, sizeof(*chg));
}
