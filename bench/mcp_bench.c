/*
 * The library part of an MCP route's cost per tools/call (bench/README.md):
 * the JSON-RPC body read, its arguments digested, the call gated, and the
 * JSON response read by the list filter, 200,000 times; process CPU time.
 *
 *   cc -O2 -Ilib -o build/mcp_bench bench/mcp_bench.c build/lib/libbottle.a \
 *       -lcurl -lhiredis -ljansson -lcrypto -lhs -lpcre2-8 -lz -lbrotlidec \
 *       -lbrotlienc -lpthread -lm
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bottle_mcp.h"
#include "bottle_policy.h"
int main(void) {
    const char *pj = "{\"bottles\":[{\"id\":\"b\",\"token\":\"bench-token-0123456789\",\"routes\":[{\"host\":\"m.test\",\"methods\":[\"POST\"],\"mcp\":{\"tools\":{\"allow\":[\"echo\"],\"deny\":[\"admin_*\"]}}}]}]}";
    char err[256], *out; size_t n; bottle_policy_t *p; bottle_mcp_body_t b;
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello \"}}}";
    const char *res = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello \"}]}}";
    if (bottle_policy_parse(&p, pj, strlen(pj), "x", err, sizeof(err))) { puts(err); return 1; }
    const bottle_mcp_t *m = bottle_policy_at(p, 0)->routes[0].mcp;
    int N = 200000; struct timespec a, z;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (int i = 0; i < N; i++) {
        if (bottle_mcp_read(&b, m, call, strlen(call), err, sizeof(err))) return 1;
        if (bottle_mcp_filter(&out, &n, m, &b, res, strlen(res)) != 0) return 1;
        bottle_mcp_body_free(&b);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &z);
    printf("%.2f us per tools/call (read, digest, gate; response read)\n", ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) / N / 1000.0);
    return 0;
}
