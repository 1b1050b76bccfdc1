/*
 * bottle_audit: the event schema (docs/control-plane.md, "Audit events"):
 * one event of each type with its fields in order, absent values as null,
 * agent bytes made printable, long strings cut; the time, id and random
 * correlation ids; the first-contact script's keys.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "bottle_audit.h"
#include "bottle_audit_chain.h"


#define S(s)  { (s), sizeof(s) - 1 }

/* 2026-12-01T13:48:49.123Z */
#define T0    1796132929123LL


static char  got[8192];


static const char *
build(const bottle_audit_event_t *e)
{
    char    *s;
    size_t   len;

    s = bottle_audit_json(e, &len);
    if (s == NULL) {
        return "(null)";
    }

    if (len != strlen(s)) {
        free(s);
        return "(bad length)";
    }

    snprintf(got, sizeof(got), "%s", s);
    free(s);

    return got;
}


static void
common(bottle_audit_event_t *e, bottle_audit_type_e type)
{
    static bottle_audit_str_t  id = S("gw:42-1796132929123-7");
    static bottle_audit_str_t  gw = S("gw:42");
    static bottle_audit_str_t  bottle = S("alice");
    static bottle_audit_str_t  host = S("api.example.com");
    static bottle_audit_str_t  corr = S("0123456789abcdef0123456789abcdef");

    memset(e, 0, sizeof(*e));
    e->type = type;
    e->id = id;
    e->time_ms = T0;
    e->gateway = gw;
    e->bottle = bottle;
    e->host = host;
    e->correlation_id = corr;
}


#define HEAD(type)                                                           \
    "{\"v\":1,\"id\":\"gw:42-1796132929123-7\","                             \
    "\"time\":\"2026-12-01T13:48:49.123Z\",\"producer\":\"egress\","         \
    "\"type\":\"" type "\",\"gateway\":\"gw:42\",\"bottle\":\"alice\","      \
    "\"host\":\"api.example.com\","                                          \
    "\"correlation_id\":\"0123456789abcdef0123456789abcdef\""


/* git.push: the refs array, a withheld ref name, a refusal's rule */

static void
test_git_push(void)
{
    bottle_audit_ref_t    refs[2];
    bottle_audit_event_t  e;

    static const char  head[] =
        "{\"v\":1,\"id\":\"gw:42-1796132929123-7\","
        "\"time\":\"2026-12-01T13:48:49.123Z\",\"producer\":\"git-gate\","
        "\"type\":\"git.push\",\"gateway\":\"gw:42\",\"bottle\":\"alice\","
        "\"host\":\"api.example.com\","
        "\"correlation_id\":\"0123456789abcdef0123456789abcdef\","
        "\"repo\":\"github.com/acme/widgets\",";

    char  want[1024];

    common(&e, BOTTLE_AUDIT_GIT_PUSH);
    e.producer = "git-gate";
    e.repo = (bottle_audit_str_t) S("github.com/acme/widgets");

    memset(refs, 0, sizeof(refs));
    refs[0].name = (bottle_audit_str_t) S("refs/heads/main");
    refs[0].old_id = (bottle_audit_str_t) S("aa");
    refs[0].new_id = (bottle_audit_str_t) S("bb");
    refs[1].old_id = (bottle_audit_str_t) S("00");
    refs[1].new_id = (bottle_audit_str_t) S("cc");
    e.refs = refs;
    e.nrefs = 2;
    e.verdict = (bottle_audit_str_t) S("refused");
    e.rule = (bottle_audit_str_t) S("canary");
    e.reason = (bottle_audit_str_t) S("the push carries a secret");

    snprintf(want, sizeof(want), "%s\"refs\":[{\"ref\":\"refs/heads/main\","
             "\"old\":\"aa\",\"new\":\"bb\"},{\"ref\":null,\"old\":\"00\","
             "\"new\":\"cc\"}],\"verdict\":\"refused\",\"rule\":\"canary\","
             "\"reason\":\"the push carries a secret\"}", head);
    is_str(build(&e), want, "git.push refused, a ref name withheld");

    e.nrefs = 0;
    e.verdict = (bottle_audit_str_t) S("accepted");
    e.rule.data = NULL;
    e.rule.len = 0;
    e.reason.data = NULL;
    e.reason.len = 0;

    snprintf(want, sizeof(want), "%s\"refs\":[],\"verdict\":\"accepted\","
             "\"rule\":null,\"reason\":null}", head);
    is_str(build(&e), want, "git.push accepted");

    is_str(bottle_audit_type_name(BOTTLE_AUDIT_GIT_PUSH), "git.push",
           "git.push type name");
}


