/*
 * bottle_mcp: the route field "mcp" parsed and refused, the matcher (exact
 * names, globs, deny wins, kinds left out), the JSON-RPC reader (single,
 * batch, malformed), the refusal's shape, the list filter and the SSE
 * event cutter and filter.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_mcp.h"
#include "bottle_policy.h"


#define BOTTLE_HEAD                                                          \
    "{\"bottles\":[{\"id\":\"alice\",\"token\":\"alice-token-0123456789\"," \
    "\"routes\":[{\"host\":\"mcp.test\",%s}]}]}"

#define MCP_OK                                                               \
    "\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[\"echo\","     \
    "\"ad*\"],\"deny\":[\"admin_*\"]},\"resources\":{\"allow\":"          \
    "[\"file:///public/*\"]}}"


static char  err[1024];


static bottle_policy_t *
parse(const char *route)
{
    char              json[4096];
    bottle_policy_t  *p;

    snprintf(json, sizeof(json), BOTTLE_HEAD, route);
    err[0] = '\0';

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) != 0)
    {
        return NULL;
    }

    return p;
}


static void
refused(const char *route, const char *want, const char *name)
{
    bottle_policy_t  *p;

    p = parse(route);
    ok(p == NULL && strstr(err, want) != NULL, "refused: %s", name);

    if (p) {
        bottle_policy_free(p);

    } else if (strstr(err, want) == NULL) {
        printf("#   got '%s'\n", err);
    }
}


static int
allowed(const bottle_mcp_t *m, int kind, const char *name)
{
    return bottle_mcp_allowed(m, kind, name, strlen(name));
}


int
main(void)
{
    char                *out, *r;
    size_t               n;
    bottle_policy_t     *p;
    bottle_mcp_body_t    b;
    const bottle_mcp_t  *m;

    p = parse(MCP_OK);
    ok(p != NULL, "a route with mcp parses");
    if (p == NULL) {
        printf("#   %s\n", err);
        return done_testing();
    }

    m = bottle_policy_at(p, 0)->routes[0].mcp;
    ok(m != NULL, "the route has its mcp");

    ok(allowed(m, BOTTLE_MCP_TOOL, "echo"), "an exact name");
    ok(allowed(m, BOTTLE_MCP_TOOL, "add"), "a glob");
    ok(!allowed(m, BOTTLE_MCP_TOOL, "admin_reset"), "deny wins");
    ok(!allowed(m, BOTTLE_MCP_TOOL, "echo2"), "exact is exact");
    ok(!allowed(m, BOTTLE_MCP_TOOL, "Echo"), "case-sensitive");
    ok(allowed(m, BOTTLE_MCP_RESOURCE, "file:///public/a/b"),
       "a resource glob spans slashes");
    ok(!allowed(m, BOTTLE_MCP_RESOURCE, "file:///secret/a"),
       "a resource not listed");
    ok(!allowed(m, BOTTLE_MCP_PROMPT, "greet"), "a kind left out: nothing");

    /* refusals at parse */

    refused("\"methods\":[\"POST\"],\"mcp\":{\"tool\":{}}",
            "\"tool\"", "an unknown key");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[\"a\"],"
            "\"only\":[]}}", "only", "an unknown key in a kind");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"deny\":[\"a\"]}}",
            "needs \"allow\"", "a kind without allow");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[]}}",
            "must not be empty", "an empty list");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[1]}}",
            "must be a string", "not a string");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[\"a**\"]}}",
            "\"**\"", "a bad glob");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[\"\"]}}",
            "empty", "an empty name");
    refused("\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":"
            "[\"a\\u0001\"]}}", "control character", "a control character");
    refused("\"mcp\":{\"tools\":{\"allow\":[\"a\"]}}", "must allow POST",
            "no POST (read-only by default)");
    refused("\"methods\":[\"GET\"],\"mcp\":{\"tools\":{\"allow\":[\"a\"]}}",
            "must allow POST", "no POST");
    refused("\"passthrough\":true,\"mcp\":{}", "passthrough",
            "with passthrough");
    refused("\"methods\":[\"POST\"],\"mcp\":[]", "must be an object",
            "not an object");

    /* the reader */

