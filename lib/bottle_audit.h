/*
 * The audit journal's one event schema (docs/control-plane.md, "Audit
 * events"), for every producer: the gateway's egress side, the decisions
 * on proposals (bottlectl, docs/control-plane.md "Proposals and
 * decisions"), git-gate and supervise later.  An event is built from a struct
 * into compact JSON; the producer queues it and appends it to the
 * bottle:audit stream's hash chain (bottle_audit_chain.h: the append
 * script, the first-contact script below, the proposal scripts).
 *
 * No hiredis and no nginx here: callers bring their own connection.
 */

#ifndef BOTTLE_AUDIT_H
#define BOTTLE_AUDIT_H

#include <stddef.h>
#include <stdint.h>


#define BOTTLE_AUDIT_VERSION     1

/* strings longer than this are cut (reasons, hosts from the agent) */
#define BOTTLE_AUDIT_STR_MAX     1024

/* "2026-12-01T13:48:49.123Z" and its NUL */
#define BOTTLE_AUDIT_TIME_LEN    25

/* a fresh correlation id: 32 lowercase hex digits and a NUL */
#define BOTTLE_AUDIT_RANDOM_LEN  33


typedef enum {
    BOTTLE_AUDIT_FIRST_CONTACT = 0,     /* egress.first_contact */
    BOTTLE_AUDIT_REFUSAL,               /* egress.refusal */
    BOTTLE_AUDIT_DLP_FINDING,           /* dlp.finding */
    BOTTLE_AUDIT_TRUNCATION,            /* audit.truncation_detected */
    BOTTLE_AUDIT_PROPOSED,              /* decision.proposed */
    BOTTLE_AUDIT_RESOLVED,              /* decision.resolved */
    BOTTLE_AUDIT_LATE,                  /* decision.late */
    BOTTLE_AUDIT_GIT_PUSH,              /* git.push */
    BOTTLE_AUDIT_POLICY_CHANGED,        /* policy.changed */
    BOTTLE_AUDIT_DLP_REFLECTED,         /* dlp.reflected */
    BOTTLE_AUDIT_MCP_CALL,              /* mcp.call */
    BOTTLE_AUDIT_MCP_REFUSAL,           /* mcp.refusal */
    BOTTLE_AUDIT_NTYPES
} bottle_audit_type_e;


/* a string that need not be NUL-terminated; data NULL or len 0: absent */
typedef struct {
    const char          *data;
    size_t               len;
} bottle_audit_str_t;


/* one ref a push updates (git.push): name, old and new object ids in hex
 * (all zeros: created, deleted) */
typedef struct {
    bottle_audit_str_t   name;
    bottle_audit_str_t   old_id;
    bottle_audit_str_t   new_id;
} bottle_audit_ref_t;


/* a list of strings (policy.changed) */
typedef struct {
    const char *const   *items;
    size_t               n;
} bottle_audit_list_t;


