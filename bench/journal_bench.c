/*
 * Journal events per second, one writer as a gateway worker writes them
 * (64 commands pipelined, NGX_BOTTLE_AUDIT_INFLIGHT), against one Redis:
 * the hash chain's append (EVAL of bottle_audit_append_script with a
 * chained argument, the SHA-256 of the event computed here) against the
 * plain XADD it replaced, in the same run, alternating rounds.  An
 * egress.refusal event of the usual size.
 *
 *   journal_bench UNIX-SOCKET [EVENTS] [ROUNDS]
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bottle_audit_chain.h"


#define INFLIGHT  64


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* n events written, INFLIGHT in flight; events per second */

static double
run(redisContext *c, int chained, const char *json, size_t len, long n)
{
    long          sent, done;
    char         *arg;
    size_t        alen, argvlen[8];
    double        t0;
    void         *reply;
    const char   *argv[8];

    t0 = now();
    sent = 0;
    done = 0;

    while (done < n) {
        while (sent < n && sent - done < INFLIGHT) {
            if (chained) {
                /* as the gateway: the event's digest per event */
                arg = bottle_audit_chain_arg(json, len, &alen);
                argv[0] = "EVAL";
                argv[1] = bottle_audit_append_script;
                argv[2] = "0";
                argv[3] = "1000000";
                argv[4] = arg;
                argvlen[0] = 4;
                argvlen[1] = strlen(bottle_audit_append_script);
                argvlen[2] = 1;
                argvlen[3] = 7;
                argvlen[4] = alen;
                redisAppendCommandArgv(c, 5, argv, argvlen);
                free(arg);

            } else {
                argv[0] = "XADD";
                argv[1] = "bottle:audit";
                argv[2] = "MAXLEN";
                argv[3] = "~";
                argv[4] = "1000000";
                argv[5] = "*";
                argv[6] = "event";
                argv[7] = json;
                argvlen[0] = 4;
                argvlen[1] = 12;
                argvlen[2] = 6;
                argvlen[3] = 1;
                argvlen[4] = 7;
                argvlen[5] = 1;
                argvlen[6] = 5;
                argvlen[7] = len;
                redisAppendCommandArgv(c, 8, argv, argvlen);
            }

            sent++;
        }

        if (redisGetReply(c, &reply) != REDIS_OK) {
            fprintf(stderr, "journal_bench: %s\n", c->errstr);
            exit(1);
        }

        if (((redisReply *) reply)->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "journal_bench: %s\n", ((redisReply *) reply)->str);
            exit(1);
        }

        freeReplyObject(reply);
        done++;
    }

    return n / (now() - t0);
}


int
main(int argc, char **argv)
{
    int            i, rounds;
    long           n;
    double         plain, chain, best_plain, best_chain;
    redisReply    *r;
    redisContext  *c;

    static const char  json[] =
        "{\"v\":1,\"id\":\"gw1:4242-1796133400469-18\",\"time\":"
        "\"2026-12-01T13:56:40.469Z\",\"producer\":\"egress\",\"type\":"
        "\"egress.refusal\",\"gateway\":\"gw1:4242\",\"bottle\":\"bob\","
        "\"host\":\"pastebin.com\",\"correlation_id\":"
        "\"c6903a096b211125c84c49d9a791fa52\",\"rule\":\"no_route\","
        "\"status\":403,\"reason\":\"the host is not on this bottle's "
        "allowlist\",\"method\":\"GET\",\"port\":443}";

    if (argc < 2) {
        fprintf(stderr, "usage: journal_bench UNIX-SOCKET [EVENTS] "
                "[ROUNDS]\n");
        return 2;
    }

    n = argc > 2 ? atol(argv[2]) : 100000;
    rounds = argc > 3 ? atoi(argv[3]) : 3;

    c = redisConnectUnix(argv[1]);
    if (c == NULL || c->err) {
        fprintf(stderr, "journal_bench: cannot connect to %s\n", argv[1]);
        return 1;
    }

    best_plain = 0;
    best_chain = 0;

    printf("| round | plain XADD, events/s | chained append, events/s | "
           "chained / plain |\n|---|---:|---:|---:|\n");

    for (i = 1; i <= rounds; i++) {
        r = redisCommand(c, "DEL bottle:audit bottle:audit:chain");
        freeReplyObject(r);
        plain = run(c, 0, json, strlen(json), n);

        r = redisCommand(c, "DEL bottle:audit bottle:audit:chain");
        freeReplyObject(r);
        chain = run(c, 1, json, strlen(json), n);

        printf("| %d | %.0f | %.0f | %.2f |\n", i, plain, chain,
               chain / plain);

        best_plain = plain > best_plain ? plain : best_plain;
        best_chain = chain > best_chain ? chain : best_chain;
    }

    printf("| best | %.0f | %.0f | %.2f |\n", best_plain, best_chain,
           best_chain / best_plain);

    redisFree(c);

    return 0;
}
