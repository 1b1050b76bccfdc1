/*
 * Proposals and decisions on the control plane (docs/control-plane.md,
 * "Proposals and decisions"): one queue for every kind of request an
 * operator answers (supervise's tools, the egress proxy's
 * egress-token-allow, git-gate's gitleaks-allow), and one decision per
 * proposal, the first answer, across every operator and gateway.
 *
 * The keys, the scripts (EVAL, no KEYS), and the JSON of a proposal and
 * of a decision, built and checked with jansson; applying an approved
 * egress change to a bottle's stored object.  No nginx here; the last
 * section (bottle_proposal_client.c) runs the scripts over a synchronous
 * hiredis connection the caller brings (bottlectl, supervise-helper).
 */

#ifndef BOTTLE_PROPOSAL_H
#define BOTTLE_PROPOSAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>


/* the keys and channels */
#define BOTTLE_PROPOSAL_PREFIX     "bottle:proposal:"   /* + id: hash */
#define BOTTLE_PROPOSALS_PENDING   "bottle:proposals:pending"  /* zset */
#define BOTTLE_PROPOSALS_ALL       "bottle:proposals:all"      /* zset */
#define BOTTLE_PROPOSALS_OF        "bottle:proposals:of:"  /* + bottle */
#define BOTTLE_PROPOSALS_CHANNEL   "bottle:proposals"   /* "<id> <bottle>
                                                           <kind>" */
#define BOTTLE_DECISIONS_CHANNEL   "bottle:decisions"   /* "<id> <state>" */
/* + bottle: set of "<repo> <rule> <digest>", approved gitleaks-allows */
#define BOTTLE_GITLEAKS_ALLOWED    "bottle:gitleaks-allowed:"

/* the fields of a proposal's hash */
#define BOTTLE_PROPOSAL_F_JSON      "json"
#define BOTTLE_PROPOSAL_F_STATE     "state"
#define BOTTLE_PROPOSAL_F_BOTTLE    "bottle"
#define BOTTLE_PROPOSAL_F_KIND      "kind"
#define BOTTLE_PROPOSAL_F_CREATED   "created"       /* ms since the epoch */
#define BOTTLE_PROPOSAL_F_DECISION  "decision"      /* the decision's JSON */
#define BOTTLE_PROPOSAL_F_VERSION   "version"       /* the policy version an
                                                       approval wrote */

/* "<ms>-<8 hex digits>" and a NUL */
#define BOTTLE_PROPOSAL_ID_LEN      32

/* "pending", "approved", "denied", "modified", "expired", and a NUL */
#define BOTTLE_PROPOSAL_STATE_LEN   16

/* a proposal's JSON at most (an egress-allow's route may be long) */
#define BOTTLE_PROPOSAL_JSON_MAX    (1024 * 1024)

#define BOTTLE_PROPOSAL_REDACTED    "<redacted>"

/* justification and notes at most, in bytes */
#define BOTTLE_PROPOSAL_TEXT_MAX    4096

/*
 * A bottle's pending proposals at most, every source together (supervise's
 * tools, the egress proxy's held requests, git-gate's gitleaks-allow): each
 * of them passes it as the propose script's pending bound (origin
 * pending_max), and the script counts every pending proposal of the bottle,
 * whatever its kind or producer, where it queues (docs/control-plane.md,
 * "The bound on pending proposals").  A constant: bottlectl's own
 * proposals (the operator's) are not bounded.
 */
#define BOTTLE_PROPOSAL_PENDING_MAX 32

/* the propose script's error reply at the bound: "LIMIT pending <count>" */
#define BOTTLE_PROPOSAL_LIMIT_PENDING  "LIMIT pending "


typedef enum {
    BOTTLE_PROPOSAL_EGRESS_ALLOW = 0,
    BOTTLE_PROPOSAL_EGRESS_BLOCK,
    BOTTLE_PROPOSAL_FORGE_CONNECT,
    BOTTLE_PROPOSAL_ADD_REPO,
    BOTTLE_PROPOSAL_LAUNCH_BOTTLE,
    BOTTLE_PROPOSAL_CREATE_REPO,
    BOTTLE_PROPOSAL_EGRESS_TOKEN_ALLOW,
    BOTTLE_PROPOSAL_GITLEAKS_ALLOW,
    BOTTLE_PROPOSAL_NKINDS
} bottle_proposal_kind_e;


