/*
 * The cost of scrubbing held secrets from responses (lib/bottle_scrub.c,
 * docs/dlp.md "Held secrets in responses"), one thread, no gateway: CPU ms
 * per MiB of response, streamed (16 KiB chunks, and 200-byte SSE-sized
 * chunks) and buffered (one call), against the same bytes copied with
 * scrubbing off; and the database build each scrubbed response pays.
 *
 *     cc -std=c99 -O2 -Ilib -o build/scrub_bench bench/scrub_bench.c \
 *         lib/bottle_scrub.c lib/bottle_scan*.c -lhs -lpcre2-8 -lm
 *     ./build/scrub_bench            # 16 MiB inputs, best of 5
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bottle_scrub.h"


#define INPUT   (16u << 20)
#define PASSES  5


static unsigned char  *out;
static size_t          outlen;


static int
sink(void *arg, const unsigned char *p, size_t len)
{
    (void) arg;

    if (outlen + len > 2 * INPUT) {
        outlen = 0;
    }

    memcpy(out + outlen, p, len);
    outlen += len;

    return 0;
}


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* LLM-API-like JSON text; with every > 0, the held value every that many
 * bytes */
static void
fill(unsigned char *b, size_t n, const char *value, size_t every)
{
    static const char  *words[] = {
        "the", "function", "returns", "\"content\":", "a", "value", "of",
        "model", "{\"role\":", "\"assistant\"},", "\\n", "data:", "token",
        "x", "1234", "stream", "=", "+", "/", "id"
    };
    size_t     i, w, vl;
    unsigned   seed = 12345;

    vl = strlen(value);

    for (i = 0; i < n; ) {
        if (every && i % every < 16 && i + vl < n) {
            memcpy(b + i, value, vl);
            i += vl;
            continue;
        }

        seed = seed * 1103515245 + 12345;
        w = (seed >> 16) % (sizeof(words) / sizeof(words[0]));
        vl = strlen(words[w]);
        if (i + vl + 1 > n) {
            break;
        }
        memcpy(b + i, words[w], vl);
        i += vl;
        b[i++] = (seed >> 8) % 7 ? ' ' : '\n';
        vl = strlen(value);
    }

    for (; i < n; i++) {
        b[i] = ' ';
    }
}


static double
run(const bottle_scrub_db_t *db, const unsigned char *in, size_t chunk)
{
    size_t           i, n;
    double           t, best;
    bottle_scrub_t  *s;
    int              pass;

    best = 1e9;

    for (pass = 0; pass < PASSES; pass++) {
        outlen = 0;
        t = now();

        if (db == NULL) {
            for (i = 0; i < INPUT; i += chunk) {
                n = INPUT - i < chunk ? INPUT - i : chunk;
                sink(NULL, in + i, n);
            }

        } else {
            if (bottle_scrub_create(&s, db, sink, NULL) != 0) {
                fprintf(stderr, "create failed\n");
                exit(1);
            }

            for (i = 0; i < INPUT; i += chunk) {
                n = INPUT - i < chunk ? INPUT - i : chunk;
                if (bottle_scrub_feed(s, in + i, n) != 0) {
                    fprintf(stderr, "feed failed\n");
                    exit(1);
                }
            }

            bottle_scrub_finish(s);
            bottle_scrub_destroy(s);
        }

        t = now() - t;
        best = t < best ? t : best;
    }

    /* ms per MiB */
    return best * 1000.0 / (INPUT >> 20);
}


int
main(void)
{
    char                  err[256];
    double                t, build;
    size_t                k, c;
    unsigned char        *clean, *held;
    bottle_scrub_db_t    *db;
    bottle_scrub_value_t  v[3];
    static const size_t   chunks[] = { 200, 16384, INPUT };
    static const char    *cname[] = { "streamed, 200 B chunks",
                                      "streamed, 16 KiB chunks",
                                      "buffered, one call" };

    v[0].name = "credential:API";
    v[0].kind = "credential";
    v[0].value = (const unsigned char *) "sk-proj-4f9Qz81LmX0aTe7wBvR2";
    v[0].len = strlen((const char *) v[0].value);
    v[1].name = "egress_token:GH";
    v[1].kind = "egress_token";
    v[1].value = (const unsigned char *) "ghp_Xk29aLq0Zm3Nd8Rt5Vb7Wc1Yp4Ue6Go2";
    v[1].len = strlen((const char *) v[1].value);
    v[2].name = "canary";
    v[2].kind = "canary";
    v[2].value = (const unsigned char *) "CANARY-7f3a9c2e5b1d4086";
    v[2].len = strlen((const char *) v[2].value);

    clean = malloc(INPUT);
    held = malloc(INPUT);
    out = malloc(2 * INPUT + 65536);
    if (clean == NULL || held == NULL || out == NULL) {
        return 1;
    }

    fill(clean, INPUT, "", 0);
    fill(held, INPUT, (const char *) v[0].value, 4096);

    build = 1e9;
    for (k = 0; k < 20; k++) {
        t = now();
        if (bottle_scrub_db_create(&db, v, 3, err, sizeof(err)) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        t = now() - t;
        build = t < build ? t : build;
        bottle_scrub_db_free(db);
    }

    if (bottle_scrub_db_create(&db, v, 3, err, sizeof(err)) != 0) {
        return 1;
    }

    printf("database of 3 held values (%zu-byte window): built in %.3f ms "
           "(a worker builds it once per set of values)\n\n", bottle_scrub_window(db),
           build * 1000.0);

    printf("| input, 16 MiB | chunks | scrubbing off (copy), ms/MiB | "
           "scrubbing on, ms/MiB | cost of scrubbing, ms/MiB |\n");
    printf("|---|---|---:|---:|---:|\n");

    for (k = 0; k < 2; k++) {
        for (c = 0; c < 3; c++) {
            double off, on;

            off = run(NULL, k ? held : clean, chunks[c]);
            on = run(db, k ? held : clean, chunks[c]);

            printf("| %s | %s | %.3f | %.3f | %.3f |\n",
                   k ? "text, the credential every 4 KiB" : "text, no held value",
                   cname[c], off, on, on - off);
        }
    }

    bottle_scrub_db_free(db);

    return 0;
}
