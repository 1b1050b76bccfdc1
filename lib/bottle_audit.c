/*
 * Audit events (docs/control-plane.md, "Audit events"): one schema for
 * every producer, built with jansson; and the first-contact script.
 */

#define _POSIX_C_SOURCE  200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "bottle_audit.h"
#include "bottle_audit_chain_lua.h"
#include "bottle_diff.h"
#include "bottle_store.h"


static int bottle_audit_set_str(json_t *o, const char *key,
    const bottle_audit_str_t *s, int null_if_absent);
static int bottle_audit_set_int(json_t *o, const char *key, int64_t v);
static int bottle_audit_set_time(json_t *o, const char *key, int64_t ms);
static int bottle_audit_fields(json_t *o, const bottle_audit_event_t *e);
static int bottle_audit_decision(json_t *o, const bottle_audit_event_t *e);
static int bottle_audit_set_diff(json_t *o, const bottle_audit_str_t *s);
static int bottle_audit_git_push(json_t *o, const bottle_audit_event_t *e);
static int bottle_audit_policy(json_t *o, const bottle_audit_event_t *e);
static int bottle_audit_set_list(json_t *o, const char *key,
    const bottle_audit_list_t *l);


static const char *const  bottle_audit_types[BOTTLE_AUDIT_NTYPES] = {
    "egress.first_contact",
    "egress.refusal",
    "dlp.finding",
    "audit.truncation_detected",
    "decision.proposed",
    "decision.resolved",
    "decision.late",
    "git.push",
    "policy.changed",
    "dlp.reflected",
    "mcp.call",
    "mcp.refusal"
};


const char  bottle_audit_contact_script[] =
    BOTTLE_AUDIT_CHAIN_LUA
    "if ARGV[5] and ARGV[5] ~= '0' then\n"
    "  local t = redis.call('TIME')\n"
    "  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)"
    " > tonumber(ARGV[5]) then\n"
    "    return -1\n"
    "  end\n"
    "end\n"
    "if redis.call('SADD', '" BOTTLE_STORE_CONTACTS_PREFIX "' .. ARGV[1],"
    " ARGV[2]) == 1 then\n"
    "  local id = bottle_chain_append(ARGV[3], ARGV[4])\n"
    "  if type(id) == 'table' and id.err then\n"
    "    redis.call('SREM', '" BOTTLE_STORE_CONTACTS_PREFIX "' .. ARGV[1],"
    " ARGV[2])\n"
    "    return redis.error_reply(id.err)\n"
    "  end\n"
    "  return id\n"
    "end\n"
    "return 0\n";


const char *
bottle_audit_type_name(bottle_audit_type_e type)
{
    if ((unsigned) type >= BOTTLE_AUDIT_NTYPES) {
        return NULL;
    }

    return bottle_audit_types[type];
}


char *
bottle_audit_json(const bottle_audit_event_t *e, size_t *len)
{
    char         *s;
    json_t       *o;
    const char   *type;

    type = bottle_audit_type_name(e->type);
    if (type == NULL) {
        return NULL;
    }

    o = json_object();      /* new reference */
    if (o == NULL) {
        return NULL;
    }

    s = NULL;

    if (json_object_set_new(o, "v", json_integer(BOTTLE_AUDIT_VERSION)) != 0
        || bottle_audit_set_str(o, "id", &e->id, 1) != 0
        || bottle_audit_set_time(o, "time", e->time_ms) != 0
        || json_object_set_new(o, "producer",
                               json_string(e->producer ? e->producer
                                                       : "egress"))
           != 0
        || json_object_set_new(o, "type", json_string(type)) != 0
        || bottle_audit_set_str(o, "gateway", &e->gateway, 1) != 0
        || bottle_audit_set_str(o, "bottle", &e->bottle, 1) != 0
        || bottle_audit_set_str(o, "host", &e->host, 1) != 0
        || bottle_audit_set_str(o, "correlation_id", &e->correlation_id, 1)
           != 0
        || bottle_audit_fields(o, e) != 0)
    {
        goto cleanup;
    }

    s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

    if (s && len) {
        *len = strlen(s);
    }

cleanup:

    json_decref(o);

    return s;
}


