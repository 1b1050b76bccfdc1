/*
 * bottle_policy: a full fixture read back field by field, token and host
 * lookups, one error per class (naming file, bottle and field, never a
 * secret), directory loading and glob matching.
 *
 * Usage: policy_test DATA_DIR (t/unit/data by default)
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "tap.h"
#include "bottle_policy.h"


#define TOKEN    "SECRET-TOKEN-VALUE-123456"
#define EGRESS   "EGRESS-SECRET-VALUE"

/* one bottle around a route list; %s is the routes */
#define ONE_BOTTLE                                                           \
    "{\"id\":\"alice\",\"token\":\"" TOKEN "\","                            \
    "\"egress_tokens\":{\"GH\":\"" EGRESS "\"},\"routes\":[%s]}"


static const char  *data_dir = "t/unit/data";
static char         err[1024];


static const char *
data_path(const char *name)
{
    static char  buf[4096];

    snprintf(buf, sizeof(buf), "%s/%s", data_dir, name);

    return buf;
}


static int
str_is(bottle_str_t s, const char *want)
{
    return s.data != NULL && s.len == strlen(want)
           && strcmp(s.data, want) == 0;
}


static const bottle_route_t *
route(const bottle_t *b, const char *host)
{
    return bottle_find_route(b, host, strlen(host));
}


static const bottle_t *
by_token(const bottle_policy_t *p, const char *token)
{
    return bottle_policy_find_token(p, (const unsigned char *) token,
                                    strlen(token));
}


static int
ip_of(bottle_ip_t *ip, const char *s)
{
    return bottle_ip_parse(ip, s, strlen(s));
}


/* the error text for a policy that must be refused; "" if accepted */
static const char *
error_of(const char *json)
{
    bottle_policy_t  *p;

    err[0] = '\0';

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) == 0)
    {
        bottle_policy_free(p);
        return "";
    }

    return err;
}


static const char *
route_error(const char *routes)
{
    static char  json[4096];

    snprintf(json, sizeof(json), ONE_BOTTLE, routes);

    return error_of(json);
}


static void
test_good_bottle(const bottle_t *a)
{
    bottle_ip_t  ip;

    ok(str_is(a->id, "alice"), "id");
    ok(str_is(a->slug, "alice-dev"), "slug");
    ok(strstr(a->source.data, "good.json") != NULL, "source names the file");
    is_int(a->nsources, 3, "three sources");
    ok(ip_of(&ip, "10.88.3.4") == 0 && bottle_source_allowed(a, &ip),
       "source in 10.88/16 allowed");
    ok(ip_of(&ip, "10.89.0.1") == 0 && !bottle_source_allowed(a, &ip),
       "source outside refused");
    ok(ip_of(&ip, "fd00:88::5") == 0 && bottle_source_allowed(a, &ip),
       "IPv6 source allowed");
    ok(ip_of(&ip, "192.0.2.10") == 0 && bottle_source_allowed(a, &ip),
       "bare address source allowed");
    ok(str_is(a->canary, "CANARY-7f3a9c1e"), "canary");
    is_int(a->negress_tokens, 2, "two egress tokens");
    ok(str_is(a->egress_tokens[0].name, "GITHUB_TOKEN")
       && str_is(a->egress_tokens[0].value,
                 "ghp_exampleexampleexampleexample0000"), "egress token");
    is_int(a->nheld_secrets, 1, "one held secret");
    ok(str_is(a->held_secrets[0].value,
              "-----BEGIN KEY-----\nabc\n-----END KEY-----\n"),
       "held secret keeps its newlines");
    is_int(a->audit_required, 1, "audit.delivery required");
    is_int(a->firehose, BOTTLE_FIREHOSE_METADATA, "firehose metadata");
    is_int(a->nroutes, 7, "seven routes");
}


