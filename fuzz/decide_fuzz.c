/*
 * libFuzzer target for the request-level decisions (bottle_decide.c) on
 * a fixed bottle.  See docs/fuzzing.md.  The input is split on '\n' into
 * method, host, path, query, then header lines "name:value" (an Upgrade
 * among them sets the upgrade).  Beyond "no crash, no sanitizer report"
 * it checks: every decision names a rule the stage may give, a reason
 * never passes BOTTLE_DECIDE_REASON_MAX, a canonical host not ending in
 * '.' is canonical again, and the git scratch is all the decoding writes (exact buffers).
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_decide.h"
#include "fuzz.h"


static const char  policy_json[] =
    "{\"bottles\":[{\"id\":\"f\",\"token\":\"fuzz-token-0123456789\","
    "\"egress_tokens\":{\"K\":\"v\"},\"routes\":["
    "{\"host\":\"a.example\",\"methods\":[\"GET\",\"POST\"],"
    "\"allow\":[{\"path\":\"/x/*\",\"methods\":[\"PUT\"]},"
    "{\"path\":\"/h\",\"headers\":{\"accept\":\"a*b\"}}],"
    "\"auth\":{\"type\":\"bearer\",\"value\":\"secret:K\"}},"
    "{\"host\":\"b.example\",\"git\":{\"fetch\":true},\"websocket\":true,"
    "\"ports\":[80,443,8080]},"
    "{\"host\":\"10.1.2.3\",\"preserve_auth\":true,"
    "\"allow\":[{\"headers\":{\"authorization\":\"*\"}}]}]}]}";


static const bottle_t  *bottle;


static const uint8_t *
next_line(const uint8_t **p, const uint8_t *end, size_t *len)
{
    const uint8_t  *s, *nl;

    s = *p;
    nl = memchr(s, '\n', end - s);
    *len = (nl ? nl : end) - s;
    *p = nl ? nl + 1 : end;

    return s;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                    *host, *again, *path, *query, *method;
    size_t                   n, hl, pl, ql, ml, len, nh;
    const uint8_t           *p, *end, *s, *c;
    unsigned char           *scratch, *target_scratch;
    bottle_request_t         req;
    bottle_decision_t        d;
    bottle_decide_header_t   headers[16];
    static bottle_policy_t  *policy;
    char                     err[256];

    if (policy == NULL) {
        CHECK(bottle_policy_parse(&policy, policy_json, sizeof(policy_json)
                                  - 1, "fuzz", err, sizeof(err)) == 0);
        bottle = bottle_policy_find_id(policy, "f", 1);
        CHECK(bottle != NULL);
    }

    p = data;
    end = data + size;

    s = next_line(&p, end, &ml);
    method = malloc(ml + 1);
    memcpy(method, s, ml);

    s = next_line(&p, end, &hl);
    host = malloc(bottle_decide_host_size(hl));
    again = malloc(bottle_decide_host_size(BOTTLE_DECIDE_HOST_MAX));
    n = bottle_decide_canonical_host(host, (const char *) s, hl, hl & 1);

    if (n) {
        CHECK(n <= BOTTLE_DECIDE_HOST_MAX && host[n] == '\0');
        /* "a.." is "a.", as in the module: one trailing dot goes */
        CHECK(host[n - 1] == '.'
              || (bottle_decide_canonical_host(again, host, n, 0) == n
                  && memcmp(again, host, n) == 0));
    }

    s = next_line(&p, end, &pl);
    path = malloc(pl ? pl : 1);
    memcpy(path, pl ? (const char *) s : "/", pl ? pl : 1);
    pl = pl ? pl : 1;

    s = next_line(&p, end, &ql);
    query = malloc(ql + 1);
    memcpy(query, s, ql);

    memset(&req, 0, sizeof(req));
    req.method = method;
    req.method_len = ml;
    req.host = host;
    req.host_len = n;
    req.port = (unsigned) (size % 3 == 0 ? 80 : size % 3 == 1 ? 443 : 8080);
    req.tunnel = (int) (size & 1);
    req.path = path;
    req.path_len = pl;
    req.query = query;
    req.query_len = ql;
    req.headers = headers;
    req.unstripped = (int) ((size >> 1) & 1);

    for (nh = 0; p < end && nh < 16; nh++) {
        s = next_line(&p, end, &len);
        c = memchr(s, ':', len);
        headers[nh].name = (const char *) s;
        headers[nh].name_len = c ? (size_t) (c - s) : len;
        headers[nh].value = c ? (const char *) c + 1 : "";
        headers[nh].value_len = c ? len - (c - s) - 1 : 0;

        if (headers[nh].name_len == 7
            && memcmp(headers[nh].name, "Upgrade", 7) == 0)
        {
            req.upgrade = headers[nh].value;
            req.upgrade_len = headers[nh].value_len;
        }
    }

    req.nheaders = nh;

    target_scratch = malloc(pl);
    bottle_decide_target(&d, &req, target_scratch);
    CHECK(d.rule == BOTTLE_RULE_NONE || d.rule == BOTTLE_RULE_BAD_REQUEST);
    CHECK(d.reason_len <= BOTTLE_DECIDE_REASON_MAX);

    if (n) {
        bottle_decide_route(&d, bottle, &req);
        CHECK(d.rule == BOTTLE_RULE_NONE || d.rule == BOTTLE_RULE_NO_ROUTE
              || d.rule == BOTTLE_RULE_PORT);
        CHECK((d.route != NULL) == (d.rule != BOTTLE_RULE_NO_ROUTE));

        if (d.route) {
            const bottle_route_t  *route = d.route;

            scratch = malloc(bottle_decide_git_scratch(&req));
            bottle_decide_git(&d, route, &req, scratch);
            CHECK(d.rule == BOTTLE_RULE_NONE || d.rule == BOTTLE_RULE_GIT);
            free(scratch);

            bottle_decide_policy(&d, route, &req);
            CHECK(d.rule == BOTTLE_RULE_NONE || d.rule == BOTTLE_RULE_METHOD
                  || d.rule == BOTTLE_RULE_ALLOW
                  || d.rule == BOTTLE_RULE_WEBSOCKET);
            CHECK(d.reason_len <= BOTTLE_DECIDE_REASON_MAX
                  && d.reason[d.reason_len] == '\0');

            if (d.rule == BOTTLE_RULE_NONE && req.upgrade) {
                CHECK(route->websocket);
            }
        }
    }

    free(target_scratch);
    free(method);
    free(host);
    free(again);
    free(path);
    free(query);

    return 0;
}