/* the type's own fields */

static int
bottle_audit_fields(json_t *o, const bottle_audit_event_t *e)
{
    switch (e->type) {

    case BOTTLE_AUDIT_FIRST_CONTACT:
        return bottle_audit_set_int(o, "port", e->port)
               || bottle_audit_set_str(o, "method", &e->method, 1)
               || bottle_audit_set_str(o, "scheme", &e->scheme, 1);

    case BOTTLE_AUDIT_REFUSAL:
        if (bottle_audit_set_str(o, "rule", &e->rule, 1) != 0
            || bottle_audit_set_int(o, "status", e->status) != 0
            || bottle_audit_set_str(o, "reason", &e->reason, 1) != 0
            || bottle_audit_set_str(o, "method", &e->method, 0) != 0)
        {
            return -1;
        }

        return e->port ? bottle_audit_set_int(o, "port", e->port) : 0;

    case BOTTLE_AUDIT_DLP_FINDING:
        return bottle_audit_set_str(o, "detector", &e->detector, 1)
               || bottle_audit_set_str(o, "rule", &e->dlp_rule, 1)
               || bottle_audit_set_str(o, "location", &e->location, 1)
               || bottle_audit_set_str(o, "digest", &e->digest, 1)
               || bottle_audit_set_str(o, "action", &e->action, 1);

    case BOTTLE_AUDIT_TRUNCATION:
        return bottle_audit_set_int(o, "dropped", (int64_t) e->dropped)
               || bottle_audit_set_time(o, "first_dropped",
                                        e->first_dropped_ms)
               || bottle_audit_set_time(o, "last_dropped",
                                        e->last_dropped_ms);

    case BOTTLE_AUDIT_PROPOSED:
    case BOTTLE_AUDIT_RESOLVED:
    case BOTTLE_AUDIT_LATE:
        return bottle_audit_decision(o, e);

    case BOTTLE_AUDIT_GIT_PUSH:
        return bottle_audit_git_push(o, e);

    case BOTTLE_AUDIT_POLICY_CHANGED:
        return bottle_audit_policy(o, e);

    case BOTTLE_AUDIT_DLP_REFLECTED:
        return bottle_audit_set_list(o, "held", &e->held)
               || bottle_audit_set_list(o, "held_kinds", &e->held_kinds)
               || bottle_audit_set_list(o, "where", &e->where)
               || bottle_audit_set_list(o, "encodings", &e->encodings);
    case BOTTLE_AUDIT_MCP_CALL:
    case BOTTLE_AUDIT_MCP_REFUSAL:
        if (bottle_audit_set_str(o, "method", &e->method, 1) != 0
            || bottle_audit_set_str(o, "kind", &e->kind, 1) != 0
            || bottle_audit_set_str(o, "name", &e->name, 1) != 0
            || bottle_audit_set_str(o, "digest", &e->digest, 1) != 0)
        {
            return -1;
        }

        return e->type == BOTTLE_AUDIT_MCP_REFUSAL
               && (bottle_audit_set_str(o, "rule", &e->rule, 1) != 0
                   || bottle_audit_set_str(o, "reason", &e->reason, 1) != 0);

    default:
        return -1;
    }
}


static int
bottle_audit_git_push(json_t *o, const bottle_audit_event_t *e)
{
    size_t   i;
    json_t  *refs, *ref;

    if (bottle_audit_set_str(o, "repo", &e->repo, 1) != 0) {
        return -1;
    }

    refs = json_array();
    if (refs == NULL || json_object_set_new(o, "refs", refs) != 0) {
        return -1;
    }

    for (i = 0; i < e->nrefs; i++) {
        ref = json_object();
        if (ref == NULL || json_array_append_new(refs, ref) != 0
            || bottle_audit_set_str(ref, "ref", &e->refs[i].name, 1) != 0
            || bottle_audit_set_str(ref, "old", &e->refs[i].old_id, 1) != 0
            || bottle_audit_set_str(ref, "new", &e->refs[i].new_id, 1) != 0)
        {
            return -1;
        }
    }

    return bottle_audit_set_str(o, "verdict", &e->verdict, 1)
           || bottle_audit_set_str(o, "rule", &e->rule, 1)
           || bottle_audit_set_str(o, "reason", &e->reason, 1);
}


