/*
 * An operator's answer to a proposal over a synchronous hiredis
 * connection (docs/control-plane.md, "Proposals and decisions"): what
 * bottlectl approve / deny / modify and the operator page do alike.
 *
 * The proposal is loaded; an approval that changes the bottle's policy is
 * computed here (the stored object with the change applied, checked by the
 * gateway's parser, diffed for decision.resolved); the decide script then
 * records and applies it atomically, only if the proposal is still pending
 * and the bottle still at the version the change was computed from (else
 * computed again, BOTTLE_DECISION_TRIES times).  A later answer changes
 * nothing: decision.late is journalled naming the answer that stands.
 *
 * Grants (modify's "grant"): for egress-allow a route object as in
 * policy.md; for add-repo {"repo": "<forge>/<owner>/<repo>[:write]"}, the
 * repo the agent asked for, read-only or, if it asked for write, with
 * write; for create-repo the same with write, once the repo is made
 * (req.created: bottle_forge_client.h); for forge-connect {"forge",
 * "account"}, the forge of the proposal's url, connected already
 * (bottle:forge:<forge>); for launch-bottle a launch spec {"agent",
 * "prompt", "bottles", "label"}, the proposal's, its bottles maybe
 * trimmed, recorded whole as the decision's "launch".  The other kinds
 * take no grant.  "No plain allow" stands: a plain approve of
 * forge-connect, add-repo, launch-bottle or create-repo is refused.
 */

#ifndef BOTTLE_DECISION_H
#define BOTTLE_DECISION_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bottle_audit.h"
#include "bottle_proposal.h"


struct redisContext;     /* hiredis's, in bottle_proposal_decide.c only */


#define BOTTLE_DECISION_TRIES     8     /* the bottle changed meanwhile */
#define BOTTLE_DECISION_ERR_LEN   1024
#define BOTTLE_DECISION_MAXLEN    "1000000"  /* the stream's MAXLEN ~ */


typedef enum {
    BOTTLE_DECISION_OK = 0,
    BOTTLE_DECISION_INVALID,        /* 400: a bad grant, an invalid result */
    BOTTLE_DECISION_NOT_FOUND,      /* 404: no such proposal or bottle */
    BOTTLE_DECISION_FORBIDDEN,      /* 403: no plain allow, no modify */
    BOTTLE_DECISION_ANSWERED,       /* 409: another answer stands */
    BOTTLE_DECISION_JOURNAL,        /* 503: required delivery, no journal */
    BOTTLE_DECISION_BUSY,           /* 503: the bottle kept changing */
    BOTTLE_DECISION_UNREACHABLE,    /* 502: the store was lost */
    BOTTLE_DECISION_FORGE           /* 502: the forge failed or refused
                                       (bottle_forge_client.h): nothing
                                       decided */
} bottle_decision_status_e;


typedef struct {
    const char              *proposal;      /* its id */
    const char              *action;        /* approve, deny, modify */
    const char              *notes;         /* NULL: none */
    const json_t            *grant;         /* modify's (borrowed) */
    const char              *operator_name;
    const char              *producer;      /* of the events: "bottlectl" */
    const char              *created;       /* create-repo: the repo's URL
                                               on the forge, set only by
                                               bottle_forge_create_answer()
                                               once it made it; a
                                               create-repo is not granted
                                               without it */
} bottle_decision_req_t;


typedef struct {
    bottle_decision_status_e status;
    char                     id[BOTTLE_AUDIT_RANDOM_LEN];   /* this
                                                               answer's */
    const char              *state;         /* approved, denied, modified */
    char                     bottle[129];
    long long                version;       /* written, or 0 */
    json_t                  *decision;      /* the one that stands: ours,
                                               or the winner's (new ref) */
    char                     warning[512];  /* not journalled (best
                                               effort): why, else "" */
    char                     err[BOTTLE_DECISION_ERR_LEN];
} bottle_decision_result_t;


/* the change an approval makes to a bottle's stored policy */
typedef struct {
    int                      changed;       /* 0: the policy stays */
    char                    *version;       /* computed from */
    char                    *digest;        /* the bottle's token_sha256 */
    char                    *json;          /* the new stored JSON */
    char                    *diff;          /* unified, of the pretty JSON */
    size_t                   diff_len;
    json_t                  *warnings;      /* bottle_warn_change()'s
                                               strings (new ref) */
} bottle_decision_change_t;


/*
 * Answers req.proposal.  0 with out->status BOTTLE_DECISION_OK, or -1
 * with another status and one line in out->err; for ANSWERED,
 * out->decision is the winner's.  Free out with
 * bottle_decision_result_free() either way.  The connection is the
 * caller's; an I/O error leaves it unusable (UNREACHABLE).
 */
int bottle_decision_answer(bottle_decision_result_t *out,
    struct redisContext *c,
    const bottle_decision_req_t *req);

void bottle_decision_result_free(bottle_decision_result_t *r);

/* out's status and message, for an answer that fails: returns -1 */
int bottle_decision_fail(bottle_decision_result_t *out,
    bottle_decision_status_e status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*
 * The change approving a kind with grant (a route, or a repo grant) would
 * make to the bottle's stored policy, checked by the gateway's parser.
 * 0, or -1 with a status in *status and one line in err; free out with
 * bottle_decision_change_free() either way.
 */
int bottle_decision_change(bottle_decision_change_t *out,
    struct redisContext *c,
    const char *bottle, bottle_proposal_kind_e kind, const json_t *grant,
    bottle_decision_status_e *status, char *err, size_t errlen);

void bottle_decision_change_free(bottle_decision_change_t *chg);

/*
 * Checks an operator's grant for a proposal (modify): 0, or -1 and one
 * line in err.  egress-allow: an object with a "host"; add-repo: {"repo"}
 * naming the proposal's repo, ":write" only if the agent asked for write;
 * create-repo: the same, ":write" always allowed; forge-connect: {"forge",
 * "account"}, the forge of the proposal's url; launch-bottle: a launch
 * spec, agent, prompt and label the proposal's, bottles among its.  (That
 * a forge is connected is the store's: bottle_decision_answer().)
 */
int bottle_decision_grant_check(bottle_proposal_kind_e kind,
    const json_t *proposal, const json_t *grant, char *err, size_t errlen);

/*
 * A launch-bottle's launch spec (a new reference): the proposal's agent,
 * prompt, bottles and label, with the grant's bottles if it has them (a
 * checked grant: bottle_decision_grant_check()).  NULL if out of memory.
 */
json_t *bottle_decision_launch(const json_t *proposal, const json_t *grant);

/*
 * An audit event with its id, time and gateway ("<host name>:<pid>")
 * set, producer the given one unless set, as a chained argument for the
 * journal's scripts (bottle_audit_chain.h); malloc()ed, NULL if out of
 * memory.
 */
char *bottle_decision_event_arg(bottle_audit_event_t *e,
    const char *producer, size_t *len);

/* ms since the epoch */
int64_t bottle_decision_now(void);


#endif /* BOTTLE_DECISION_H */