/* "egress-allow", ...; NULL for an unknown kind */
const char *bottle_proposal_kind_name(bottle_proposal_kind_e kind);

/* the kind named s, or -1 */
int bottle_proposal_kind_parse(const char *s);

/*
 * NULL if an operator may plainly approve this kind; else why not (the
 * spec's "no plain allow": forge-connect, add-repo, launch-bottle and
 * create-repo would tell the agent it has what it asked for).
 */
const char *bottle_proposal_no_plain_allow(bottle_proposal_kind_e kind);

/*
 * 1 if approving this kind changes the bottle's stored policy: egress-allow
 * and egress-block its routes, add-repo its repos
 */
int bottle_proposal_changes_policy(bottle_proposal_kind_e kind);

/* a fresh id: "<ms>-<8 random hex digits>"; 0 or -1 */
int bottle_proposal_id(char out[BOTTLE_PROPOSAL_ID_LEN], int64_t ms);

/* 1 if s looks like a proposal id (digits, '-', hex; at most 31 bytes) */
int bottle_proposal_id_valid(const char *s);

/*
 * Checks a kind's args (an object): egress-allow a route object as in
 * policy.md (here only that it has a "host"; the whole bottle is checked
 * when it is approved), egress-block {"host"}, egress-token-allow {"host",
 * "detector", "location", "digest"} and gitleaks-allow {"rule", "digest",
 * "repo", "file", "commit", "line"} (never a value: those keys only),
 * forge-connect {"url"}, add-repo and create-repo {"repo"}, launch-bottle
 * {"agent"}.  0, or -1 and one line in err.
 */
int bottle_proposal_args_check(bottle_proposal_kind_e kind,
    const json_t *args, char *err, size_t errlen);

/*
 * A proposal's JSON object (a new reference): {id, bottle, kind, args (a
 * deep copy), justification, created (RFC 3339), producer}.  The args are
 * checked as above.  NULL and one line in err.
 */
json_t *bottle_proposal_build(const char *id, const char *bottle,
    bottle_proposal_kind_e kind, const json_t *args,
    const char *justification, int64_t created_ms, const char *producer,
    char *err, size_t errlen);

/*
 * A stored proposal's JSON checked again (a new reference), its kind in
 * *kind.  NULL and one line in err.
 */
json_t *bottle_proposal_parse(const char *json, size_t len,
    bottle_proposal_kind_e *kind, char *err, size_t errlen);

/* one line for a listing: "host GET,POST", a repo, ...; cut to size */
void bottle_proposal_summary(char *buf, size_t size, const json_t *proposal);

/*
 * A decision's JSON object (a new reference): {id, proposal, action
 * (approve, deny, modify), state (approved, denied, modified), operator,
 * notes, time, route (modify's, or absent)}.  Action "expired" (no
 * operator's: the withdraw script's, state "expired") names who withdrew
 * it as the operator and why as the notes.  NULL if out of memory.
 */
json_t *bottle_decision_build(const char *id, const char *proposal,
    const char *action, const char *operator_name, const char *notes,
    int64_t ms, const json_t *route);

/* the state an action leaves: "approved", ...; NULL for no action */
const char *bottle_decision_state(const char *action);

/*
 * The bottle's stored object with an approved egress change applied (a
 * new reference): egress-allow adds route, replacing the route of the same
 * host (case-insensitive, one trailing dot ignored); egress-block removes
 * that host's route (route: {"host"}); add-repo adds the grant (route:
 * {"repo": "<forge>/<owner>/<repo>[:write]"} and maybe "write": true, as
 * the proposal's args) to `repos` in canonical form, replacing a grant of
 * the same repo.  *changed is 0 when the result is
 * the same object.  NULL and one line in err.
 */