#define READ(s) bottle_mcp_read(&b, m, s, strlen(s), err, sizeof(err))

    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"echo\",\"arguments\":{\"b\":1,\"a\":2}}}")
       == 0 && b.n == 1 && !b.batch && b.refused == 0
       && b.msgs[0].kind == BOTTLE_MCP_TOOL
       && strcmp(b.msgs[0].name, "echo") == 0
       && strcmp(b.msgs[0].id, "1") == 0, "an allowed call");
    /* sha256 of {"a":2,"b":1} */
    is_str(b.msgs[0].digest, "sha256:"
           "d3626ac30a87e6f7a6428233b3c68299976865fa5508e4267c5415c76af7a772"
           + 0, "the digest of the canonical arguments");
    bottle_mcp_body_free(&b);

    ok(READ("[{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\","
            "\"params\":{\"name\":\"rm\"}},{\"jsonrpc\":\"2.0\",\"id\":2,"
            "\"method\":\"tools/list\"},{\"jsonrpc\":\"2.0\","
            "\"method\":\"notifications/initialized\"}]") == 0
       && b.batch && b.n == 3 && b.refused == 1 && !b.msgs[0].allowed
       && b.msgs[1].list == BOTTLE_MCP_TOOL, "a batch with a refused call");

    r = bottle_mcp_refusal(&b, &n);
    ok(r && strstr(r, "[{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":"
                      "{\"code\":-32001,") == r
       && strstr(r, "rule: mcp_tool_denied")
       && strstr(r, "\"id\":2,\"error\":{\"code\":-32600")
       && strstr(r, "mcp_batch_refused")
       && strstr(r, "initialized") == NULL, "the batch's refusal");
    free(r);
    bottle_mcp_body_free(&b);

    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\","
            "\"params\":{\"uri\":\"file:///secret/k\"}}") == 0
       && b.refused == 1, "a resource read refused");
    r = bottle_mcp_refusal(&b, &n);
    ok(r && r[0] == '{' && strstr(r, "mcp_resource_denied"),
       "a single refusal is not a batch");
    free(r);
    bottle_mcp_body_free(&b);

    /* the batch bound, BOTTLE_MCP_BATCH_MAX messages */
    {
        size_t       k, len;
        char        *big;
        const char  *one = "{\"jsonrpc\":\"2.0\",\"id\":1,"
                           "\"method\":\"tools/list\"},";

        len = strlen(one);
        big = malloc((BOTTLE_MCP_BATCH_MAX + 1) * len + 2);

        for (k = 0; big && k <= BOTTLE_MCP_BATCH_MAX; k++) {
            memcpy(big + 1 + k * len, one, len);
        }

        if (big) {
            big[0] = '[';
            big[BOTTLE_MCP_BATCH_MAX * len] = ']';     /* 256 messages */
            ok(bottle_mcp_read(&b, m, big, BOTTLE_MCP_BATCH_MAX * len + 1,
                               err, sizeof(err)) == 0
               && b.n == BOTTLE_MCP_BATCH_MAX, "a batch of 256 is read");
            bottle_mcp_body_free(&b);

            big[BOTTLE_MCP_BATCH_MAX * len] = ',';
            big[(BOTTLE_MCP_BATCH_MAX + 1) * len] = ']';   /* 257 */
            ok(bottle_mcp_read(&b, m, big,
                               (BOTTLE_MCP_BATCH_MAX + 1) * len + 1,
                               err, sizeof(err)) != 0 && strstr(err, "256"),
               "a batch of 257 is refused");
            free(big);
        }
    }

    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,") != 0
       && strstr(err, "not JSON"), "malformed: not JSON");
    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"echo\",\"name\":\"rm\"}}") != 0,
       "malformed: duplicate keys");
    ok(READ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}") != 0,
       "malformed: jsonrpc 1.0");
    ok(READ("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\","
            "\"params\":{\"name\":\"echo\"}}") != 0
       && strstr(err, "must be a request"), "malformed: a call without id");
    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}") != 0,
       "malformed: a real id");
    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":1}}") != 0, "malformed: a name not a string");
    ok(READ("[]") != 0, "malformed: an empty batch");
    ok(READ("[1]") != 0, "malformed: a batch of a number");
    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"echo\",\"arguments\":[1]}}") != 0,
       "malformed: arguments not an object");

    /* the filter */

    ok(READ("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}") == 0,
       "a list request");

#define RES "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":"           \
    "[{\"name\":\"echo\"},{\"name\":\"rm\"},{\"x\":1},{\"name\":\"add\"}]}}"

    ok(bottle_mcp_filter(&out, &n, m, &b, RES, strlen(RES)) == 1
       && strcmp(out, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":"
                 "[{\"name\":\"echo\"},{\"name\":\"add\"}]}}") == 0,
       "tools/list filtered");
    free(out);

#define NONE "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"

    ok(bottle_mcp_filter(&out, &n, m, &b, NONE, strlen(NONE))
       == 0 && out == NULL, "nothing removed: passes as it is");
    ok(bottle_mcp_filter(&out, &n, m, &b, "{\"a\":", 5) == -1,
       "not JSON: -1");
    bottle_mcp_body_free(&b);

    /* SSE */

    ok(bottle_mcp_sse_event("data: x\n", 8) == 0, "an event not ended yet");
    ok(bottle_mcp_sse_event("data: x\r\n\r", 10) == 0,
       "a CR that may be a CRLF");
    ok(bottle_mcp_sse_event("data: x\r\n\r\ndata: y", 18) == 11,
       "an event and the next");
    ok(bottle_mcp_sse_event("data: x\n\ndata: y\n\n", 18) == 9, "LF");

#define EV "id: 7\r\ndata: " RES "\r\n\r\n"

    ok(bottle_mcp_sse_filter(&out, &n, m, NULL, EV, strlen(EV)) == 1
       && strcmp(out, "id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,"
                 "\"result\":{\"tools\":[{\"name\":\"echo\"},"
                 "{\"name\":\"add\"}]}}\n\n") == 0,
       "an event filtered, not tied to a request");
    free(out);

    ok(bottle_mcp_sse_filter(&out, &n, m, NULL,
                             "event: endpoint\ndata: /m?s=1\n\n", 31) == 0,
       "an endpoint event passes");
    ok(bottle_mcp_sse_filter(&out, &n, m, NULL, "data: {x\n\n", 10) == 2,
       "a message that is not JSON: dropped");
    ok(bottle_mcp_sse_filter(&out, &n, m, NULL, ": ping\n\n", 8) == 0,
       "a comment passes");

    bottle_policy_free(p);

    return done_testing();
}
