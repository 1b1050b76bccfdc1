/*
 * The request-level decisions of the gateway's pipeline, on a plain-C
 * description of the request: the target's path checks, the route (host,
 * port), git smart HTTP, methods and allow entries, WebSocket upgrades,
 * and which of the agent's headers the gateway strips.  The nginx module
 * calls these in the spec's order, around the steps that need nginx (the
 * body, DLP, the cookie jar, injection, the resolver); `bottlectl explain`
 * calls them in the same order, so it answers with the same rule, status
 * and reason as the gateway.
 *
 * Everything in a bottle_request_t is the agent's input.  No nginx types
 * and no allocation: the caller passes the scratch buffers.
 */

#ifndef BOTTLE_DECIDE_H
#define BOTTLE_DECIDE_H

#include <stddef.h>

#include "bottle_policy.h"
#include "bottle_rule.h"


/* a reason is at most this long, as the module's verdict keeps it */
#define BOTTLE_DECIDE_REASON_MAX  256

/* the longest canonical host, without the NUL */
#define BOTTLE_DECIDE_HOST_MAX    253


typedef struct {
    const char         *name;
    size_t              name_len;
    const char         *value;
    size_t              value_len;
} bottle_decide_header_t;


/* what the request asks for, as the policy sees it */
typedef struct {
    const char         *method;     /* as sent: "GET" */
    size_t              method_len;
    const char         *host;       /* canonical target host */
    size_t              host_len;
    unsigned            port;
    int                 tunnel;     /* inside a CONNECT tunnel: CONNECT's
                                       port defaults apply */
    const char         *path;       /* raw, as sent; never empty */
    size_t              path_len;
    const char         *query;      /* raw, without '?'; may be empty */
    size_t              query_len;

    /* for allow entries with header filters (bottle_decide_wants_headers) */
    const bottle_decide_header_t  *headers;
    size_t              nheaders;
    int                 unstripped; /* 1: headers as the agent sent them;
                                       those the gateway strips are not
                                       seen (0: the caller stripped them) */

    const char         *upgrade;    /* the Upgrade header's value, or NULL */
    size_t              upgrade_len;
} bottle_request_t;


typedef struct {
    bottle_rule_e       rule;       /* BOTTLE_RULE_NONE: it passes */
    const bottle_route_t  *route;   /* once bottle_decide_route found it */
    size_t              reason_len;
    char                reason[BOTTLE_DECIDE_REASON_MAX + 1];
} bottle_decision_t;


/*
 * The host a policy is keyed on: lowercase, no trailing dot (unless
 * bracketed), IP literals (every spelling inet_aton() or a browser
 * accepts) in canonical form, v6 unbracketed.  out:
 * bottle_decide_host_size(len) bytes; NUL-terminated.  Its length, or 0
 * if it is not a valid host.
 */
#define bottle_decide_host_size(len)                                         \
    (((len) > BOTTLE_IP_STRLEN ? (len) : BOTTLE_IP_STRLEN) + 1)
size_t bottle_decide_canonical_host(char *out, const char *host, size_t len,
    int bracketed);

/*
 * The target (path and query, as sent, path_len + 1 + query_len bytes in
 * target when both are given): a '#', a "." or ".." segment in any
 * spelling, a path encoded too often (bottle_uri.h): bad_request.
 * scratch: path_len bytes.
 */
void bottle_decide_target(bottle_decision_t *out, const bottle_request_t *req,
    unsigned char *scratch);

/* the route for the host and port: no_route, port; sets out->route */
void bottle_decide_route(bottle_decision_t *out, const bottle_t *b,
    const bottle_request_t *req);

/*
 * git smart HTTP, on the path and query percent-decoded as nginx decodes
 * them, case-insensitive: git-receive-pack always, git-upload-pack unless
 * the route sets git.fetch.  scratch: bottle_decide_git_scratch(req) bytes.
 */
#define bottle_decide_git_scratch(req)                                       \
    ((req)->path_len + 1 + (req)->query_len)
void bottle_decide_git(bottle_decision_t *out, const bottle_route_t *route,
    const bottle_request_t *req, unsigned char *scratch);

/*
 * The route's policy: methods, allow entries (path glob, methods, header
 * filters), then a WebSocket upgrade: method, allow, websocket.
 */
void bottle_decide_policy(bottle_decision_t *out, const bottle_route_t *route,
    const bottle_request_t *req);

/* 1 if some allow entry of the route filters on headers */
int bottle_decide_wants_headers(const bottle_route_t *route);

/*
 * 1 if the gateway strips this header of the agent's before the route
 * policy and before it goes upstream: the gateway's own
 * (Proxy-Authorization, Proxy-Connection), the one the route injects, and,
 * without preserve_auth, the credential headers.  Cookies are filtered by
 * the cookie jar instead (the module's), not here.
 */
int bottle_decide_strips(const bottle_route_t *route, const char *name,
    size_t len);

/* 1 if the name is Cookie (case-insensitive) */
int bottle_decide_is_cookie(const char *name, size_t len);


#endif /* BOTTLE_DECIDE_H */
