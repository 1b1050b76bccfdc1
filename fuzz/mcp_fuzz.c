/*
 * libFuzzer target for MCP gating's readers (bottle_mcp.h): the JSON-RPC
 * reader of request bodies, the refusal built from what it read, the list
 * filter of responses and the SSE event cutter and filter.  See
 * docs/fuzzing.md.  Beyond "no crash, no sanitizer report" it checks that
 * an event never ends past its input, that a refusal and a filtered
 * message are JSON, and that a filtered list holds nothing the route
 * does not allow (filtering it again changes nothing).
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_mcp.h"
#include "bottle_policy.h"
#include "fuzz.h"


static const char  policy_json[] =
    "{\"bottles\":[{\"id\":\"f\",\"token\":\"fuzz-token-0123456789\","
    "\"routes\":[{\"host\":\"mcp.test\",\"methods\":[\"POST\"],"
    "\"mcp\":{\"tools\":{\"allow\":[\"echo\",\"ad*\"],"
    "\"deny\":[\"admin_*\"]},"
    "\"resources\":{\"allow\":[\"file:///public/*\"]},"
    "\"prompts\":{\"allow\":[\"greet\"]}}}]}]}";

static bottle_policy_t  *policy;
static const bottle_mcp_t  *mcp;


static void
is_json(const char *s, size_t len)
{
    json_t        *v;
    json_error_t   je;

    v = json_loadb(s, len, JSON_DECODE_ANY, &je);
    CHECK(v != NULL);
    json_decref(v);
}


static void
filter(const bottle_mcp_body_t *b, const char *msg, size_t len)
{
    int      rc;
    char    *out, *again;
    size_t   n, n2;

    rc = bottle_mcp_filter(&out, &n, mcp, b, msg, len);
    CHECK(rc >= -1 && rc <= 1);

    if (rc != 1) {
        CHECK(out == NULL);
        return;
    }

    is_json(out, n);

    /* what is left is allowed: a second pass removes nothing */
    CHECK(bottle_mcp_filter(&again, &n2, mcp, b, out, n) == 0);
    free(out);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                 rc;
    char                err[256], *copy, *out, *json;
    size_t              ev, n, len;
    bottle_mcp_body_t   b;

    if (policy == NULL) {
        CHECK(bottle_policy_parse(&policy, policy_json,
                                  sizeof(policy_json) - 1, "fuzz", err,
                                  sizeof(err)) == 0);
        mcp = bottle_policy_at(policy, 0)->routes[0].mcp;
        CHECK(mcp != NULL);
    }

    /* an exact-size copy so ASan sees any read past the end */
    copy = malloc(size ? size : 1);
    CHECK(copy != NULL);
    memcpy(copy, data, size);

    if (bottle_mcp_read(&b, mcp, copy, size, err, sizeof(err)) == 0) {
        CHECK(b.n > 0 && b.n <= BOTTLE_MCP_BATCH_MAX);

        if (b.refused) {
            json = bottle_mcp_refusal(&b, &len);
            CHECK(json != NULL);
            is_json(json, len);
            free(json);
        }

        filter(&b, copy, size);
        bottle_mcp_body_free(&b);

    } else {
        CHECK(strlen(err) > 0);
        json = bottle_mcp_malformed(err, &len);
        CHECK(json != NULL);
        is_json(json, len);
        free(json);
    }

    filter(NULL, copy, size);

    ev = bottle_mcp_sse_event(copy, size);
    CHECK(ev <= size);

    if (ev) {
        rc = bottle_mcp_sse_filter(&out, &n, mcp, NULL, copy, ev);
        CHECK(rc >= 0 && rc <= 2);

        if (rc == 1) {
            CHECK(n > 0 && bottle_mcp_sse_event(out, n) == n);
            free(out);
        }
    }

    free(copy);

    return 0;
}