/* dlp.reflected: names, kinds, where and encodings; never a value */

static void
test_reflected(void)
{
    bottle_audit_event_t  e;

    static const char *const  held[] = { "credential:API", "canary" };
    static const char *const  kinds[] = { "credential", "canary" };
    static const char *const  where[] = { "header", "body" };
    static const char *const  enc[] = { "plain", "hex" };

    common(&e, BOTTLE_AUDIT_DLP_REFLECTED);
    e.held.items = held;
    e.held.n = 2;
    e.held_kinds.items = kinds;
    e.held_kinds.n = 2;
    e.where.items = where;
    e.where.n = 2;
    e.encodings.items = enc;
    e.encodings.n = 2;

    ok(strstr(build(&e), "\"type\":\"dlp.reflected\",") != NULL
       && strstr(build(&e), "\"held\":[\"credential:API\",\"canary\"],"
                 "\"held_kinds\":[\"credential\",\"canary\"],"
                 "\"where\":[\"header\",\"body\"],"
                 "\"encodings\":[\"plain\",\"hex\"]}") != NULL,
       "dlp.reflected: its lists, in order");
    is_str(bottle_audit_type_name(BOTTLE_AUDIT_DLP_REFLECTED),
           "dlp.reflected", "dlp.reflected type name");
}


/* policy.changed: versions null or not, the lists, agent-safe strings */

static void
test_policy_changed(void)
{
    bottle_audit_event_t  e;

    static const char *const  added[] = { "new.example", "bad\x01host" };
    static const char *const  fields[] = { "audit" };

    static const char  head[] =
        "{\"v\":1,\"id\":\"gw:42-1796132929123-7\","
        "\"time\":\"2026-12-01T13:48:49.123Z\",\"producer\":\"bottlectl\","
        "\"type\":\"policy.changed\",\"gateway\":\"gw:42\","
        "\"bottle\":\"alice\",\"host\":null,"
        "\"correlation_id\":\"0123456789abcdef0123456789abcdef\",";

    char  want[1024];

    common(&e, BOTTLE_AUDIT_POLICY_CHANGED);
    e.producer = "bottlectl";
    e.host.data = NULL;
    e.host.len = 0;
    e.operator_name = (bottle_audit_str_t) S("ops \"ann\"");
    e.operator_action = (bottle_audit_str_t) S("put");
    e.old_version = 7;
    e.new_version = 0;
    e.summary = (bottle_audit_str_t) S("routes added: new.example");
    e.routes_added.items = added;
    e.routes_added.n = 2;
    e.fields_changed.items = fields;
    e.fields_changed.n = 1;

    snprintf(want, sizeof(want), "%s\"operator\":\"ops \\\"ann\\\"\","
             "\"operator_action\":\"put\",\"old_version\":7,"
             "\"new_version\":0,\"summary\":\"routes added: new.example\","
             "\"routes_added\":[\"new.example\",\"bad?host\"],"
             "\"routes_removed\":[],\"routes_changed\":[],"
             "\"fields_changed\":[\"audit\"]}", head);
    is_str(build(&e), want, "policy.changed put: the store's script sets "
           "\"new_version\":0, list items made printable");

    e.operator_action = (bottle_audit_str_t) S("rm");
    e.old_version = -1;
    e.new_version = -1;
    ok(strstr(build(&e), "\"old_version\":null,\"new_version\":null,")
       != NULL, "policy.changed: a version < 0 is null");

    is_str(bottle_audit_type_name(BOTTLE_AUDIT_POLICY_CHANGED),
           "policy.changed", "policy.changed type name");
}


