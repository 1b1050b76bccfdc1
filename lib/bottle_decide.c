/*
 * The request-level decisions of the pipeline (bottle_decide.h): what the
 * nginx module decided with nginx types until issue 14, here so that
 * `bottlectl explain` runs the same code.  Reason texts are the ones the
 * agent reads in a refusal and the log line carries: change them here and
 * docs/refusals.md together.
 */

#include <stdio.h>
#include <string.h>

#include "bottle_decide.h"
#include "bottle_uri.h"


static void bottle_decide_pass(bottle_decision_t *out);
static void bottle_decide_deny(bottle_decision_t *out, bottle_rule_e rule,
    const char *text);
static void bottle_decide_add(bottle_decision_t *out, const char *s,
    size_t n);
static size_t bottle_decide_unescape(unsigned char *dst,
    const unsigned char *src, size_t n);
static int bottle_decide_has(const unsigned char *hay, size_t n,
    const char *needle);
static int bottle_decide_allow_match(const bottle_allow_t *allow,
    const bottle_route_t *route, const bottle_request_t *req);
static int bottle_decide_seen(const bottle_route_t *route,
    const bottle_request_t *req, const bottle_decide_header_t *h);
static int bottle_decide_eq(const char *a, size_t alen, const char *b,
    size_t blen);


/* the gateway's own headers: gone whatever the route says */
static const char  *bottle_gateway_headers[] = {
    "proxy-authorization",
    "proxy-connection",
    NULL
};

/* CREDENTIAL_HEADERS of the spec; cookies go through the jar */
static const char  *bottle_credential_headers[] = {
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "private-token",
    "x-auth-token",
    "x-access-token",
    "x-gitea-token",
    "x-vault-token",
    "x-amz-security-token",
    "ocp-apim-subscription-key",
    NULL
};


static unsigned char
bottle_decide_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char) (c | 0x20) : c;
}


size_t
bottle_decide_canonical_host(char *out, const char *host, size_t len,
    int bracketed)
{
    size_t       i, n;
    bottle_ip_t  ip;
    char         buf[BOTTLE_IP_STRLEN];

    if (len && host[len - 1] == '.' && !bracketed) {
        len--;
    }

    if (len == 0 || len > BOTTLE_DECIDE_HOST_MAX) {
        return 0;
    }

    if (bracketed || bottle_ip_looks_numeric(host, len)
        || memchr(host, ':', len) != NULL)
    {
        if (bottle_ip_parse(&ip, host, len) != 0) {
            return 0;
        }

        n = bottle_ip_format(buf, sizeof(buf), &ip);
        if (n == 0) {
            return 0;
        }

        memcpy(out, buf, n);
        out[n] = '\0';

        return n;
    }

    for (i = 0; i < len; i++) {
        unsigned char  c = (unsigned char) host[i];

        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_'))
        {
            return 0;
        }

        out[i] = (char) bottle_decide_lower(c);
    }

    out[len] = '\0';

    return len;
}


/*
 * Every request, not only a connection's first: a '#' anywhere in the
 * target (servers that drop a fragment serve the path before it, which
 * no allow entry saw), and a "." or ".." segment in any spelling a server
 * may undo (bottle_uri.h).
 */

void
bottle_decide_target(bottle_decision_t *out, const bottle_request_t *req,
    unsigned char *scratch)
{
    int  rc;

    bottle_decide_pass(out);

    if (bottle_uri_check_target((const unsigned char *) req->path,
                                req->path_len) != BOTTLE_URI_OK
        || bottle_uri_check_target((const unsigned char *) req->query,
                                   req->query_len) != BOTTLE_URI_OK)
    {
        bottle_decide_deny(out, BOTTLE_RULE_BAD_REQUEST,
                           "a '#' in the request target is refused");
        return;
    }

    rc = bottle_uri_check_path((const unsigned char *) req->path,
                               req->path_len, scratch);

    if (rc == BOTTLE_URI_E_DOT) {
        bottle_decide_deny(out, BOTTLE_RULE_BAD_REQUEST,
                           "dot segments in the path are refused, "
                           "in any spelling");

    } else if (rc != BOTTLE_URI_OK) {
        char  buf[64];

        snprintf(buf, sizeof(buf), "%d", BOTTLE_URI_DECODE_ROUNDS);
        bottle_decide_deny(out, BOTTLE_RULE_BAD_REQUEST,
                           "the path is percent-encoded more than ");
        bottle_decide_add(out, buf, strlen(buf));
        bottle_decide_add(out, " times over", sizeof(" times over") - 1);
    }
}