static void
test_good_github(const bottle_t *a)
{
    const bottle_route_t  *r;

    r = &a->routes[0];
    ok(str_is(r->host, "api.github.com"), "host lowercased, dot removed");
    ok(!r->host_is_ip && !r->internal && !r->passthrough, "plain name route");
    ok(r->nports == 2 && bottle_route_port_ok(r, 8443, 1)
       && bottle_route_port_ok(r, 443, 0) && !bottle_route_port_ok(r, 80, 0),
       "listed ports");
    is_int(r->methods, BOTTLE_M_GET | BOTTLE_M_POST, "methods, any case");
    is_int(r->nallow, 3, "three allow entries");
    ok(str_is(r->allow[0].path, "/repos/example/*")
       && r->allow[0].methods == BOTTLE_M_PATCH, "allow[0]");
    ok(str_is(r->allow[1].path, "/user") && r->allow[1].methods == 0
       && r->allow[1].nheaders == 0, "allow[1] inherits methods");
    ok(str_is(r->allow[2].path, "") && r->allow[2].nheaders == 1
       && str_is(r->allow[2].headers[0].name, "accept")
       && str_is(r->allow[2].headers[0].value, "application/vnd.github*"),
       "allow[2] header filter, name lowercased");
    is_int(r->auth_type, BOTTLE_AUTH_BEARER, "bearer auth");
    ok(str_is(r->auth_header, "authorization")
       && str_is(r->auth_secret, "GITHUB_TOKEN")
       && str_is(r->auth_value, "ghp_exampleexampleexampleexample0000"),
       "auth resolved to the egress token");
    ok(!r->dlp_off && r->dlp_outbound_set && r->dlp_inbound_set
       && r->dlp_outbound == (BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_ENTROPY)
       && r->dlp_inbound == BOTTLE_DLP_NAIVE_INJECTION, "dlp detectors");
    is_int(r->on_match, BOTTLE_ON_MATCH_BLOCK, "on_match block");
    ok(r->git_fetch && r->log_full && r->websocket && !r->preserve_auth,
       "git.fetch, log full, websocket");
}


static void
test_good_routes(const bottle_t *a)
{
    const bottle_route_t  *r;

    r = &a->routes[1];
    ok(r->agent_provider && r->methods == BOTTLE_M_ANY, "provider, any");
    ok(r->auth_type == BOTTLE_AUTH_HEADER && str_is(r->auth_header,
       "x-api-key") && str_is(r->auth_value, "sk-ant-example-0000"),
       "header auth via secret:${NAME}");
    is_int(r->on_match, BOTTLE_ON_MATCH_REDACT, "provider default redact");
    ok(!r->dlp_outbound_set && !r->dlp_inbound_set, "dlp sides default");
    is_int(r->scrub, BOTTLE_HELD_CREDENTIAL, "scrub default: credential");

    r = &a->routes[2];
    ok(r->passthrough && r->nports == 1 && r->ports[0] == 443,
       "passthrough, port 443");
    is_int(r->auth_type, BOTTLE_AUTH_NONE, "no auth");
    ok(r->auth_header.data != NULL && r->auth_value.len == 0,
       "absent strings are empty, not NULL");

    r = &a->routes[3];
    ok(r->internal && r->dlp_off && r->preserve_auth,
       "internal, dlp off, preserve_auth");
    is_int(r->scrub, BOTTLE_HELD_CREDENTIAL, "dlp false keeps the scrub");
    is_int(r->on_match, BOTTLE_ON_MATCH_SUPERVISE, "default supervise");

    r = &a->routes[4];
    ok(str_is(r->host, "127.0.0.1") && r->host_is_ip
       && r->ip.family == AF_INET && r->internal,
       "IP host canonical, implicitly internal");

    r = &a->routes[5];
    ok(str_is(r->host, "2001:db8::1") && r->host_is_ip
       && r->ip.family == AF_INET6, "bracketed IPv6 host canonical");

    r = &a->routes[6];
    ok(r->auth_type == BOTTLE_AUTH_TOKEN && bottle_route_port_ok(r, 443, 1)
       && bottle_route_port_ok(r, 80, 0) && !bottle_route_port_ok(r, 443, 0)
       && !bottle_route_port_ok(r, 80, 1), "default ports 443/80");
}