static void
test_types(void)
{
    bottle_audit_event_t  e;

    common(&e, BOTTLE_AUDIT_FIRST_CONTACT);
    e.port = 443;
    e.method = (bottle_audit_str_t) S("GET");
    e.scheme = (bottle_audit_str_t) S("https");

    is_str(build(&e), HEAD("egress.first_contact")
           ",\"port\":443,\"method\":\"GET\",\"scheme\":\"https\"}",
           "first contact");

    common(&e, BOTTLE_AUDIT_REFUSAL);
    e.rule = (bottle_audit_str_t) S("no_route");
    e.status = 403;
    e.reason = (bottle_audit_str_t) S("the host is not on this bottle's "
                                      "allowlist");
    e.method = (bottle_audit_str_t) S("POST");
    e.port = 8443;

    is_str(build(&e), HEAD("egress.refusal")
           ",\"rule\":\"no_route\",\"status\":403,\"reason\":\"the host is "
           "not on this bottle's allowlist\",\"method\":\"POST\","
           "\"port\":8443}", "refusal");

    e.method.data = NULL;
    e.method.len = 0;
    e.port = 0;

    is_str(build(&e), HEAD("egress.refusal")
           ",\"rule\":\"no_route\",\"status\":403,\"reason\":\"the host is "
           "not on this bottle's allowlist\"}",
           "refusal: no method or port when not known");

    common(&e, BOTTLE_AUDIT_DLP_FINDING);
    e.detector = (bottle_audit_str_t) S("vendor");
    e.dlp_rule = (bottle_audit_str_t) S("github-pat");
    e.location = (bottle_audit_str_t) S("header authorization");
    e.digest = (bottle_audit_str_t) S("sha256:0011223344556677");
    e.action = (bottle_audit_str_t) S("redacted");

    is_str(build(&e), HEAD("dlp.finding")
           ",\"detector\":\"vendor\",\"rule\":\"github-pat\","
           "\"location\":\"header authorization\","
           "\"digest\":\"sha256:0011223344556677\","
           "\"action\":\"redacted\"}", "dlp finding");

    common(&e, BOTTLE_AUDIT_TRUNCATION);
    e.bottle.data = NULL;
    e.host.len = 0;
    e.correlation_id.data = NULL;
    e.dropped = 6;
    e.first_dropped_ms = T0 - 2000;
    e.last_dropped_ms = T0 - 5;

    is_str(build(&e),
           "{\"v\":1,\"id\":\"gw:42-1796132929123-7\","
           "\"time\":\"2026-12-01T13:48:49.123Z\",\"producer\":\"egress\","
           "\"type\":\"audit.truncation_detected\",\"gateway\":\"gw:42\","
           "\"bottle\":null,\"host\":null,\"correlation_id\":null,"
           "\"dropped\":6,\"first_dropped\":\"2026-12-01T13:48:47.123Z\","
           "\"last_dropped\":\"2026-12-01T13:48:49.118Z\"}",
           "truncation: absent values are null");

    common(&e, BOTTLE_AUDIT_REFUSAL);
    e.producer = "git-gate";
    e.rule = (bottle_audit_str_t) S("git");
    e.status = 403;
    ok(strstr(build(&e), "\"producer\":\"git-gate\"") != NULL,
       "another producer");

    e.type = BOTTLE_AUDIT_NTYPES;
    ok(bottle_audit_json(&e, NULL) == NULL, "unknown type: NULL");
    ok(bottle_audit_type_name(BOTTLE_AUDIT_NTYPES) == NULL,
       "unknown type: no name");
    is_str(bottle_audit_type_name(BOTTLE_AUDIT_TRUNCATION),
           "audit.truncation_detected", "type name");
}


static void
test_strings(void)
{
    char                  big[3000];
    json_t               *j;
    const char           *s;
    json_error_t          jerr;
    bottle_audit_event_t  e;

    common(&e, BOTTLE_AUDIT_REFUSAL);
    e.host = (bottle_audit_str_t) S("ex\"am\\ple\r\n\xff\x80.com");
    e.rule = (bottle_audit_str_t) S("bad_request");
    e.status = 400;

    s = build(&e);
    j = json_loads(s, 0, &jerr);
    ok(j != NULL, "agent bytes: valid JSON");
    is_str(j ? json_string_value(json_object_get(j, "host")) : "",
           "ex\"am\\ple????.com", "agent bytes: quotes escaped, the rest ?");
    json_decref(j);

    memset(big, 'a', sizeof(big));
    e.reason.data = big;
    e.reason.len = sizeof(big);

    j = json_loads(build(&e), 0, &jerr);
    ok(j && strlen(json_string_value(json_object_get(j, "reason")))
            == BOTTLE_AUDIT_STR_MAX, "a long reason is cut");
    json_decref(j);
}