/* policy.changed; a version < 0 is null */

static int
bottle_audit_policy(json_t *o, const bottle_audit_event_t *e)
{
    return bottle_audit_set_str(o, "operator", &e->operator_name, 1)
           || bottle_audit_set_str(o, "operator_action", &e->operator_action,
                                   1)
           || json_object_set_new(o, "old_version", e->old_version < 0
                                  ? json_null()
                                  : json_integer(e->old_version))
           || json_object_set_new(o, "new_version", e->new_version < 0
                                  ? json_null()
                                  : json_integer(e->new_version))
           || bottle_audit_set_str(o, "summary", &e->summary, 1)
           || bottle_audit_set_list(o, "routes_added", &e->routes_added)
           || bottle_audit_set_list(o, "routes_removed", &e->routes_removed)
           || bottle_audit_set_list(o, "routes_changed", &e->routes_changed)
           || bottle_audit_set_list(o, "fields_changed", &e->fields_changed);
}


static int
bottle_audit_set_list(json_t *o, const char *key,
    const bottle_audit_list_t *l)
{
    size_t              i;
    json_t             *a, *tmp;
    bottle_audit_str_t  s;

    a = json_array();
    if (a == NULL || json_object_set_new(o, key, a) != 0) {
        return -1;
    }

    tmp = json_object();
    if (tmp == NULL) {
        return -1;
    }

    /* each item sanitised and cut as every string of an event is */

    for (i = 0; i < l->n; i++) {
        s.data = l->items[i];
        s.len = strlen(l->items[i]);

        if (bottle_audit_set_str(tmp, "s", &s, 1) != 0
            || json_array_append(a, json_object_get(tmp, "s")) != 0)
        {
            json_decref(tmp);
            return -1;
        }
    }

    json_decref(tmp);

    return 0;
}


static int
bottle_audit_decision(json_t *o, const bottle_audit_event_t *e)
{
    if (bottle_audit_set_str(o, "kind", &e->kind, 1) != 0) {
        return -1;
    }

    if (e->type == BOTTLE_AUDIT_PROPOSED) {
        return bottle_audit_set_str(o, "untrusted.summary", &e->summary, 1)
               || bottle_audit_set_str(o, "untrusted.justification",
                                       &e->justification, 1);
    }

    if (bottle_audit_set_str(o, "operator", &e->operator_name, 1) != 0
        || bottle_audit_set_str(o, "operator_action", &e->operator_action, 1)
           != 0
        || bottle_audit_set_str(o, "operator_notes", &e->operator_notes, 1)
           != 0
        || bottle_audit_set_str(o, "decision", &e->decision, 1) != 0)
    {
        return -1;
    }

    if (e->type == BOTTLE_AUDIT_LATE) {
        return bottle_audit_set_str(o, "lost_to", &e->lost_to, 1)
               || bottle_audit_set_str(o, "lost_to_action",
                                       &e->lost_to_action, 1)
               || bottle_audit_set_str(o, "lost_to_operator",
                                       &e->lost_to_operator, 1);
    }

    /* an expired proposal's (no operator answered it): why */
    if (bottle_audit_set_str(o, "reason", &e->reason, 0) != 0) {
        return -1;
    }

    return bottle_audit_set_diff(o, &e->diff);
}


/*
 * untrusted.diff: it carries the agent's proposed text, so it is a claim
 * (an export of a restricted record drops it); printable ASCII, newlines
 * and tabs kept; cut at a line's end under BOTTLE_DIFF_MAX, with the
 * whole diff's digest so a cut or dropped diff can still be matched.
 */