static void
test_lookups(const bottle_policy_t *p, const bottle_t *a, const bottle_t *b)
{
    ok(by_token(p, "alice-identity-token-0123456789") == a, "token hit");
    ok(by_token(p, "bob-identity-token-0000000000") == b,
       "token_sha256 hit");
    ok(by_token(p, "alice-identity-token-012345678") == NULL, "token miss");
    ok(by_token(p, "") == NULL, "empty token misses");

    ok(route(a, "API.GITHUB.COM") == &a->routes[0], "host case-insensitive");
    ok(route(a, "api.github.com.") == &a->routes[0], "one trailing dot");
    ok(route(a, "api.github.com..") == NULL, "two trailing dots miss");
    ok(route(a, "github.com") == NULL, "parent domain misses");
    ok(route(a, "evil.api.github.com") == NULL, "subdomain misses");
    ok(route(a, "0x7f.1") == &a->routes[4], "0x7f.1 finds 127.0.0.1");
    ok(route(a, "2130706433") == &a->routes[4], "2130706433 finds it");
    ok(route(a, "0177.0.0.1.") == &a->routes[4], "octal, trailing dot");
    ok(route(a, "127.0.0.2") == NULL, "other address misses");
    ok(route(a, "[2001:db8::1]") == &a->routes[5], "bracketed IPv6");
    ok(route(a, "2001:DB8:0:0::0:1") == &a->routes[5], "IPv6 spelling");
    ok(route(a, "1.2.3.4.5") == NULL, "numeric non-address misses");
    ok(bottle_find_route(a, "localhost\0.evil", 15) == NULL,
       "embedded NUL misses");
    ok(bottle_find_route(a, "localhost.evil", 9) == &a->routes[6],
       "length bounds the name");
    ok(route(b, "api.github.com") == NULL, "bottle without routes");
}


static void
test_good(void)
{
    const bottle_t   *a, *b;
    bottle_policy_t  *p;
    bottle_ip_t       ip;

    if (bottle_policy_load(&p, data_path("good.json"), err, sizeof(err))
        != 0)
    {
        ok(0, "good.json loads: %s", err);
        return;
    }

    is_int(bottle_policy_count(p), 2, "two bottles");
    a = bottle_policy_at(p, 0);
    b = bottle_policy_at(p, 1);
    ok(bottle_policy_at(p, 2) == NULL, "at() bounds");

    test_good_bottle(a);
    test_good_github(a);
    test_good_routes(a);
    test_lookups(p, a, b);

    ok(str_is(b->id, "bob") && str_is(b->slug, "bob"), "slug defaults to id");
    ok(b->canary.data != NULL && b->canary.len == 0, "no canary is \"\"");
    ok(b->audit_required == 0 && b->firehose == BOTTLE_FIREHOSE_FULL,
       "best_effort, firehose full");
    ok(ip_of(&ip, "8.8.8.8") == 0 && bottle_source_allowed(b, &ip),
       "no sources: any source");

    bottle_policy_free(p);
}


/* error text contains want and names neither secret */
static void
check_error(const char *got, const char *want, const char *what)
{
    int  pass;

    pass = got[0] != '\0' && strstr(got, want) != NULL
           && strstr(got, TOKEN) == NULL && strstr(got, EGRESS) == NULL;

    ok(pass, "%s", what);
    if (!pass) {
        printf("#   got '%s'\n#   want '%s'\n", got, want);
    }
}