void
bottle_decide_route(bottle_decision_t *out, const bottle_t *b,
    const bottle_request_t *req)
{
    char                   buf[32];
    const bottle_route_t  *route;

    bottle_decide_pass(out);
    out->route = NULL;

    route = bottle_find_route(b, req->host, req->host_len);
    if (route == NULL) {
        bottle_decide_deny(out, BOTTLE_RULE_NO_ROUTE,
                           "the host is not on this bottle's allowlist");
        return;
    }

    out->route = route;

    /* inside a tunnel the port is the CONNECT's: CONNECT defaults apply */

    if (!bottle_route_port_ok(route, req->port, req->tunnel)) {
        snprintf(buf, sizeof(buf), "port %u", req->port);
        bottle_decide_deny(out, BOTTLE_RULE_PORT, buf);
        bottle_decide_add(out, " is not allowed for this host",
                          sizeof(" is not allowed for this host") - 1);
    }
}


/*
 * git smart HTTP: push (git-receive-pack) never goes out through egress,
 * fetch (git-upload-pack) only where the route sets git.fetch.  Both the
 * service endpoints and the ref advertisement (?service=...) are caught,
 * in the decoded path and query, as a server would see them.
 */

void
bottle_decide_git(bottle_decision_t *out, const bottle_route_t *route,
    const bottle_request_t *req, unsigned char *scratch)
{
    size_t  n;

    bottle_decide_pass(out);

    n = bottle_decide_unescape(scratch, (const unsigned char *) req->path,
                               req->path_len);
    scratch[n++] = '?';
    n += bottle_decide_unescape(scratch + n,
                                (const unsigned char *) req->query,
                                req->query_len);

    if (bottle_decide_has(scratch, n, "git-receive-pack")) {
        bottle_decide_deny(out, BOTTLE_RULE_GIT,
                           "git smart HTTP (git-receive-pack) is refused "
                           "on this route");
        return;
    }

    if (!route->git_fetch && bottle_decide_has(scratch, n, "git-upload-pack"))
    {
        bottle_decide_deny(out, BOTTLE_RULE_GIT,
                           "git smart HTTP (git-upload-pack) is refused "
                           "on this route");
    }
}


/*
 * Percent-decoding as nginx's ngx_unescape_uri() does it with no flags,
 * so the git check sees what it saw in the module: "%XY" becomes the
 * byte; a '%' before a non-hex character is dropped and the character
 * kept; "%X" before a non-hex character is dropped with it; a '%' or
 * "%X" at the end is dropped.  dst: at least n bytes.
 */

static size_t
bottle_decide_unescape(unsigned char *dst, const unsigned char *src,
    size_t n)
{
    size_t         i, d;
    unsigned char  c, hi;
    int            state, v;

    d = 0;
    state = 0;
    hi = 0;

    for (i = 0; i < n; i++) {
        c = src[i];

        if (c >= '0' && c <= '9') {
            v = c - '0';

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            v = (c | 0x20) - 'a' + 10;

        } else {
            v = -1;
        }

        switch (state) {

        case 0:
            if (c == '%') {
                state = 1;

            } else {
                dst[d++] = c;
            }

            break;

        case 1:
            if (v < 0) {
                dst[d++] = c;
                state = 0;

            } else {
                hi = (unsigned char) v;
                state = 2;
            }

            break;

        default:
            if (v >= 0) {
                dst[d++] = (unsigned char) ((hi << 4) + v);
            }

            state = 0;
        }
    }

    return d;
}


/* ASCII case-insensitive search; needle is lowercase */

static int
bottle_decide_has(const unsigned char *hay, size_t n, const char *needle)
{
    size_t  i, j, len;

    len = strlen(needle);

    for (i = 0; i + len <= n; i++) {
        for (j = 0; j < len; j++) {
            if (bottle_decide_lower(hay[i + j]) != (unsigned char) needle[j]) {
                break;
            }
        }

        if (j == len) {
            return 1;
        }
    }

    return 0;
}


/* methods and allow entries; headers are seen without the stripped ones */

void
bottle_decide_policy(bottle_decision_t *out, const bottle_route_t *route,
    const bottle_request_t *req)
{
    size_t    i;
    unsigned  m, methods;
    int       path_matched;

    bottle_decide_pass(out);

    m = bottle_method_bit(req->method, req->method_len);
    path_matched = 0;

    if (route->nallow == 0) {
        methods = route->methods ? route->methods : BOTTLE_M_READ_ONLY;

        if (!(methods & BOTTLE_M_ANY) && !(m & methods)) {
            bottle_decide_deny(out, BOTTLE_RULE_METHOD, "method ");
            bottle_decide_add(out, req->method, req->method_len);
            bottle_decide_add(out, " is not allowed on this route",
                              sizeof(" is not allowed on this route") - 1);
            return;
        }

        goto upgrade;
    }

    for (i = 0; i < route->nallow; i++) {
        if (!bottle_decide_allow_match(&route->allow[i], route, req)) {
            continue;
        }

        path_matched = 1;

        methods = route->allow[i].methods ? route->allow[i].methods
                  : route->methods ? route->methods : BOTTLE_M_READ_ONLY;

        if ((methods & BOTTLE_M_ANY) || (m & methods)) {
            goto upgrade;
        }
    }

    if (path_matched) {
        bottle_decide_deny(out, BOTTLE_RULE_METHOD, "method ");
        bottle_decide_add(out, req->method, req->method_len);
        bottle_decide_add(out, " is not allowed for this path",
                          sizeof(" is not allowed for this path") - 1);
        return;
    }

    bottle_decide_deny(out, BOTTLE_RULE_ALLOW,
                       "no allow entry matches this path");
    return;

upgrade:

    /*
     * a WebSocket leaves HTTP: its frames are not inspected, so only a
     * route that opts in may upgrade
     */

    if (req->upgrade != NULL && !route->websocket) {
        bottle_decide_deny(out, BOTTLE_RULE_WEBSOCKET, "upgrade to \"");
        bottle_decide_add(out, req->upgrade, req->upgrade_len);
        bottle_decide_add(out, "\" refused", sizeof("\" refused") - 1);
    }
}


