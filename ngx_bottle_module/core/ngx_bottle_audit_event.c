
/*
 * The audit journal's events (docs/control-plane.md, "Audit events"):
 * what the rest of the module reports, built into a bottle_audit_event_t
 * with its common fields and handed to the queue (ngx_bottle_audit.c),
 * or serialized for a producer that runs its script itself.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "ngx_bottle_audit.h"


/* every event: refusals are logged once each, at ngx_bottle_log_verdict */

void
ngx_bottle_audit_refusal(ngx_connection_t *c, ngx_bottle_verdict_t *v,
    ngx_uint_t status)
{
    u_char                    id[128];
    bottle_audit_event_t      e;
    const ngx_bottle_rule_t  *rule;

    if (!ngx_bottle_audit.on) {
        return;
    }

    rule = ngx_bottle_rule(v->rule);

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_REFUSAL, v->bottle, &v->host,
                            &v->correlation, id, sizeof(id));

    e.rule.data = (const char *) rule->name.data;
    e.rule.len = rule->name.len;
    e.status = v->status ? v->status : rule->status;
    e.reason.data = (const char *) v->reason.data;
    e.reason.len = v->reason.len;
    e.method.data = (const char *) v->method.data;
    e.method.len = v->method.len;
    e.port = v->port;

    (void) ngx_bottle_audit_push(&e, NULL, 0);
}


void
ngx_bottle_audit_finding(const bottle_t *bottle, ngx_str_t *host,
    ngx_str_t *correlation, const char *detector, const char *rule,
    const char *location, const char *digest, const char *action)
{
    u_char                id[128];
    bottle_audit_event_t  e;

    if (!ngx_bottle_audit.on) {
        return;
    }

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_DLP_FINDING, bottle, host,
                            correlation, id, sizeof(id));

    e.detector.data = detector;
    e.detector.len = ngx_strlen(detector);
    e.dlp_rule.data = rule;
    e.dlp_rule.len = ngx_strlen(rule);
    e.location.data = location;
    e.location.len = ngx_strlen(location);
    e.digest.data = digest;
    e.digest.len = ngx_strlen(digest);
    e.action.data = action;
    e.action.len = ngx_strlen(action);

    (void) ngx_bottle_audit_push(&e, NULL, 0);
}


/* dlp.reflected: a response carried held values, scrubbed; never a value */

void
ngx_bottle_audit_reflected(const bottle_t *bottle, ngx_str_t *host,
    ngx_str_t *correlation, const char *const *held, const char *const *kinds,
    size_t nheld, const char *const *where, size_t nwhere,
    const char *const *encodings, size_t nencodings)
{
    u_char                id[128];
    bottle_audit_event_t  e;

    if (!ngx_bottle_audit.on) {
        return;
    }

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_DLP_REFLECTED, bottle, host,
                            correlation, id, sizeof(id));

    e.held.items = held;
    e.held.n = nheld;
    e.held_kinds.items = kinds;
    e.held_kinds.n = nheld;
    e.where.items = where;
    e.where.n = nwhere;
    e.encodings.items = encodings;
    e.encodings.n = nencodings;

    (void) ngx_bottle_audit_push(&e, NULL, 0);
}


/*
 * decision.proposed, for a producer that runs the propose script itself
 * (a held request): the event as a chained argument (bottle_audit_chain.h;
 * free() it) and the stream's MAXLEN.
 */

char *
ngx_bottle_audit_proposed(ngx_str_t *bottle, ngx_str_t *host,
    const char *id, const char *kind, const char *summary,
    const char *justification, size_t *len, const char **maxlen)
{
    u_char                eid[128];
    ngx_str_t             corr;
    bottle_audit_event_t  e;

    corr.data = (u_char *) id;
    corr.len = ngx_strlen(id);

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_PROPOSED, NULL, host, &corr,
                            eid, sizeof(eid));

    e.bottle.data = (const char *) bottle->data;
    e.bottle.len = bottle->len;

    e.kind.data = kind;
    e.kind.len = ngx_strlen(kind);
    e.summary.data = summary;
    e.summary.len = ngx_strlen(summary);
    e.justification.data = justification;
    e.justification.len = ngx_strlen(justification);

    *maxlen = ngx_bottle_audit.maxlen;

    return bottle_audit_chained(&e, len);
}


/*
 * decision.resolved of a proposal whose request is gone (the withdraw
 * script's): operator "egress", operator_action "expired", the reason.
 */

char *
ngx_bottle_audit_expired(ngx_str_t *bottle, ngx_str_t *host,
    const char *id, const char *decision, const char *kind,
    const char *reason, size_t *len, const char **maxlen)
{
    u_char                eid[128];
    ngx_str_t             corr;
    bottle_audit_event_t  e;

    corr.data = (u_char *) id;
    corr.len = ngx_strlen(id);

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_RESOLVED, NULL, host, &corr,
                            eid, sizeof(eid));

    e.bottle.data = (const char *) bottle->data;
    e.bottle.len = bottle->len;

    e.kind.data = kind;
    e.kind.len = ngx_strlen(kind);
    e.operator_name.data = "egress";
    e.operator_name.len = 6;
    e.operator_action.data = "expired";
    e.operator_action.len = 7;
    e.decision.data = decision;
    e.decision.len = ngx_strlen(decision);
    e.reason.data = reason;
    e.reason.len = ngx_strlen(reason);

    *maxlen = ngx_bottle_audit.maxlen;

    return bottle_audit_chained(&e, len);
}