static void
test_bottle_errors(void)
{
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"routes\":[],\"colour\":1}"),
                "policy.json: bottle \"alice\": unknown field \"colour\"",
                "unknown bottle field");
    check_error(error_of("{\"token\":\"" TOKEN "\",\"routes\":[]}"),
                "policy.json: bottle: id: required", "missing id");
    check_error(error_of("{\"bottles\":[{\"id\":\"a\",\"token\":\"" TOKEN
                         "\",\"routes\":[]},{\"id\":7}]}"),
                "policy.json: bottles[1]: id: must be a string",
                "id type, by position");
    check_error(error_of("{\"id\":\"a b\",\"token\":\"" TOKEN "\","
                         "\"routes\":[]}"),
                "id: \"a b\" must be", "bad id characters");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"SECRET-short\","
                         "\"routes\":[]}"),
                "bottle \"alice\": token: must be at least 16 characters",
                "short token");
    ok(strstr(err, "SECRET-short") == NULL, "short token not echoed");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN " x\","
                         "\"routes\":[]}"),
                "token: must be printable ASCII", "token with space");
    check_error(error_of("{\"id\":\"alice\",\"routes\":[]}"),
                "bottle \"alice\": token: required", "missing token");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"token_sha256\":\"00\",\"routes\":[]}"),
                "not both", "token and token_sha256");
    check_error(error_of("{\"id\":\"alice\",\"token_sha256\":\"xyz\","
                         "\"routes\":[]}"),
                "token_sha256: must be 64 hex digits", "bad digest");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"source_ips\":[],\"routes\":[]}"),
                "source_ips: must not be empty", "empty source_ips");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"source_ips\":[\"10.0.0.0/8\",\"10.0.0.1/8\"],"
                         "\"routes\":[]}"),
                "source_ips[1]: \"10.0.0.1/8\" is not an address",
                "host bits in source_ips");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"canary\":\"short\",\"routes\":[]}"),
                "canary: must be at least 8", "short canary");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"egress_tokens\":{\"1BAD\":\"x\"},\"routes\":[]}"),
                "egress_tokens: \"1BAD\" is not a valid name",
                "bad egress token name");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"egress_tokens\":{\"GH\":\"" EGRESS "\\r\\nX: y\"},"
                         "\"routes\":[]}"),
                "egress_tokens.GH: must be a non-empty string without control",
                "CRLF in an egress token, value not echoed");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"audit\":{\"delivery\":\"sometimes\"},"
                         "\"routes\":[]}"),
                "audit.delivery: \"sometimes\" is not one of "
                "\"best_effort\", \"required\"", "bad audit.delivery");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"audit\":{\"firehose\":true},\"routes\":[]}"),
                "audit.firehose: must be a string", "audit.firehose type");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"repos\":[\"h/o/r\",1],\"routes\":[]}"),
                "repos[1]: must be a string", "repos entry type");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\"}"),
                "bottle \"alice\": routes: required", "missing routes");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN "\","
                         "\"routes\":{}}"),
                "routes: must be an array", "routes type");
}


static void
test_host_errors(void)
{
    char  routes[512];

    check_error(route_error("{}"), "bottle \"alice\": routes[0].host: required",
                "missing host");
    check_error(route_error("7"), "routes[0]: must be an object",
                "route type");
    check_error(route_error("{\"host\":\"a.com\",\"hots\":1}"),
                "routes[0]: unknown field \"hots\"", "unknown route field");
    check_error(route_error("{\"host\":\"exa mple.com\"}"),
                "routes[0].host: \"exa mple.com\" is not a valid host name",
                "space in host");
    check_error(route_error("{\"host\":\"-bad.com\"}"),
                "is not a valid host name", "leading hyphen");
    check_error(route_error("{\"host\":\"*.example.com\"}"),
                "is not a valid host name", "wildcard host");

    snprintf(routes, sizeof(routes), "{\"host\":\"%064d.com\"}", 0);
    check_error(route_error(routes), "is not a valid host name",
                "64-character label");

    check_error(route_error("{\"host\":\"1.2.3.4.5\"}"),
                "\"1.2.3.4.5\" looks like an IPv4 address but is not one",
                "numeric host that is not an address");
    check_error(route_error("{\"host\":\"example.0x\"}"),
                "looks like an IPv4 address", "0x last label");
    check_error(route_error("{\"host\":\"fe80::1%eth0\"}"),
                "routes[0].host: \"fe80::1%eth0\" is not an IPv6 address",
                "zone id");
    check_error(route_error("{\"host\":\"[1.2.3.4]\"}"),
                "is not a bracketed IPv6 address", "bracketed IPv4");
    check_error(route_error("{\"host\":\"_Egress.Local.\"}"),
                "is reserved for the gateway", "reserved host");
    check_error(route_error("{\"host\":\"Example.com\"},"
                            "{\"host\":\"example.com.\"}"),
                "routes[1].host: \"example.com\" is already routes[0]",
                "duplicate host");
    check_error(route_error("{\"host\":\"127.0.0.1\"},{\"host\":\"0x7f.1\"}"),
                "routes[1].host: \"127.0.0.1\" is already routes[0]",
                "duplicate IP host in another spelling");
}