json_t *bottle_proposal_apply(const json_t *bottle,
    bottle_proposal_kind_e kind, const json_t *route, int *changed,
    char *err, size_t errlen);

/*
 * The text a policy change is diffed on: the object pretty-printed (two
 * spaces), keys sorted, non-ASCII escaped, with a newline at its end; the
 * bottle's secrets (token, canary, the values of egress_tokens and
 * held_secrets) replaced by BOTTLE_PROPOSAL_REDACTED, since the diff goes
 * to the journal.  malloc()ed, NULL if out of memory.
 */
char *bottle_proposal_pretty(const json_t *o);


/*
 * EVAL scripts, no KEYS.  A bottle's audit.delivery is read by the script
 * from its stored JSON: with "required", an event that cannot be
 * journalled (XADD fails) refuses the whole script, which then wrote
 * nothing; else the XADD's error is returned and the script goes on.
 * Every event ARGV is a chained argument, "<SHA-256 hex>:<json>"
 * (bottle_audit_chain.h: bottle_audit_chained(), bottle_audit_chain_arg()),
 * appended to the journal's hash chain.
 *
 * propose: ARGV = id, bottle, kind, created ms, proposal JSON, the
 *   stream's MAXLEN (about), decision.proposed JSON, and optionally the
 *   bottle's most pending proposals and most pending or approved ones of
 *   this kind (absent or "": no bound), then optionally a JSON object of
 *   string args and states ("pending,denied"): when the newest proposal
 *   of that bottle and kind in one of those states has args holding
 *   every one of them, returns [its id, "", its state] and queues
 *   nothing (checked first, so a bound or the journal does not refuse
 *   it).  Error replies: "NOBOTTLE ...", "EXISTS ...", "LIMIT
 *   pending|kind <count>", "JOURNAL ...", "INVALID ...".  Stores the hash
 *   (state "pending"), adds the id to the pending, all and bottle's
 *   indexes (score: created), XADDs the event, publishes "<id> <bottle>
 *   <kind>" on bottle:proposals.  Returns [id, journal error or ""].
 *
 * decide: ARGV = id, decision JSON, state, MAXLEN, decision.resolved
 *   JSON, then for an approval that changes policy the bottle's version it
 *   was computed from, the bottle's id, its new JSON and token digest
 *   (else those four ""). First answer wins: if the proposal is no longer
 *   pending, returns [0, the decision that stands] and changes nothing.
 *   Error replies: "NOPROPOSAL ...", "CHANGED ..." (the bottle's version
 *   moved: compute again), "JOURNAL ...".  Else XADDs the event (before
 *   anything is applied), writes the bottle with the put script's own
 *   code (next version, published on bottle:changes), sets the state and
 *   the decision, drops the id from the pending index and publishes
 *   "<id> <state>" on bottle:decisions.  An approved gitleaks-allow
 *   adds "<repo> <rule> <digest>" of its args to the bottle's
 *   BOTTLE_GITLEAKS_ALLOWED set in the same script.  Returns [1, decision,
 *   version written or 0, journal error or ""].
 *
 * withdraw: ARGV = id, decision JSON (action and state "expired"),
 *   MAXLEN, decision.resolved JSON (operator_action "expired", a
 *   reason).  The request behind a proposal is gone (timed out, its
 *   client left): if the proposal is still pending, XADDs the event,
 *   sets state "expired" and the decision, drops the id from the pending
 *   index and publishes "<id> expired" on bottle:decisions; returns [1,
 *   journal error or ""].  Else changes nothing and returns [0, ""].
 *   Error replies: "JOURNAL ..." (nothing written).
 *
 * check: ARGV = bottle, id.  The proposal only if it is that bottle's:
 *   [state, proposal JSON, decision JSON or ""], else nil (another
 *   bottle's proposal and none at all are one answer).
 */
extern const char  bottle_proposal_propose_script[];
extern const char  bottle_proposal_decide_script[];
extern const char  bottle_proposal_check_script[];
extern const char  bottle_proposal_withdraw_script[];