static void
test_helpers(void)
{
    size_t  n;
    char    buf[64], r1[BOTTLE_AUDIT_RANDOM_LEN], r2[BOTTLE_AUDIT_RANDOM_LEN];

    is_int(bottle_audit_time(buf, sizeof(buf), T0), 0, "time");
    is_str(buf, "2026-12-01T13:48:49.123Z", "time: RFC 3339, UTC, ms");
    is_int(bottle_audit_time(buf, sizeof(buf), 5), 0, "time: epoch");
    is_str(buf, "1970-01-01T00:00:00.005Z", "time: epoch + 5 ms");
    is_int(bottle_audit_time(buf, 10, T0), -1, "time: buffer too small");
    is_int(bottle_audit_time(buf, sizeof(buf), -1), -1, "time: negative");

    n = bottle_audit_id(buf, sizeof(buf), "gw:42xx", 5, T0, 9);
    is_str(buf, "gw:42-1796132929123-9", "id");
    is_int((int) n, (int) strlen(buf), "id: length");
    n = bottle_audit_id(buf, 8, "gw:42", 5, T0, 9);
    is_str(buf, "gw:42-1", "id: cut");
    is_int((int) n, 7, "id: cut length");

    ok(bottle_audit_random_id(r1) == 0 && bottle_audit_random_id(r2) == 0,
       "random ids");
    ok(strlen(r1) == 32 && strspn(r1, "0123456789abcdef") == 32,
       "random id: 32 hex digits");
    ok(strcmp(r1, r2) != 0, "random ids differ");
}


static void
test_script(void)
{
    const char  *s = bottle_audit_contact_script;

    ok(strstr(s, "redis.call('SADD', 'bottle:contacts:' .. ARGV[1], "
                 "ARGV[2]) == 1") != NULL, "script: SADD to the contacts set");
    ok(strstr(s, "local id = bottle_chain_append(ARGV[3], ARGV[4])")
       != NULL && strstr(s, "bottle_chain_append(ARGV[3]")
                  > strstr(s, "'SADD'"),
       "script: the chained append only then, capped");
    ok(strncmp(s, bottle_audit_chain_lua, strlen(bottle_audit_chain_lua))
       == 0, "script: includes the chain's Lua");
    ok(strstr(s, "'XADD'") == strstr(bottle_audit_chain_lua, "'XADD'")
          - bottle_audit_chain_lua + s
       && strstr(strstr(s, "'XADD'") + 1, "'XADD'") == NULL,
       "script: its one XADD is the chain's");
    ok(strstr(s, "redis.call('TIME')") != NULL
       && strstr(s, "> tonumber(ARGV[5]) then\n    return -1") != NULL
       && strstr(s, "return -1") < strstr(s, "'SADD'"),
       "script: past ARGV[5], the deadline, nothing written (-1)");
}


/* the chain's C half; the link's value is the one the Lua computed */
static void
test_chain(void)
{
    char         h[BOTTLE_AUDIT_HEX_LEN], *arg;
    size_t       len;

    static const char  zeros[] =
        "0000000000000000000000000000000000000000000000000000000000000000";

    bottle_audit_sha256_hex(h, "abc", 3);
    ok(strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61"
                 "f20015ad") == 0, "chain: SHA-256 of abc");

    arg = bottle_audit_chain_arg("{\"a\":1}", 7, &len);
    ok(arg && len == 65 + 7 && arg[64] == ':'
       && strcmp(arg + 65, "{\"a\":1}") == 0,
       "chain: the chained argument is <digest>:<json>");

    ok(arg && (arg[64] = '\0', 1)
       && bottle_audit_link(h, zeros, 1, arg) == 0
       && strcmp(h, "d105cd8286ee5762f7295fc32a39cecc36f8b07eecb7b06f0a40fe"
                    "04c09af3ed") == 0,
       "chain: link of seq 1 as the script computed it");

    ok(bottle_audit_link(h, "zz", 1, zeros) == -1, "chain: prev not hex");

    free(arg);
}


int
main(void)
{
    test_types();
    test_git_push();
    test_policy_changed();
    test_reflected();
    test_strings();
    test_helpers();
    test_script();
    test_chain();

    return done_testing();
}