static void
test_route_errors(void)
{
    check_error(route_error("{\"host\":\"a.com\",\"port\":0}"),
                "routes[0].port: 0 is not a port", "port 0");
    check_error(route_error("{\"host\":\"a.com\",\"port\":\"443\"}"),
                "routes[0].port: must be an integer", "port type");
    check_error(route_error("{\"host\":\"a.com\",\"ports\":[443,65536]}"),
                "routes[0].ports[1]: 65536 is not a port", "port range");
    check_error(route_error("{\"host\":\"a.com\",\"ports\":[443,443]}"),
                "routes[0].ports[1]: 443 is listed twice", "duplicate port");
    check_error(route_error("{\"host\":\"a.com\",\"port\":1,\"ports\":[2]}"),
                "not both", "port and ports");
    check_error(route_error("{\"host\":\"a.com\",\"passthrough\":true,"
                            "\"auth\":{\"type\":\"bearer\","
                            "\"value\":\"secret:GH\"}}"),
                "routes[0].auth: not allowed with passthrough",
                "passthrough with auth");
    check_error(route_error("{\"host\":\"a.com\",\"passthrough\":true,"
                            "\"methods\":[\"GET\"]}"),
                "routes[0].methods: not allowed with passthrough",
                "passthrough with methods");
    check_error(route_error("{\"host\":\"a.com\",\"passthrough\":1}"),
                "routes[0].passthrough: must be a boolean", "flag type");
    check_error(route_error("{\"host\":\"a.com\",\"methods\":[\"FETCH\"]}"),
                "routes[0].methods[0]: \"FETCH\" is not a known method",
                "unknown method");
    check_error(route_error("{\"host\":\"a.com\",\"methods\":[]}"),
                "routes[0].methods: must not be empty", "empty methods");
    check_error(route_error("{\"host\":\"a.com\",\"methods\":[\"*\",\"GET\"]}"),
                "\"*\" must be the only entry", "star with others");
    check_error(route_error("{\"host\":\"a.com\",\"allow\":[{}]}"),
                "routes[0].allow[0]: needs at least one of", "empty allow");
    check_error(route_error("{\"host\":\"a.com\",\"allow\":"
                            "[{\"path\":\"x\"}]}"),
                "routes[0].allow[0].path: \"x\" must start with", "bad path");
    check_error(route_error("{\"host\":\"a.com\",\"allow\":[{\"path\":\"/\"},"
                            "{\"pathx\":\"/\"}]}"),
                "routes[0].allow[1]: unknown field \"pathx\"",
                "unknown allow field");
    check_error(route_error("{\"host\":\"a.com\",\"allow\":[{\"headers\":"
                            "{\"bad header\":\"x\"}}]}"),
                "allow[0].headers: \"bad header\" is not a valid header name",
                "bad header filter name");
    check_error(route_error("{\"host\":\"a.com\",\"allow\":[{\"methods\":"
                            "[\"BREW\"]}]}"),
                "routes[0].allow[0].methods[0]: \"BREW\"",
                "unknown method in allow");
}


static void
test_auth_errors(void)
{
    check_error(route_error("{\"host\":\"a.com\"},{\"host\":\"b.com\"},"
                            "{\"host\":\"c.com\",\"auth\":{\"type\":\"header\","
                            "\"name\":\"cookie\",\"value\":\"secret:GH\"}}"),
                "policy.json: bottle \"alice\": routes[2].auth.name: "
                "\"cookie\" may not carry credentials", "cookie auth header");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"header\","
                            "\"name\":\"Proxy-Authorization\","
                            "\"value\":\"secret:GH\"}}"),
                "\"Proxy-Authorization\" may not carry credentials",
                "proxy-authorization auth header");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"header\","
                            "\"name\":\"X Key\",\"value\":\"secret:GH\"}}"),
                "\"X Key\" is not a valid header name", "bad auth header");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"header\","
                            "\"value\":\"secret:GH\"}}"),
                "routes[0].auth.name: required", "header auth without name");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"bearer\","
                            "\"name\":\"x-key\",\"value\":\"secret:GH\"}}"),
                "routes[0].auth.name: only allowed with type \"header\"",
                "name with bearer");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"basic\","
                            "\"value\":\"secret:GH\"}}"),
                "routes[0].auth.type: \"basic\" is not one of \"bearer\", "
                "\"token\", \"header\"", "bad auth type");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":"
                            "{\"value\":\"secret:GH\"}}"),
                "routes[0].auth.type: required", "auth without type");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"bearer\","
                            "\"value\":\"" EGRESS "\"}}"),
                "routes[0].auth.value: must be \"secret:NAME\"",
                "raw value in auth, not echoed");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"bearer\","
                            "\"value\":\"secret:${NOPE}\"}}"),
                "routes[0].auth.value: secret \"NOPE\" is not in egress_tokens",
                "unknown secret");
    check_error(route_error("{\"host\":\"a.com\",\"auth\":{\"type\":\"bearer\","
                            "\"value\":\"secret:GH\",\"scheme\":\"x\"}}"),
                "routes[0].auth: unknown field \"scheme\"",
                "unknown auth field");
}


