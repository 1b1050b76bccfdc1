/*
 * bottlectl explain BOTTLE METHOD URL [-H 'Name: value']...
 *
 * The verdict the gateway would give this request of this bottle, and the
 * rule that decides it, from the pipeline's own code (lib/bottle_decide.h,
 * the rule table of lib/bottle_rule.h), in the pipeline's order:
 *
 *   https://host[:port]/path?query   as inside a CONNECT tunnel to
 *                                    host:port (the CONNECT's route and
 *                                    port first, then the request)
 *   http://host[:port]/path?query    as a plain proxy request
 *
 * What explain cannot see is said in its output, never guessed: the body
 * and the DLP scan, the cookie jar (the agent's cookies count as not in
 * it), the resolver's answer (the address rule), the identity (the bottle
 * is named).  Exit status: 0 allowed, 1 refused, 2 usage or error.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bottlectl.h"
#include "bottle_decide.h"
#include "bottle_policy.h"
#include "bottle_rule.h"


#define CTL_EXPLAIN_HEADERS_MAX  64
#define CTL_EXPLAIN_EGRESS_HOST  "_egress.local"


typedef struct {
    bottle_request_t        req;
    char                    host[BOTTLE_DECIDE_HOST_MAX + 1];
    int                     tls;
    bottle_decide_header_t  headers[CTL_EXPLAIN_HEADERS_MAX];
} ctl_explain_t;


static int ctl_explain_bottle(FILE *out, FILE *err, const bottle_t *b,
    int argc, char **argv);
static int ctl_explain_url(ctl_explain_t *x, FILE *err, const char *url,
    bottle_decision_t *d);
static int ctl_explain_header(ctl_explain_t *x, FILE *err, const char *arg);
static int ctl_explain_run(FILE *out, const bottle_t *b, ctl_explain_t *x);
static int ctl_explain_refused(FILE *out, const bottle_decision_t *d,
    const char *route);
static void ctl_explain_allowed(FILE *out, const bottle_route_t *route,
    ctl_explain_t *x);


int
bottlectl_explain(bottlectl_t *ctl, int argc, char **argv)
{
    int                     rc;
    const bottle_t         *b;
    bottle_policy_t        *policy;

    /* argv[0] is "explain" */
    argc--;
    argv++;

    if (argc < 3) {
        return bottlectl_usage("explain BOTTLE METHOD URL "
                               "[-H 'Name: value']...");
    }

    policy = NULL;

    rc = bottlectl_fetch_bottle(ctl, argv[0], &policy);

    if (rc != 0) {
        /* bottlectl_fetch_bottle said why */
        return rc == BOTTLECTL_UNREACHABLE ? rc : BOTTLECTL_USAGE;
    }

    b = bottle_policy_find_id(policy, argv[0], strlen(argv[0]));

    if (b == NULL) {
        bottlectl_error("cannot explain '%s': no such bottle", argv[0]);
        rc = 2;

    } else {
        rc = ctl_explain_bottle(stdout, stderr, b, argc - 1, argv + 1);
    }

    bottle_policy_free(policy);

    return rc;
}


/* argv: METHOD URL [-H 'Name: value']... */

static int
ctl_explain_bottle(FILE *out, FILE *err, const bottle_t *b, int argc,
    char **argv)
{
    int                 i;
    char               *arg;
    ctl_explain_t       x;
    bottle_decision_t   d;

    memset(&x, 0, sizeof(x));

    x.req.method = argv[0];
    x.req.method_len = strlen(argv[0]);

    if (x.req.method_len == 0) {
        fprintf(err, "bottlectl: cannot explain '': no method\n");
        return 2;
    }

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-H") == 0 && i + 1 < argc) {
            arg = argv[++i];

        } else if (strncmp(argv[i], "-H", 2) != 0 || argv[i][2] == '\0') {
            fprintf(err, "bottlectl: cannot explain '%s': expected "
                    "-H 'Name: value'\n", argv[i]);
            return 2;

        } else {
            arg = argv[i] + 2;
        }

        if (ctl_explain_header(&x, err, arg) != 0) {
            return 2;
        }
    }

    x.req.headers = x.headers;
    x.req.unstripped = 1;

    switch (ctl_explain_url(&x, err, argv[1], &d)) {
    case 0:
        break;
    case 1:
        /* the gateway refuses the target itself */
        return ctl_explain_refused(out, &d, NULL);
    default:
        return 2;
    }

    return ctl_explain_run(out, b, &x);
}


/*
 * 0: x->req has the target; 1: the gateway refuses it (d says why, with
 * the module's reason); -1: not a URL explain reads (said on err).
 */