/*
 * Over a hiredis connection (bottle_proposal_client.c): the producer's
 * side of the queue, shared by bottlectl and supervise-helper.  The
 * caller owns the synchronous context (connected, authenticated, with a
 * timeout); nothing here reconnects.  hiredis's header is not needed to
 * include this one.
 */

struct redisContext;

/* what went wrong, as bottle_proposal_propose() and _check() return it */
#define BOTTLE_PROPOSAL_EINVALID   -1   /* the proposal is invalid */
#define BOTTLE_PROPOSAL_ENOBOTTLE  -2   /* no such bottle in the store */
#define BOTTLE_PROPOSAL_EJOURNAL   -3   /* audit.delivery "required" and
                                           the journal refused the event:
                                           nothing queued */
#define BOTTLE_PROPOSAL_ESTORE     -4   /* the store answered an error */
#define BOTTLE_PROPOSAL_ELOST      -5   /* no answer: connection lost,
                                           timeout, NOAUTH */
#define BOTTLE_PROPOSAL_ENONE      -6   /* check: no such proposal of that
                                           bottle */
#define BOTTLE_PROPOSAL_EPENDING   -7   /* propose: origin->pending_max
                                           reached (out->count) */
#define BOTTLE_PROPOSAL_EKIND      -8   /* propose: origin->kind_max
                                           reached (out->count) */

/* who queues a proposal: the decision.proposed event's origin */
typedef struct {
    const char             *producer;   /* "bottlectl", "supervise", ... */
    const char             *gateway;    /* the event's gateway field */
    uint64_t                seq;        /* unique per (gateway, event) */
    unsigned long long      stream_max; /* the journal's MAXLEN (about);
                                           0: BOTTLE_PROPOSAL_STREAM_MAX */
    long long               pending_max;/* > 0: refused (EPENDING) when the
                                           bottle has this many pending */
    long long               kind_max;   /* > 0: refused (EKIND) when it has
                                           this many of the kind pending
                                           or approved (launch-bottle's
                                           children.max) */
    const json_t           *unless;     /* an object of string args: no
                                           new proposal when the bottle's
                                           newest of the kind in one of
                                           unless_states has them all */
    const char             *unless_states;  /* "pending,denied" */
} bottle_proposal_origin_t;

/* the gateways' default bottle_audit_stream_max */
#define BOTTLE_PROPOSAL_STREAM_MAX  1000000

typedef struct {
    char                    id[BOTTLE_PROPOSAL_ID_LEN];
    char                    journal_err[256];   /* "" or why the event is
                                                   not in the journal (a
                                                   warning: the proposal
                                                   is queued) */
    int64_t                 created_ms;
    long long               count;      /* EPENDING, EKIND: how many */
    char                    state[BOTTLE_PROPOSAL_STATE_LEN];
                                        /* "" when queued; else the state
                                           of origin->unless's match, whose
                                           id is in id */
} bottle_proposal_queued_t;

/*
 * Queues a proposal as the propose script does it: a fresh id (or the
 * one in out->id when it is not empty, so that a waiter can be
 * registered before the proposal exists), the proposal's JSON, its
 * decision.proposed event (correlation id: the proposal's id), one EVAL.
 * With origin->unless, a proposal that matches it is answered instead
 * (out->state not empty), in the same EVAL.  0, or a BOTTLE_PROPOSAL_E*
 * code and one line in err.
 */
int bottle_proposal_propose(bottle_proposal_queued_t *out,
    struct redisContext *c, const char *bottle, bottle_proposal_kind_e kind,
    const json_t *args, const char *justification,
    const bottle_proposal_origin_t *origin, char *err, size_t errlen);

/*
 * The check script: a bottle's own proposal as {state, proposal,
 * decision (null while pending)} (a new reference in *out).  0,
 * BOTTLE_PROPOSAL_ENONE when it is not that bottle's (or none at all),
 * or another code and one line in err.
 */
int bottle_proposal_check(json_t **out, struct redisContext *c,
    const char *bottle, const char *id, char *err, size_t errlen);


#endif /* BOTTLE_PROPOSAL_H */