static void
test_dlp_errors(void)
{
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":true}"),
                "routes[0].dlp: true is not allowed", "dlp: true");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":\"on\"}"),
                "routes[0].dlp: must be false or an object", "dlp type");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"outbound\":"
                            "[\"magic\"]}}"),
                "routes[0].dlp.outbound[0]: \"magic\" is not a known detector",
                "unknown detector");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"inbound\":"
                            "[\"token_patterns\"]}}"),
                "dlp.inbound[0]: \"token_patterns\" is an outbound detector",
                "outbound detector inbound");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"outbound\":"
                            "[\"entropy\",\"naive_injection_detection\"]}}"),
                "dlp.outbound[1]: \"naive_injection_detection\" is an "
                "inbound detector", "inbound detector outbound");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"on_match\":"
                            "\"default\"}}"),
                "routes[0].dlp.on_match: \"default\" is not one of",
                "bad on_match");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"scrub\":"
                            "[\"cookies\"]}}"),
                "routes[0].dlp.scrub[0]: \"cookies\" is not a held value kind",
                "unknown scrub kind");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"scrub\":"
                            "[\"canary\",\"canary\"]}}"),
                "routes[0].dlp.scrub[1]: \"canary\" is listed twice",
                "scrub kind twice");
    check_error(route_error("{\"host\":\"a.com\",\"dlp\":{\"scrub\":"
                            "\"all\"}}"),
                "routes[0].dlp.scrub: ", "scrub not an array");
    check_error(route_error("{\"host\":\"a.com\",\"git\":{\"fetch\":\"yes\"}}"),
                "routes[0].git.fetch: must be a boolean", "git.fetch type");
    check_error(route_error("{\"host\":\"a.com\",\"git\":{\"push\":true}}"),
                "routes[0].git: unknown field \"push\"", "git.push");
    check_error(route_error("{\"host\":\"a.com\",\"log\":\"verbose\"}"),
                "routes[0].log: \"verbose\" is not one of \"blocked\", "
                "\"full\"", "bad log");
    check_error(route_error("{\"host\":\"a.com\",\"websocket\":\"yes\"}"),
                "routes[0].websocket: must be a boolean", "websocket type");

    is_str(route_error("{\"host\":\"a.com\",\"dlp\":{\"outbound\":[]},"
                       "\"allow\":[{\"path\":\"*\"}]}"), "",
           "empty detector list accepted");
}


static void
test_document_errors(void)
{
    check_error(error_of("{\"bottles\":[{\"id\":\"alice\",\"token\":\"" TOKEN
                         "\",\"routes\":[]},{\"id\":\"alice\",\"token\":"
                         "\"another-token-0000000\",\"routes\":[]}]}"),
                "policy.json: bottle \"alice\": id: duplicate: also defined "
                "in policy.json", "duplicate id");
    check_error(error_of("{\"bottles\":[{\"id\":\"alice\",\"token\":\"" TOKEN
                         "\",\"routes\":[]},{\"id\":\"bob\",\"token\":\""
                         TOKEN "\",\"routes\":[]}]}"),
                "bottle \"bob\": token: same token as bottle \"alice\"",
                "duplicate token, not echoed");
    check_error(error_of("{\"id\":\"alice\",\"id\":\"bob\",\"token\":\""
                         TOKEN "\",\"routes\":[]}"),
                "policy.json: line 1 column", "duplicate JSON key");
    check_error(error_of("{\"id\":\"alice\",\"token\":\"" TOKEN),
                "policy.json: line 1 column", "truncated JSON, not echoed");
    check_error(error_of("[]"), "policy.json: must be an object",
                "top level array");
    check_error(error_of("{\"bottles\":{}}"),
                "policy.json: bottles: must be an array", "bottles type");
    check_error(error_of("{\"bottles\":[],\"version\":1}"),
                "policy.json: unknown field \"version\" next to \"bottles\"",
                "field next to bottles");
    check_error(error_of("{\"bottles\":[7]}"),
                "policy.json: bottles[0]: must be an object", "bottle type");
    is_str(error_of("{\"bottles\":[]}"), "", "no bottles is a valid policy");
}