typedef struct {
    bottle_audit_type_e  type;
    const char          *producer;      /* NULL: "egress" */

    /* every event */
    bottle_audit_str_t   id;            /* unique per event */
    int64_t              time_ms;       /* ms since the epoch, UTC */
    bottle_audit_str_t   gateway;
    bottle_audit_str_t   bottle;        /* absent: not identified */
    bottle_audit_str_t   host;
    bottle_audit_str_t   correlation_id;

    /* first contact; refusal where known */
    bottle_audit_str_t   method;
    unsigned             port;          /* 0: not known */
    bottle_audit_str_t   scheme;        /* first contact */

    /* refusal */
    bottle_audit_str_t   rule;
    unsigned             status;
    bottle_audit_str_t   reason;

    /* dlp.finding: never the value */
    bottle_audit_str_t   detector;
    bottle_audit_str_t   dlp_rule;      /* "rule" in the JSON */
    bottle_audit_str_t   location;
    bottle_audit_str_t   digest;        /* "sha256:<16 hex digits>" */
    bottle_audit_str_t   action;        /* blocked, redacted, ... */

    /* audit.truncation_detected */
    uint64_t             dropped;
    int64_t              first_dropped_ms;
    int64_t              last_dropped_ms;

    /*
     * decision.*: correlation_id is the proposal's id.  Proposed: kind,
     * summary and justification (the agent's words: "untrusted.*").
     * Resolved and late: kind, operator, operator_action (approve, deny,
     * modify), operator_notes, decision (this answer's id).  Late:
     * lost_to, lost_to_action, lost_to_operator (the answer that stands).
     * Resolved: reason, present only when the proposal expired (operator
 * "egress", operator_action "expired": its request is gone); diff, the
 * whole policy change as a unified diff, absent
     * when none; the builder cuts it at BOTTLE_DIFF_MAX and adds
     * diff_truncated and diff_digest.
     */
    bottle_audit_str_t   kind;
    bottle_audit_str_t   summary;
    bottle_audit_str_t   justification;
    bottle_audit_str_t   operator_name;     /* "operator" */
    bottle_audit_str_t   operator_action;
    bottle_audit_str_t   operator_notes;
    bottle_audit_str_t   decision;
    bottle_audit_str_t   lost_to;
    bottle_audit_str_t   lost_to_action;
    bottle_audit_str_t   lost_to_operator;
    bottle_audit_str_t   diff;

    /*
     * git.push (producer "git-gate"): repo ("<forge>/<owner>/<repo>"),
     * refs (old -> new), verdict ("accepted", "refused", or "forwarding":
     * written before the forge is contacted for a bottle whose delivery
     * is required), rule and reason of a refusal (rule as the pusher saw
     * it).  A ref name is absent when the push was refused over a ref
     * name (it may be the secret).
     */
    bottle_audit_str_t   repo;
    const bottle_audit_ref_t  *refs;
    size_t               nrefs;
    bottle_audit_str_t   verdict;

    /*
     * policy.changed (producer "bottlectl"): operator, operator_action
     * ("put", "rm"), old_version and new_version (-1: null, the bottle
     * was new or is removed), summary (one line), routes_added,
     * routes_removed, routes_changed (hosts) and fields_changed (the
     * bottle's other top-level keys).
     */
    int64_t              old_version;
    int64_t              new_version;
    bottle_audit_list_t  routes_added;
    bottle_audit_list_t  routes_removed;
    bottle_audit_list_t  routes_changed;
    bottle_audit_list_t  fields_changed;

    /*
     * dlp.reflected: held values a response carried, scrubbed (never the
     * values): held (names), held_kinds, where ("header", "body") and
     * encodings ("plain", "base64", "hex", ...).
     */
    bottle_audit_list_t  held;
    bottle_audit_list_t  held_kinds;
    bottle_audit_list_t  where;
    bottle_audit_list_t  encodings;

    /*
     * mcp.call, mcp.refusal (docs/mcp.md): method (the JSON-RPC method),
     * kind (tool, resource, prompt), name (of the tool, the resource's
     * URI, the prompt), digest ("sha256:<64 hex>" of the arguments'
     * canonical JSON); a refusal's rule and reason.
     */
    bottle_audit_str_t   name;
} bottle_audit_event_t;


/* "egress.first_contact", ...; NULL for an unknown type */
const char *bottle_audit_type_name(bottle_audit_type_e type);

/*
 * The event's JSON, compact, keys in a fixed order, malloc()ed and NUL-
 * terminated (free() it); *len its length.  Bytes outside printable
 * ASCII in any string become '?', strings are cut at BOTTLE_AUDIT_STR_MAX
 * (a decision's diff keeps its newlines and is cut at BOTTLE_DIFF_MAX).
 * NULL if out of memory or the type is unknown.
 */
char *bottle_audit_json(const bottle_audit_event_t *e, size_t *len);

/* RFC 3339, UTC, milliseconds: "2026-12-01T13:48:49.123Z"; 0 or -1 */
int bottle_audit_time(char *buf, size_t size, int64_t ms);

/*
 * An event id: "<gateway>-<ms>-<counter>" into buf (cut to size); returns
 * its length.  Unique as long as (gateway, counter) is.
 */
size_t bottle_audit_id(char *buf, size_t size, const char *gateway,
    size_t gateway_len, int64_t ms, uint64_t counter);

/* 16 random bytes as 32 lowercase hex digits (a correlation id); 0 or -1 */
int bottle_audit_random_id(char out[BOTTLE_AUDIT_RANDOM_LEN]);


/*
 * EVAL script, no KEYS: first contact, once per (bottle, host) across
 * every gateway.  ARGV = bottle id, host, the stream's MAXLEN (about),
 * the event (a chained argument), and a deadline: epoch ms (Redis's
 * clock), "0" none.
 * Past the deadline (a request that waited for its record and was
 * refused meanwhile: the contact did not happen) it writes nothing and
 * returns -1.  Else SADD bottle:contacts:<id> <host>; only if it was
 * added, the event appended to the journal's hash chain (the event a
 * chained argument, bottle_audit_chain.h; trimmed to about <max>).
 * Returns the new entry's id, or 0 when the pair was already recorded:
 * either is the acknowledgement.
 */
extern const char  bottle_audit_contact_script[];


#endif /* BOTTLE_AUDIT_H */