static int
bottle_decide_allow_match(const bottle_allow_t *allow,
    const bottle_route_t *route, const bottle_request_t *req)
{
    size_t                         i, j, n;
    const bottle_decide_header_t  *h;

    if (allow->path.len
        && !bottle_glob_match(allow->path.data, allow->path.len, req->path,
                              req->path_len))
    {
        return 0;
    }

    /* every filtered header is present, and each of its values matches */

    for (i = 0; i < allow->nheaders; i++) {
        n = 0;

        for (j = 0; j < req->nheaders; j++) {
            h = &req->headers[j];

            if (!bottle_decide_eq(h->name, h->name_len,
                                  allow->headers[i].name.data,
                                  allow->headers[i].name.len)
                || !bottle_decide_seen(route, req, h))
            {
                continue;
            }

            if (!bottle_glob_match(allow->headers[i].value.data,
                                   allow->headers[i].value.len,
                                   h->value, h->value_len))
            {
                return 0;
            }

            n++;
        }

        if (n == 0) {
            return 0;
        }
    }

    return 1;
}


/* a header as sent is seen by the route policy unless it is stripped */

static int
bottle_decide_seen(const bottle_route_t *route, const bottle_request_t *req,
    const bottle_decide_header_t *h)
{
    if (!req->unstripped) {
        return 1;
    }

    /* without the gateway's cookie jar, no cookie of the agent's is kept */

    if (!route->preserve_auth && bottle_decide_is_cookie(h->name, h->name_len))
    {
        return 0;
    }

    return !bottle_decide_strips(route, h->name, h->name_len);
}


int
bottle_decide_wants_headers(const bottle_route_t *route)
{
    size_t  i;

    for (i = 0; i < route->nallow; i++) {
        if (route->allow[i].nheaders) {
            return 1;
        }
    }

    return 0;
}


int
bottle_decide_strips(const bottle_route_t *route, const char *name,
    size_t len)
{
    const char  **p;

    for (p = bottle_gateway_headers; *p; p++) {
        if (bottle_decide_eq(name, len, *p, strlen(*p))) {
            return 1;
        }
    }

    /* an MCP route's responses are read: asked for in identity */

    if (route->mcp != NULL
        && bottle_decide_eq(name, len, "accept-encoding", 15))
    {
        return 1;
    }

    /* the injected header is the gateway's, even with preserve_auth */

    if (route->auth_type != BOTTLE_AUTH_NONE
        && bottle_decide_eq(name, len, route->auth_header.data,
                            route->auth_header.len))
    {
        return 1;
    }

    if (route->preserve_auth) {
        return 0;
    }

    for (p = bottle_credential_headers; *p; p++) {
        if (bottle_decide_eq(name, len, *p, strlen(*p))) {
            return 1;
        }
    }

    return 0;
}


int
bottle_decide_is_cookie(const char *name, size_t len)
{
    return bottle_decide_eq(name, len, "cookie", sizeof("cookie") - 1);
}


/* b is lowercase */

static int
bottle_decide_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t  i;

    if (alen != blen) {
        return 0;
    }

    for (i = 0; i < alen; i++) {
        if (bottle_decide_lower((unsigned char) a[i]) != (unsigned char) b[i])
        {
            return 0;
        }
    }

    return 1;
}


static void
bottle_decide_pass(bottle_decision_t *out)
{
    out->rule = BOTTLE_RULE_NONE;
    out->reason_len = 0;
    out->reason[0] = '\0';
}


static void
bottle_decide_deny(bottle_decision_t *out, bottle_rule_e rule,
    const char *text)
{
    out->rule = rule;
    out->reason_len = 0;
    bottle_decide_add(out, text, strlen(text));
}


/* the agent's bytes as they are, cut at BOTTLE_DECIDE_REASON_MAX */

static void
bottle_decide_add(bottle_decision_t *out, const char *s, size_t n)
{
    if (n > BOTTLE_DECIDE_REASON_MAX - out->reason_len) {
        n = BOTTLE_DECIDE_REASON_MAX - out->reason_len;
    }

    if (n == 0) {
        return;
    }

    memcpy(out->reason + out->reason_len, s, n);
    out->reason_len += n;
    out->reason[out->reason_len] = '\0';
}
