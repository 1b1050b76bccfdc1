/*
 * bottle_decide and bottle_rule: every request-level rule the pipeline
 * decides in libbottle (target, no_route, port, git, method, allow,
 * websocket), its reason text as the agent reads it, the allowed case,
 * the headers the gateway strips, host canonicalisation, and
 * `bottlectl explain` (bottlectl/ctl_explain.c) end to end on the same
 * fixture (t/unit/data/decide.json).
 *
 * Usage: decide_test DATA_DIR (t/unit/data by default)
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "bottle_decide.h"
#include "bottle_policy.h"
#include "bottle_rule.h"

/* explain itself, with bottlectl's loader replaced by the fixture's */
#include "../../bottlectl/ctl_explain.c"


static const char  *data_dir = "t/unit/data";


/* ctl_common.c's two, as bottlectl has them: one line on stderr */

void
bottlectl_error(const char *fmt, ...)
{
    va_list  ap;

    fputs("bottlectl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}


int
bottlectl_usage(const char *synopsis)
{
    fprintf(stderr, "bottlectl: usage: %s\n", synopsis);

    return BOTTLECTL_USAGE;
}


int
bottlectl_fetch_bottle(bottlectl_t *ctl, const char *id,
    bottle_policy_t **out)
{
    char  err[1024];

    (void) id;

    if (bottle_policy_load(out, ctl->policy, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }

    return 0;
}


/* one request: method, http(s)://host[:port]/path?query */
static bottle_request_t             rq;
static bottle_decide_header_t       hd[8];
static char                         host[300];


static void
request(const char *method, int tunnel, const char *h, unsigned port,
    const char *path, const char *query)
{
    memset(&rq, 0, sizeof(rq));
    rq.method = method;
    rq.method_len = strlen(method);
    rq.host_len = bottle_decide_canonical_host(host, h, strlen(h), 0);
    rq.host = host;
    rq.port = port;
    rq.tunnel = tunnel;
    rq.path = path;
    rq.path_len = strlen(path);
    rq.query = query;
    rq.query_len = strlen(query);
    rq.headers = hd;
}


static void
header(const char *name, const char *value)
{
    bottle_decide_header_t  *h = &hd[rq.nheaders++];

    h->name = name;
    h->name_len = strlen(name);
    h->value = value;
    h->value_len = strlen(value);

    if (strcmp(name, "Upgrade") == 0) {
        rq.upgrade = value;
        rq.upgrade_len = strlen(value);
    }
}


/* the pipeline's order, without the body: the decision's rule */
static bottle_decision_t  dd;

static const char *
decide(const bottle_t *b)
{
    unsigned char  scratch[4096];

    bottle_decide_target(&dd, &rq, scratch);

    if (dd.rule == BOTTLE_RULE_NONE) {
        bottle_decide_route(&dd, b, &rq);
    }

    if (dd.rule == BOTTLE_RULE_NONE) {
        bottle_decide_git(&dd, dd.route, &rq, scratch);
    }

    if (dd.rule == BOTTLE_RULE_NONE) {
        bottle_decide_policy(&dd, dd.route, &rq);
    }

    return bottle_rule(dd.rule)->name;
}


static void
test_rules(void)
{
    is_int(bottle_rule(BOTTLE_RULE_NO_ROUTE)->status, 403, "no_route: 403");
    is_str(bottle_rule(BOTTLE_RULE_IDENTITY)->name, "identity", "identity");
    is_int(bottle_rule(BOTTLE_RULE_IDENTITY)->status, 407, "identity: 407");
    is_int(bottle_rule(BOTTLE_RULE_TOO_LARGE)->status, 413, "too_large: 413");
    is_str(bottle_rule(BOTTLE_RULE_COUNT)->name, "internal",
           "out of range: internal");
    is_int(bottle_rule_by_name("websocket", 9), BOTTLE_RULE_WEBSOCKET,
           "by name");
    is_int(bottle_rule_by_name("nope", 4), -1, "unknown name");
}


static void
test_host(void)
{
    char    out[bottle_decide_host_size(300)];
    size_t  n;

    n = bottle_decide_canonical_host(out, "API.GitHub.COM.", 15, 0);
    is_str(n ? out : "", "api.github.com", "lowercase, trailing dot gone");
    n = bottle_decide_canonical_host(out, "0x7f.1", 6, 0);
    is_str(n ? out : "", "127.0.0.1", "IPv4 literal canonical");
    n = bottle_decide_canonical_host(out, "2001:DB8:0::1", 13, 1);
    is_str(n ? out : "", "2001:db8::1", "IPv6 literal canonical");
    is_int(bottle_decide_canonical_host(out, "a b", 3, 0), 0, "space refused");
    is_int(bottle_decide_canonical_host(out, ".", 1, 0), 0, "empty refused");
    is_int(bottle_decide_canonical_host(out, "1.2.3.999", 9, 0), 0,
           "a numeric name that is no address refused");
}


static void
test_decide(const bottle_t *b)
{
    request("GET", 1, "api.github.com", 443, "/user", "");
    is_str(decide(b), "none", "GET /user passes");
    is_str(dd.route ? dd.route->host.data : "", "api.github.com", "its route");

    request("GET", 1, "evil.example", 443, "/", "");
    is_str(decide(b), "no_route", "unknown host: no_route");
    is_str(dd.reason, "the host is not on this bottle's allowlist",
           "no_route reason");

    request("GET", 1, "api.github.com", 8443, "/user", "");
    is_str(decide(b), "port", "unlisted port: port");
    is_str(dd.reason, "port 8443 is not allowed for this host", "port reason");

    request("GET", 1, "gitlab.com", 8443, "/", "");
    is_str(decide(b), "none", "listed port passes");
    request("GET", 0, "gitlab.com", 80, "/", "");
    is_str(decide(b), "port", "plain HTTP on a route that lists ports");
    request("GET", 0, "10.0.0.1", 8080, "/", "");
    is_str(decide(b), "none", "IP route, its port");
    request("GET", 0, "github.com", 80, "/", "");
    is_str(decide(b), "none", "no ports: 80 for plain HTTP");
    request("GET", 1, "github.com", 80, "/", "");
    is_str(decide(b), "port", "no ports: not 80 in a tunnel");

    /* git: decoded, case-insensitive, fetch per route */

    request("POST", 1, "api.github.com", 443,
            "/repos/example/w.git/git-receive-pack", "");
    is_str(decide(b), "git", "push: git");
    is_str(dd.reason, "git smart HTTP (git-receive-pack) is refused on this "
           "route", "git reason");
    request("GET", 1, "github.com", 443, "/x.git/info/refs",
            "service=GIT-RECEIVE-PACK");
    is_str(decide(b), "git", "push advertisement, any case, on a fetch route");
    request("GET", 1, "github.com", 443, "/x.git/info/refs",
            "service=git-upload-pack");
    is_str(decide(b), "none", "fetch on a git.fetch route passes");
    request("GET", 1, "gitlab.com", 443, "/x.git/git-upload-%70ack", "");
    is_str(decide(b), "git", "percent-encoded fetch without git.fetch");
    is_str(dd.reason, "git smart HTTP (git-upload-pack) is refused on this "
           "route", "git fetch reason");
    request("GET", 1, "gitlab.com", 443, "/git-upload%zz-pack", "");
    is_str(decide(b), "none", "'%' before a non-hex byte: only it dropped");
    request("GET", 1, "gitlab.com", 443, "/git-upload-%2", "");
    is_str(decide(b), "none", "a '%' half-escape at the end is dropped");
    request("GET", 1, "gitlab.com", 443, "/git-upload-pa%4zck", "");
    is_str(decide(b), "git", "'%4z' drops all three bytes, as nginx does");
    request("GET", 1, "gitlab.com", 443, "/git-upload-%pack", "");
    is_str(decide(b), "git", "'%p': the '%' dropped, 'p' kept, as nginx does");

    /* methods and allow entries */

    request("DELETE", 1, "api.github.com", 443, "/user", "");
    is_str(decide(b), "method", "a matched path, not its method");
    is_str(dd.reason, "method DELETE is not allowed for this path",
           "method reason (path)");
    request("PATCH", 1, "api.github.com", 443, "/repos/example/w", "");
    is_str(decide(b), "none", "an allow entry's own methods");
    request("GET", 1, "api.github.com", 443, "/admin", "");
    is_str(decide(b), "allow", "no allow entry: allow");
    is_str(dd.reason, "no allow entry matches this path", "allow reason");
    request("POST", 1, "gitlab.com", 443, "/", "");
    is_str(decide(b), "method", "read-only route: method");
    is_str(dd.reason, "method POST is not allowed on this route",
           "method reason (route)");
    request("PROPFIND", 1, "example.org", 443, "/open/x", "");
    header("Authorization", "Basic abc");
    is_str(decide(b), "none", "methods * admits any, preserve_auth header");

    /* header filters: present, every value matching, stripped ones unseen */

    request("GET", 1, "api.github.com", 443, "/graphql", "");
    is_str(decide(b), "allow", "filter: header absent");
    request("GET", 1, "api.github.com", 443, "/graphql", "");
    header("accept", "application/vnd.github.v3+json");
    is_str(decide(b), "none", "filter: name any case, value glob");
    header("Accept", "text/html");
    is_str(decide(b), "allow", "filter: every value must match");
    request("GET", 1, "api.github.com", 443, "/search", "");
    header("Authorization", "Bearer x");
    rq.unstripped = 0;
    is_str(decide(b), "none", "filter on a header the caller kept");
    rq.unstripped = 1;
    is_str(decide(b), "allow", "unstripped: the credential is not seen");

    /* websocket */

    request("GET", 1, "gitlab.com", 443, "/", "");
    header("Upgrade", "websocket");
    is_str(decide(b), "websocket", "upgrade without websocket");
    is_str(dd.reason, "upgrade to \"websocket\" refused", "websocket reason");
    request("GET", 1, "api.github.com", 443, "/user", "");
    header("Upgrade", "websocket");
    is_str(decide(b), "none", "upgrade on a websocket route");

    /* the target */

    request("GET", 1, "gitlab.com", 443, "/a/%2e%2e/b", "");
    is_str(decide(b), "bad_request", "dot segment: bad_request");
    is_str(dd.reason, "dot segments in the path are refused, in any "
           "spelling", "dot segment reason");
    request("GET", 1, "gitlab.com", 443, "/a", "x#y");
    is_str(decide(b), "bad_request", "'#' in the query");
    is_str(dd.reason, "a '#' in the request target is refused", "'#' reason");
    request("GET", 1, "gitlab.com", 443, "/%2525252e", "");
    is_str(decide(b), "bad_request", "encoded too often");
    is_str(dd.reason, "the path is percent-encoded more than 3 times over",
           "too often reason");

    /* long agent bytes are cut at the verdict's length */

    {
        static char  m[400];

        memset(m, 'X', sizeof(m) - 1);
        request(m, 1, "gitlab.com", 443, "/", "");
        is_str(decide(b), "method", "a long method");
        is_int(dd.reason_len, BOTTLE_DECIDE_REASON_MAX, "reason cut");
    }
}


static void
test_strips(const bottle_t *b)
{
    const bottle_route_t  *gh, *key, *org;

    gh = bottle_find_route(b, "api.github.com", 14);
    key = bottle_find_route(b, "api.example.com", 15);
    org = bottle_find_route(b, "example.org", 11);

    ok(bottle_decide_strips(gh, "Proxy-Authorization", 19), "gateway header");
    ok(bottle_decide_strips(gh, "X-API-KEY", 9), "credential header");
    ok(!bottle_decide_strips(gh, "Accept", 6), "other header kept");
    ok(bottle_decide_strips(key, "x-api-key", 9), "the injected header");
    ok(!bottle_decide_strips(org, "Authorization", 13), "preserve_auth");
    ok(bottle_decide_strips(org, "proxy-connection", 16),
       "preserve_auth: the gateway's own still go");
    ok(bottle_decide_is_cookie("COOKIE", 6), "cookie");
    ok(bottle_decide_wants_headers(gh) && !bottle_decide_wants_headers(key),
       "routes with header filters");
}


/* explain: its exit status and output */

static char  out_buf[4096];

static int
explain(const bottle_t *b, int argc, ...)
{
    int       i, rc;
    char     *argv[16];
    FILE     *f, *e;
    size_t    n;
    va_list   ap;

    va_start(ap, argc);
    for (i = 0; i < argc; i++) {
        argv[i] = strdup(va_arg(ap, char *));
    }
    va_end(ap);

    f = tmpfile();
    e = tmpfile();
    rc = ctl_explain_bottle(f, e, b, argc, argv);
    rewind(f);
    n = fread(out_buf, 1, sizeof(out_buf) - 1, f);
    out_buf[n] = '\0';
    fclose(f);
    fclose(e);

    for (i = 0; i < argc; i++) {
        free(argv[i]);
    }

    return rc;
}


static void
test_explain(const bottle_t *b)
{
    int          saved, null, rc[3];
    bottlectl_t  ctl;
    char        *argv[] = { "explain", "alice", "GET",
                            "https://API.github.com/user", NULL };
    char        *nobody[] = { "explain", "mallory", "GET",
                              "https://api.github.com/", NULL };

    is_int(explain(b, 2, "GET", "https://api.github.com/admin"), 1,
           "explain: refused is 1");
    ok(strstr(out_buf, "verdict: refused\nrule: allow\nstatus: 403\n"
              "reason: no allow entry matches this path\n"
              "route: api.github.com\n") != NULL,
       "explain: rule, status, reason, route");

    is_int(explain(b, 4, "GET", "https://api.github.com/user", "-H",
                   "Authorization: Bearer agent"), 0,
           "explain: allowed is 0");
    ok(strstr(out_buf, "verdict: allowed\nroute: api.github.com\n"
              "inject: authorization (Bearer, from egress token GH)\n")
       != NULL, "explain: the injected header, never its value");
    ok(strstr(out_buf, "stripped: Authorization\n") != NULL
       && strstr(out_buf, "ghp_") == NULL,
       "explain: the agent's credential stripped");

    is_int(explain(b, 2, "GET", "https://evil.example/"), 1, "no_route");
    ok(strstr(out_buf, "rule: no_route\n") != NULL, "explain: no_route");
    is_int(explain(b, 2, "GET", "http://gitlab.com/"), 1, "plain port");
    ok(strstr(out_buf, "rule: port\nstatus: 403\nreason: port 80 is not "
              "allowed for this host\n") != NULL, "explain: port");
    is_int(explain(b, 2, "GET", "https://gitlab.com:8443/x.git/info/refs"
                   "?service=git-upload-pack"), 1, "git");
    ok(strstr(out_buf, "rule: git\n") != NULL, "explain: git");
    is_int(explain(b, 5, "GET", "https://gitlab.com/", "-HUpgrade: h2c",
                   "-H", "X: y"), 1, "websocket");
    ok(strstr(out_buf, "reason: upgrade to \"h2c\" refused\n") != NULL,
       "explain: websocket, -HName form");
    is_int(explain(b, 2, "GET", "http://a%20b/"), 1,
           "an invalid host");
    ok(strstr(out_buf, "rule: bad_request\n") != NULL, "explain: bad host");
    is_int(explain(b, 2, "GET", "http://0x0a.0.0.1:8080/"), 0,
           "an IPv4 spelling, canonical");
    is_int(explain(b, 2, "GET", "http://gitlab.com:99999/"), 1,
           "a port out of range");
    ok(strstr(out_buf, "reason: invalid port in the target\n") != NULL,
       "explain: invalid port");
    is_int(explain(b, 2, "GET", "https://_egress.local/allowlist"), 0,
           "introspection");
    is_int(explain(b, 2, "GET", "ftp://x/"), 2, "not http(s): usage");
    is_int(explain(b, 3, "GET", "https://gitlab.com/", "-H"), 2,
           "-H without a value: usage");
    is_int(explain(b, 4, "GET", "https://gitlab.com/", "-H", "novalue"), 2,
           "a header without ':': usage");

    /* the command: the bottle by id from what bottlectl fetched */

    {
        static char  path[4096];

        snprintf(path, sizeof(path), "%s/decide.json", data_dir);
        ctl.policy = path;
    }

    /* its output is not TAP: to /dev/null while it runs */

    fflush(stdout);
    saved = dup(1);
    null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    close(null);

    rc[0] = bottlectl_explain(&ctl, 4, argv);
    rc[1] = bottlectl_explain(&ctl, 4, nobody);
    rc[2] = bottlectl_explain(&ctl, 2, argv);

    fflush(stdout);
    dup2(saved, 1);
    close(saved);

    is_int(rc[0], 0, "bottlectl_explain: allowed");
    is_int(rc[1], 2, "no such bottle: 2");
    is_int(rc[2], 2, "too few arguments: 2");
}


int
main(int argc, char **argv)
{
    char              err[1024], path[4096];
    const bottle_t   *b;
    bottle_policy_t  *p;

    if (argc > 1) {
        data_dir = argv[1];
    }

    snprintf(path, sizeof(path), "%s/decide.json", data_dir);

    if (bottle_policy_load(&p, path, err, sizeof(err)) != 0) {
        ok(0, "load %s: %s", path, err);
        return done_testing();
    }

    b = bottle_policy_find_id(p, "alice", 5);
    ok(b != NULL, "fixture loaded");

    test_rules();
    test_host();
    test_decide(b);
    test_strips(b);
    test_explain(b);

    bottle_policy_free(p);

    return done_testing();
}