static void
test_files(void)
{
    bottle_policy_t  *p;

    if (bottle_policy_load(&p, data_path("dir"), err, sizeof(err)) != 0) {
        ok(0, "directory loads: %s", err);

    } else {
        is_int(bottle_policy_count(p), 3, "three bottles from two files");
        ok(str_is(bottle_policy_at(p, 0)->id, "carol")
           && str_is(bottle_policy_at(p, 2)->id, "erin"), "sorted by file");
        ok(strstr(bottle_policy_at(p, 1)->source.data, "20-more.json")
           != NULL, "source names the file");
        ok(by_token(p, "dave-identity-token-0000000")
           == bottle_policy_at(p, 1), "token lookup across files");
        ok(bottle_policy_find_id(p, "erin", 4) == bottle_policy_at(p, 2),
           "id lookup");
        ok(bottle_policy_find_id(p, "eri", 3) == NULL
           && bottle_policy_find_id(p, "erinx", 5) == NULL,
           "id lookup is exact");
        ok(route(bottle_policy_at(p, 1), "EXAMPLE.org")
           == &bottle_policy_at(p, 1)->routes[0], "route in second file");
        bottle_policy_free(p);
    }

    ok(bottle_policy_load(&p, data_path("dupdir"), err, sizeof(err)) != 0
       && strstr(err, "b.json: bottle \"same\": id: duplicate: also defined")
       && strstr(err, "a.json"), "duplicate id across files");
    ok(bottle_policy_load(&p, data_path("emptydir"), err, sizeof(err)) != 0
       && strstr(err, "no *.json files"), "empty directory refused");
    ok(bottle_policy_load(&p, data_path("missing.json"), err, sizeof(err))
       != 0 && strstr(err, "missing.json: cannot open"), "missing file");
    ok(bottle_policy_load(&p, data_path("broken.json"), err, sizeof(err)) != 0
       && strstr(err, "broken.json: line") && !strstr(err, "frank-secret"),
       "broken JSON names the line, not the token");
    ok(p == NULL, "out is NULL on failure");
}


static void
test_glob(void)
{
    size_t  i;
    char   *s;

    static const struct {
        const char  *pat, *s;
        int          want;
    } cases[] = {
        { "/repos/*", "/repos/a/b", 1 },
        { "/repos/*", "/repo", 0 },
        { "/repos/*", "/repos/", 1 },
        { "*", "", 1 },
        { "", "", 1 },
        { "", "a", 0 },
        { "a*b*c", "aXbYc", 1 },
        { "a*b*c", "aXbY", 0 },
        { "a*b*c", "abcbc", 1 },
        { "/a/*/c", "/a/b/x/c", 1 },
        { "*.json", "x.json", 1 },
        { "*.json", "x.jsonx", 0 },
        { "?", "?", 1 },
        { "?", "a", 0 },
        { "[ab]", "a", 0 },
        { "**", "x", 1 },
        { "/A", "/a", 0 },
        { "/user", "/user", 1 },
        { "/user", "/users", 0 }
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(bottle_glob_match(cases[i].pat, strlen(cases[i].pat),
                                 cases[i].s, strlen(cases[i].s)),
               cases[i].want, "glob \"%s\" vs \"%s\"", cases[i].pat,
               cases[i].s);
    }

    s = malloc(100001);
    if (s != NULL) {
        memset(s, 'a', 100000);
        s[100000] = '\0';
        is_int(bottle_glob_match("*a*a*a*a*a*a*a*b", 16, s, 100000), 0,
               "pathological glob terminates");
        free(s);
    }
}