static int
bottle_audit_set_diff(json_t *o, const bottle_audit_str_t *s)
{
    int      rc;
    char    *buf, digest[BOTTLE_DIFF_DIGEST_LEN];
    size_t   i, n;

    if (s->data == NULL || s->len == 0) {
        return 0;
    }

    if (bottle_diff_digest(digest, s->data, s->len) != 0) {
        return -1;
    }

    n = bottle_diff_cut(s->data, s->len, BOTTLE_DIFF_MAX);

    buf = malloc(n ? n : 1);
    if (buf == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        unsigned char  c = (unsigned char) s->data[i];

        buf[i] = ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t')
                 ? (char) c : '?';
    }

    rc = json_object_set_new(o, "untrusted.diff", json_stringn(buf, n))
         || json_object_set_new(o, "diff_truncated",
                                json_boolean(n < s->len))
         || json_object_set_new(o, "diff_digest", json_string(digest));

    free(buf);

    return rc;
}


/*
 * A string of the event: printable ASCII only (hosts and reasons can hold
 * the agent's bytes, and a JSON string must be UTF-8), cut at the limit.
 * Absent: null, or no key at all.
 */

static int
bottle_audit_set_str(json_t *o, const char *key, const bottle_audit_str_t *s,
    int null_if_absent)
{
    size_t  i, n;
    char    buf[BOTTLE_AUDIT_STR_MAX];

    if (s->data == NULL || s->len == 0) {
        return null_if_absent ? json_object_set_new(o, key, json_null()) : 0;
    }

    n = s->len < sizeof(buf) ? s->len : sizeof(buf);

    for (i = 0; i < n; i++) {
        unsigned char  c = (unsigned char) s->data[i];

        buf[i] = (c >= 0x20 && c < 0x7f) ? (char) c : '?';
    }

    /* json_stringn() copies; set_new() steals the new reference */
    return json_object_set_new(o, key, json_stringn(buf, n));
}


static int
bottle_audit_set_int(json_t *o, const char *key, int64_t v)
{
    return json_object_set_new(o, key, json_integer((json_int_t) v));
}


static int
bottle_audit_set_time(json_t *o, const char *key, int64_t ms)
{
    char  buf[BOTTLE_AUDIT_TIME_LEN];

    if (bottle_audit_time(buf, sizeof(buf), ms) != 0) {
        return -1;
    }

    return json_object_set_new(o, key, json_string(buf));
}


int
bottle_audit_time(char *buf, size_t size, int64_t ms)
{
    time_t     sec;
    struct tm  tm;

    if (ms < 0 || size < BOTTLE_AUDIT_TIME_LEN) {
        return -1;
    }

    sec = (time_t) (ms / 1000);

    if (gmtime_r(&sec, &tm) == NULL || tm.tm_year + 1900 > 9999) {
        return -1;
    }

    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int) (ms % 1000));

    return 0;
}


size_t
bottle_audit_id(char *buf, size_t size, const char *gateway,
    size_t gateway_len, int64_t ms, uint64_t counter)
{
    int  n;

    if (size == 0) {
        return 0;
    }

    n = snprintf(buf, size, "%.*s-%" PRId64 "-%" PRIu64,
                 (int) gateway_len, gateway, ms, counter);

    if (n < 0) {
        buf[0] = '\0';
        return 0;
    }

    return (size_t) n < size ? (size_t) n : size - 1;
}


int
bottle_audit_random_id(char out[BOTTLE_AUDIT_RANDOM_LEN])
{
    size_t          i;
    unsigned char   r[16];

    static const char  hex[] = "0123456789abcdef";

    if (RAND_bytes(r, sizeof(r)) != 1) {
        return -1;
    }

    for (i = 0; i < sizeof(r); i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 0x0f];
    }

    out[2 * sizeof(r)] = '\0';

    return 0;
}