static int
ctl_explain_url(ctl_explain_t *x, FILE *err, const char *url,
    bottle_decision_t *d)
{
    int          bracketed;
    size_t       hlen;
    const char  *p, *host, *end, *q;
    long         port;

    if (strncmp(url, "https://", 8) == 0) {
        x->tls = 1;
        p = url + 8;

    } else if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;

    } else {
        fprintf(err, "bottlectl: cannot explain '%s': the URL must be "
                "http:// or https://\n", url);
        return -1;
    }

    x->req.tunnel = x->tls;

    /* the authority: [v6]:port, host:port, host */

    end = p + strcspn(p, "/?#");
    bracketed = 0;
    host = p;

    if (*p == '[') {
        q = memchr(p, ']', end - p);
        if (q == NULL) {
            fprintf(err, "bottlectl: cannot explain '%s': no ']' after "
                    "the IPv6 address\n", url);
            return -1;
        }

        host = p + 1;
        hlen = q - host;
        bracketed = 1;
        p = q + 1;

    } else {
        q = memchr(p, ':', end - p);
        hlen = (q ? q : end) - p;
        p += hlen;
    }

    memset(d, 0, sizeof(*d));

    {
        char  buf[bottle_decide_host_size(BOTTLE_DECIDE_HOST_MAX + 1)];

        /* a trailing dot may make BOTTLE_DECIDE_HOST_MAX + 1 valid */

        x->req.host_len = hlen > BOTTLE_DECIDE_HOST_MAX + 1 ? 0
                          : bottle_decide_canonical_host(buf, host, hlen,
                                                         bracketed);
        if (x->req.host_len == 0) {
            d->rule = BOTTLE_RULE_BAD_REQUEST;
            d->reason_len = snprintf(d->reason, sizeof(d->reason), "%s",
                                     "the target host is not a valid host "
                                     "name or IP address");
            return 1;
        }

        memcpy(x->host, buf, x->req.host_len + 1);
        x->req.host = x->host;
    }

    port = x->tls ? 443 : 80;

    if (p < end) {
        char  *stop;

        if (*p != ':' || p + 1 == end || p[1] < '0' || p[1] > '9') {
            goto bad_port;
        }

        port = strtol(p + 1, &stop, 10);

        if (stop != end || port < 1 || port > 65535) {
            goto bad_port;
        }
    }

    x->req.port = (unsigned) port;

    /* the path as sent ("/" when empty), the query without '?' */

    p = end;
    q = p + strcspn(p, "?");

    if (q == p) {
        x->req.path = "/";
        x->req.path_len = 1;

    } else {
        x->req.path = p;
        x->req.path_len = q - p;
    }

    x->req.query = *q ? q + 1 : q;
    x->req.query_len = strlen(x->req.query);

    return 0;

bad_port:

    d->rule = BOTTLE_RULE_BAD_REQUEST;
    d->reason_len = snprintf(d->reason, sizeof(d->reason), "%s",
                             "invalid port in the target");
    return 1;
}


static int
ctl_explain_header(ctl_explain_t *x, FILE *err, const char *arg)
{
    const char              *colon, *v, *e;
    bottle_decide_header_t  *h;

    colon = strchr(arg, ':');

    if (colon == NULL || colon == arg
        || strcspn(arg, " \t") < (size_t) (colon - arg))
    {
        fprintf(err, "bottlectl: cannot explain '%s': a header is "
                "'Name: value'\n", arg);
        return -1;
    }

    if (x->req.nheaders == CTL_EXPLAIN_HEADERS_MAX) {
        fprintf(err, "bottlectl: cannot explain '%s': more than %d "
                "headers\n", arg, CTL_EXPLAIN_HEADERS_MAX);
        return -1;
    }

    for (v = colon + 1; *v == ' ' || *v == '\t'; v++) { /* void */ }

    for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--) {
        /* void */
    }

    h = &x->headers[x->req.nheaders++];
    h->name = arg;
    h->name_len = colon - arg;
    h->value = v;
    h->value_len = e - v;

    /* the first Upgrade is the one nginx keeps */

    if (x->req.upgrade == NULL
        && h->name_len == sizeof("upgrade") - 1
        && strncasecmp(h->name, "upgrade", h->name_len) == 0)
    {
        x->req.upgrade = h->value;
        x->req.upgrade_len = h->value_len;
    }

    return 0;
}


/* the pipeline's decisions in its order; the exit status */