/* parsed, but refused by the gateway until something acts on them */

static const char *
unsupported_of(const char *fields, const char *routes)
{
    bottle_policy_t  *p;
    static char       json[4096];

    snprintf(json, sizeof(json), "{\"id\":\"alice\",\"token\":\"" TOKEN
             "\",%s\"routes\":[%s]}", fields, routes);
    err[0] = '\0';

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) != 0)
    {
        return "parse failed";
    }

    if (bottle_policy_unsupported(p, err, sizeof(err)) == 0) {
        err[0] = '\0';
    }

    bottle_policy_free(p);

    return err;
}


/* a gateway with its audit journal off */

static const char *
journal_of(const char *fields)
{
    bottle_policy_t  *p;
    static char       json[4096];

    snprintf(json, sizeof(json), "{\"id\":\"alice\",\"token\":\"" TOKEN
             "\",%s\"routes\":[]}", fields);
    err[0] = '\0';

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) != 0)
    {
        return "parse failed";
    }

    if (bottle_policy_needs_journal(p, err, sizeof(err)) == 0) {
        err[0] = '\0';
    }

    bottle_policy_free(p);

    return err;
}


static void
test_unsupported(void)
{
    const char  *route = "{\"host\":\"a.test\"}";

    is_str(unsupported_of("", route), "", "a plain bottle is supported");
    is_str(unsupported_of("\"audit\":{\"delivery\":\"best_effort\","
                          "\"firehose\":\"off\"},\"repos\":[],"
                          "\"held_secrets\":{},", route), "",
           "the defaults and empty lists are supported");
    is_str(unsupported_of("\"audit\":{\"delivery\":\"required\"},", route),
           "", "audit.delivery required is supported");
    is_str(journal_of("\"audit\":{\"delivery\":\"best_effort\"},"), "",
           "best effort needs no journal");
    is_str(journal_of("\"audit\":{\"delivery\":\"required\"},"),
           "policy.json: bottle \"alice\": audit.delivery: \"required\" "
           "needs the audit journal, which is off on this gateway "
           "(bottle_audit)", "required needs the journal");
    is_str(unsupported_of("\"audit\":{\"firehose\":\"metadata\"},", route),
           "", "audit.firehose metadata is supported");
    is_str(unsupported_of("\"audit\":{\"firehose\":\"full\"},", route),
           "", "audit.firehose full is supported");
    is_str(unsupported_of("\"held_secrets\":{\"K\":\"v12345678\"},", route),
           "", "held_secrets served by git-gate");
    is_str(unsupported_of("\"repos\":[\"h/x/y\"],", route), "",
           "repos served by git-gate");
    is_str(unsupported_of("", "{\"host\":\"a.test\",\"log\":\"full\"}"),
           "", "log full is supported");
    is_str(unsupported_of("", "{\"host\":\"a.test\",\"log\":\"blocked\"}"),
           "", "log blocked is supported");
}


static void
test_methods(void)
{
    is_int(bottle_method_bit("GET", 3), BOTTLE_M_GET, "GET");
    is_int(bottle_method_bit("PATCH", 5), BOTTLE_M_PATCH, "PATCH");
    is_int(bottle_method_bit("OPTIONS", 7), BOTTLE_M_OPTIONS, "OPTIONS");
    is_int(bottle_method_bit("get", 3), 0, "methods are case-sensitive");
    is_int(bottle_method_bit("CONNECT", 7), 0, "CONNECT is no route method");
    is_int(bottle_method_bit("GETX", 3), BOTTLE_M_GET, "length bounds");
    is_int(bottle_method_bit("GE", 2), 0, "prefix is not a method");
}


int
main(int argc, char **argv)
{
    if (argc > 1) {
        data_dir = argv[1];
    }

    test_good();
    test_bottle_errors();
    test_host_errors();
    test_route_errors();
    test_auth_errors();
    test_dlp_errors();
    test_document_errors();
    test_files();
    test_glob();
    test_methods();
    test_unsupported();

    return done_testing();
}