static int
ctl_explain_run(FILE *out, const bottle_t *b, ctl_explain_t *x)
{
    int                    rc;
    unsigned char         *scratch;
    bottle_decision_t      d;
    const bottle_route_t  *route;

    /* a CONNECT: the front decides the route and port before any request */

    if (x->tls && strcmp(x->host, CTL_EXPLAIN_EGRESS_HOST) != 0) {
        bottle_decide_route(&d, b, &x->req);

        if (d.rule != BOTTLE_RULE_NONE) {
            return ctl_explain_refused(out, &d, d.route ? x->host : NULL);
        }

        if (d.route->passthrough) {
            fprintf(out, "verdict: allowed\nroute: %s\n"
                    "passthrough: yes (the tunnel is spliced: no request "
                    "rule, DLP, stripping or injection applies)\n",
                    d.route->host.data);
            return 0;
        }
    }

    scratch = malloc(bottle_decide_git_scratch(&x->req));
    if (scratch == NULL) {
        fprintf(stderr, "bottlectl: cannot explain: out of memory\n");
        return 2;
    }

    bottle_decide_target(&d, &x->req, scratch);

    if (d.rule != BOTTLE_RULE_NONE) {
        rc = ctl_explain_refused(out, &d, NULL);
        goto done;
    }

    if (strcmp(x->host, CTL_EXPLAIN_EGRESS_HOST) == 0) {
        fprintf(out, "verdict: allowed\nroute: %s (the gateway answers: "
                "this bottle's allowlist)\n", CTL_EXPLAIN_EGRESS_HOST);
        rc = 0;
        goto done;
    }

    bottle_decide_route(&d, b, &x->req);

    if (d.rule != BOTTLE_RULE_NONE) {
        rc = ctl_explain_refused(out, &d, NULL);
        goto done;
    }

    route = d.route;

    /* here the gateway reads the body and runs DLP: not explained */

    bottle_decide_git(&d, route, &x->req, scratch);

    if (d.rule == BOTTLE_RULE_NONE) {
        bottle_decide_policy(&d, route, &x->req);
    }

    if (d.rule != BOTTLE_RULE_NONE) {
        rc = ctl_explain_refused(out, &d, route->host.data);
        goto done;
    }

    ctl_explain_allowed(out, route, x);
    rc = 0;

done:

    free(scratch);

    return rc;
}


static int
ctl_explain_refused(FILE *out, const bottle_decision_t *d, const char *route)
{
    const bottle_rule_t  *rule;

    rule = bottle_rule(d->rule);

    fprintf(out, "verdict: refused\nrule: %s\nstatus: %u\nreason: %.*s\n"
            "route: %s\nadvice: %s\n",
            rule->name, rule->status, (int) d->reason_len, d->reason,
            route ? route : "-", rule->advice);

    return 1;
}


static void
ctl_explain_allowed(FILE *out, const bottle_route_t *route, ctl_explain_t *x)
{
    size_t                         i, n;
    const char                    *sep;
    const bottle_decide_header_t  *h;

    fprintf(out, "verdict: allowed\nroute: %s\n", route->host.data);

    if (route->auth_type == BOTTLE_AUTH_NONE) {
        fprintf(out, "inject: none\n");

    } else {
        fprintf(out, "inject: %s (%s, from egress token %s)\n",
                route->auth_type == BOTTLE_AUTH_HEADER
                ? route->auth_header.data : "authorization",
                route->auth_type == BOTTLE_AUTH_BEARER ? "Bearer"
                : route->auth_type == BOTTLE_AUTH_TOKEN ? "token" : "header",
                route->auth_secret.len ? route->auth_secret.data : "-");
    }

    if (route->preserve_auth) {
        fprintf(out, "strip: no (preserve_auth): the agent's credentials "
                "and cookies go upstream\n");

    } else {
        fprintf(out, "strip: yes: credential headers, cookies not in the "
                "gateway's jar, credential query parameters\n");
    }

    /* the headers given that would not go upstream */

    n = 0;
    sep = "stripped:";

    for (i = 0; i < x->req.nheaders; i++) {
        h = &x->req.headers[i];

        if (bottle_decide_strips(route, h->name, h->name_len)
            || (!route->preserve_auth
                && bottle_decide_is_cookie(h->name, h->name_len)))
        {
            fprintf(out, "%s %.*s", sep, (int) h->name_len, h->name);
            sep = ",";
            n++;
        }
    }

    if (n) {
        fprintf(out, "\n");
    }

    if (x->req.upgrade) {
        fprintf(out, "upgrade: %.*s (the frames are not inspected)\n",
                (int) x->req.upgrade_len, x->req.upgrade);
    }

    if (route->mcp) {
        fprintf(out, "mcp: a POST body is read as JSON-RPC: tools/call, "
                "resources/read and prompts/get gated by the route's mcp "
                "lists, lists filtered (docs/mcp.md)\n");
    }

    fprintf(out, "not checked: the body and DLP, the resolved address\n");
}
