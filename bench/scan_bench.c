/*
 * Throughput of the streaming secret scanner (lib/bottle_scan*.c) on
 * one core, next to a naive baseline measured in the same run: one PCRE2
 * (JIT) pass per vendor pattern and per known secret.  Prints a markdown
 * table; bench/README.md says how to build and read it, docs/dlp.md has
 * the figures.
 *
 *   scan_bench [seconds per cell, default 0.5] [rows, e.g. 0,1,3]
 *   scan_bench --fixed [seconds per cell]   (per-scan cost by body size)
 *   scan_bench --dump 0|1|2|3 > input    (the realistic inputs)
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bottle_scan_int.h"


#define MiB        (1024 * 1024)
#define CHUNK      (16 * 1024)
#define HOSTILE    (256 * 1024)

#define DEFAULT    (BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_KNOWN_SECRETS)


static double  budget = 0.5;
static unsigned long  rng = 42;


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static unsigned
rnd(unsigned n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned) ((rng >> 33) % n);
}


/* corpora */

static const char  *code_lines[] = {
    "import os, sys, json\\n",
    "def handler(event, context):\\n",
    "    body = json.loads(event[\\\"body\\\"])\\n",
    "    for item in body.get(\\\"items\\\", []):\\n",
    "        if item[\\\"id\\\"] == \\\"0f8fad5b-d9cb-469f-a165-70867728950e\\\":\\n",
    "            return {\\\"statusCode\\\": 404, \\\"sha\\\": \\\"9fceb02d0ae598e95dc970b74767f19372d61af8\\\"}\\n",
    "    // const url = `https://api.example.com/v1/users/${id}?page=${p}`;\\n",
    "    x = [a for a in range(100) if a % 7 == 3]  # caf\\u00e9 \\u003cb\\u003e\\n",
    "\\tfmt.Printf(\\\"%d items in %s\\\\n\\\", len(xs), time.Since(start))\\n",
    "Let me explain what this function does and why the test fails. ",
    "The error is raised because the key is missing from the mapping. ",
};

static const char  b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";


/* an LLM-API request: messages of code and prose, a base64 image */
static size_t
make_json(char *b, size_t cap, int slashes)
{
    size_t  o, i, k;

    o = (size_t) snprintf(b, cap, "{\"model\":\"claude-sonnet-4\","
                          "\"max_tokens\":4096,\"messages\":[");

    while (o + 70000 < cap) {
        o += (size_t) snprintf(b + o, cap - o, "{\"role\":\"%s\",\"content\":"
                               "[{\"type\":\"text\",\"text\":\"",
                               rnd(2) ? "user" : "assistant");
        for (k = 0; k < 40 + rnd(80); k++) {
            o += (size_t) snprintf(b + o, cap - o, "%s",
                code_lines[rnd(sizeof(code_lines) / sizeof(code_lines[0]))]);
        }
        if (slashes) {
            o += (size_t) snprintf(b + o, cap - o,
                                   "see https:\\/\\/example.com\\/docs\\/a");
        }
        o += (size_t) snprintf(b + o, cap - o, "\"}");
        if (rnd(4) == 0) {
            o += (size_t) snprintf(b + o, cap - o, ",{\"type\":\"image\","
                "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
                "\"data\":\"iVBORw0KGgo");
            for (i = 0, k = 4000 + rnd(20000); i < k; i++) {
                b[o++] = b64[rnd(64)];
            }
            o += (size_t) snprintf(b + o, cap - o, "\"}}");
        }
        o += (size_t) snprintf(b + o, cap - o, "]},");
    }

    o--;
    o += (size_t) snprintf(b + o, cap - o, "]}");
    return o;
}


static size_t
make_b64(char *b, size_t cap)
{
    size_t  i;

    for (i = 0; i < cap; i++) {
        b[i] = (i % 77 == 76) ? '\n' : b64[rnd(64)];
    }
    return cap;
}


/* a form body: percent-encoded text */
static size_t
make_form(char *b, size_t cap)
{
    size_t  o;

    for (o = 0; o + 64 < cap; ) {
        o += (size_t) snprintf(b + o, cap - o,
                               "&field%u=some%%20text%%2C%%20more%%3A%%2F%u",
                               rnd(100), rnd(100000));
    }
    return o;
}


static size_t
make_repeat(char *b, size_t len, const char *unit)
{
    size_t  i, n;

    n = strlen(unit);
    for (i = 0; i < len; i++) {
        b[i] = unit[i % n];
    }
    return len;
}


/* English-like words, "token" every 6th: LLM prompts talk of tokens */

static size_t
make_prose(char *b, size_t len)
{
    size_t       i, n, w;
    static const char  *words[] = {
        "the", "model", "returns", "a", "summary", "token", "of", "each",
        "file", "when", "budget", "token", "stream", "is", "long", "and",
        "window", "token",
    };

    for (i = 0, n = 0; i < len; n++) {
        w = strlen(words[n % 18]);
        if (i + w + 1 > len) {
            break;
        }
        memcpy(b + i, words[n % 18], w);
        b[i + w] = ' ';
        i += w + 1;
    }
    return i;
}


static size_t
make_jwt_chain(char *b, size_t len)
{
    size_t  j;

    for (j = 0; j + 27 <= len; j += 27) {
        memcpy(b + j, "eyJ", 3);
        memset(b + j + 3, 'a' + (int) (j % 26), 23);
        b[j + 26] = '.';
    }
    return j;
}


/* secrets */

static void
make_secrets(bottle_secret_t *t, size_t n, char names[][16],
    char values[][48])
{
    size_t  i, k;

    for (i = 0; i < n; i++) {
        snprintf(names[i], 16, "TOKEN_%zu", i);
        for (k = 0; k < 40; k++) {
            values[i][k] = b64[rnd(62)];
        }
        values[i][40] = '\0';
        t[i].name.data = names[i];
        t[i].name.len = strlen(names[i]);
        t[i].value.data = values[i];
        t[i].value.len = 40;
    }
}


/* measurement */

/*
 * MB/s of the fastest of the passes made in the time budget: the machine
 * may be shared, and the fastest pass is the one that had a core to
 * itself.  The mean is in *mean.
 */
static double
run_scan(bottle_scan_secrets_t *sec, unsigned detectors, const char *b,
    size_t len, size_t *nm)
{
    size_t          o, k, iters, n;
    double          t0, t1, start, best;
    bottle_scan_t  *s;

    iters = 0;
    n = 0;
    best = 1e9;
    start = now();

    do {
        t0 = now();
        bottle_scan_acquire(&s, sec, detectors);
        bottle_scan_begin(s, 0);
        for (o = 0; o < len; o += k) {
            k = len - o < CHUNK ? len - o : CHUNK;
            bottle_scan_feed(s, b + o, k);
        }
        bottle_scan_end(s);
        bottle_scan_matches(s, &n);
        bottle_scan_release(s);
        t1 = now();
        best = t1 - t0 < best ? t1 - t0 : best;
        iters++;
    } while (t1 - start < budget || iters < 3);

    *nm = n;
    return (double) len / best / 1e6;
}


typedef struct {
    pcre2_code  **re;
    size_t        n;
} naive_t;


static void
naive_init(naive_t *nv, const bottle_secret_t *t, size_t nt)
{
    int                        ec;
    char                       pat[2048];
    size_t                     i, k;
    PCRE2_SIZE                 eo;
    const bottle_scan_rule_t  *r;

    nv->re = calloc(bottle_scan_nrules + nt, sizeof(pcre2_code *));
    nv->n = 0;

    for (i = 0; i < bottle_scan_nrules; i++) {
        r = &bottle_scan_rules[i];
        if (r->detector != BOTTLE_DETECT_TOKEN_PATTERNS) {
            continue;
        }
        /* the rule as one forward regex, boundaries as lookarounds */
        snprintf(pat, sizeof(pat), "%s(?<![%s])%s(%s)(?![%s])",
                 r->ctx ? r->ctx : "", r->cs, r->extra ? r->extra : "",
                 r->token, r->cs);
        nv->re[nv->n] = pcre2_compile((PCRE2_SPTR) pat, PCRE2_ZERO_TERMINATED,
                                      0, &ec, &eo, NULL);
        pcre2_jit_compile(nv->re[nv->n++], PCRE2_JIT_COMPLETE);
    }

    for (i = 0; i < nt; i++) {
        k = (size_t) snprintf(pat, sizeof(pat), "\\Q%s\\E", t[i].value.data);
        nv->re[nv->n] = pcre2_compile((PCRE2_SPTR) pat, k, PCRE2_CASELESS,
                                      &ec, &eo, NULL);
        pcre2_jit_compile(nv->re[nv->n++], PCRE2_JIT_COMPLETE);
    }
}


/* every pattern over the whole body, every match; fastest pass as above */
static double
run_naive(naive_t *nv, const char *b, size_t len, int *limited)
{
    int                rc;
    size_t             i, iters;
    double             t0, t1, start, best;
    PCRE2_SIZE         off, *ov;
    pcre2_match_data  *md;

    md = pcre2_match_data_create(4, NULL);
    iters = 0;
    *limited = 0;
    best = 1e9;
    start = now();

    do {
        t0 = now();
        for (i = 0; i < nv->n; i++) {
            off = 0;
            while (off < len) {
                rc = pcre2_match(nv->re[i], (PCRE2_SPTR) b, len, off, 0, md,
                                 NULL);
                if (rc < 0) {
                    *limited |= rc != PCRE2_ERROR_NOMATCH;
                    break;
                }
                ov = pcre2_get_ovector_pointer(md);
                off = ov[1] > off ? ov[1] : off + 1;
            }
        }
        t1 = now();
        best = t1 - t0 < best ? t1 - t0 : best;
        iters++;
    } while (t1 - start < budget || iters < 3);

    pcre2_match_data_free(md);
    return (double) len / best / 1e6;
}


/* "0,1,3" holds row i */
static int
row_listed(const char *rows, size_t i)
{
    char  *e;

    while (*rows) {
        if (strtoul(rows, &e, 10) == i && e != rows) {
            return 1;
        }
        rows = *e ? e + 1 : e;
    }
    return 0;
}


/*
 * The cost of one whole request scan (acquire, fields, end, matches,
 * release) by body size, with the default detectors and 5 secrets: the
 * fixed cost shows in the small bodies.  Microseconds per scan, the
 * fastest batch of the time budget.
 */
static double
run_request(bottle_scan_secrets_t *sec, const char *b, size_t len,
    int headers)
{
    int             h;
    size_t          o, k, iters, batch, j;
    double          t0, t1, start, best;
    bottle_scan_t  *s;

    static const char  *hv[] = {
        "api.anthropic.com", "/v1/messages", "beta=true",
        "application/json", "2023-06-01", "claude-cli/1.0.0 (external, cli)",
        "gzip, deflate, br", "keep-alive", "*/*",
        "prompt-caching-2024-07-31", "sk-ant-bottle-placeholder",
    };

    batch = len > 65536 ? 4 : 256;
    iters = 0;
    best = 1e9;
    start = now();

    do {
        t0 = now();
        for (j = 0; j < batch; j++) {
            bottle_scan_acquire(&s, sec, DEFAULT);
            for (h = 0; headers && h < (int) (sizeof(hv) / sizeof(hv[0]));
                 h++)
            {
                bottle_scan_field(s, h + 1, hv[h], strlen(hv[h]));
            }
            bottle_scan_begin(s, 0);
            for (o = 0; o < len; o += k) {
                k = len - o < CHUNK ? len - o : CHUNK;
                bottle_scan_feed(s, b + o, k);
            }
            bottle_scan_end(s);
            bottle_scan_matches(s, &k);
            bottle_scan_release(s);
        }
        t1 = now();
        best = (t1 - t0) / batch < best ? (t1 - t0) / batch : best;
        iters++;
    } while (t1 - start < budget || iters < 3);

    return best * 1e6;
}


static int
fixed_costs(bottle_scan_secrets_t *five, char *buf)
{
    size_t  i, len;
    double  us;

    static const size_t  sizes[] = { 0, 1024, 16384, 262144, MiB };

    len = make_json(buf, MiB, 0);

    printf("| body (LLM-API JSON) | us per scan, body only | MB/s | "
           "us per scan, host + path + query + 8 headers + body |\n");
    printf("|---|---:|---:|---:|\n");

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        us = run_request(five, buf, sizes[i] < len ? sizes[i] : len, 0);
        printf("| %zu bytes | %.2f | %.0f |", sizes[i], us,
               sizes[i] ? (double) sizes[i] / us : 0.0);
        us = run_request(five, buf, sizes[i] < len ? sizes[i] : len, 1);
        printf(" %.2f |\n", us);
        fflush(stdout);
    }

    printf("\n5 secrets, default detectors, body fed in %zu-byte chunks, "
           "fastest batch of %.1f s per cell.\n", (size_t) CHUNK, budget);
    return 0;
}


int
main(int argc, char **argv)
{
    char                   *buf, err[256], names[20][16], values[20][48];
    size_t                  i, len, nm;
    double                  t0;
    int                     limited, fixed, file;
    FILE                   *f;
    const char             *rows;
    double                  full, mbs, base;
    bottle_secret_t         toks[20];
    bottle_scan_db_t       *db;
    bottle_scan_secrets_t  *none, *five, *twenty;
    naive_t                 nv;

    static const struct {
        const char  *name;
        int          kind;
        const char  *unit;
    } in[] = {
        { "1 MiB LLM-API JSON", 0, NULL },
        { "1 MiB JSON, escaped slashes (JSON view on)", 1, NULL },
        { "1 MiB base64, 76-column lines", 2, NULL },
        { "1 MiB form body, %-encoded (% views on)", 3, NULL },
        { "256 KiB `-eyJ` repeated", 4, "-eyJ" },
        { "256 KiB `AKIA` repeated", 4, "AKIA" },
        { "256 KiB `%25` repeated", 4, "%25" },
        { "256 KiB `\\u0067` repeated", 4, "\\u0067" },
        { "256 KiB `ghp_` repeated", 4, "ghp_" },
        { "256 KiB `aws ` + 40 chars repeated", 4,
          "aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY " },
        { "256 KiB JWT chain (every dot ends a JWT)", 5, NULL },
        { "256 KiB `s.` repeated", 4, "s." },
        { "256 KiB prose with `token` every 6th word", 6, NULL },
        /* issue 12: the paths its classes added */
        { "256 KiB `\\\\u0067` repeated (JSON escaped twice)", 4,
          "\\\\u0067" },
        { "256 KiB `\\` repeated (one run of backslashes)", 4, "\\" },
        { "256 KiB `&#103;` repeated", 4, "&#103;" },
        { "256 KiB `&#x` repeated", 4, "&#x" },
        { "256 KiB `-----BEGIN PRIVATE KEY-----\\nM` repeated", 4,
          "-----BEGIN PRIVATE KEY-----\\nM" },
        { "256 KiB `ghp_` + 36 `x` repeated (placeholders)", 4,
          "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx " },
    };

    if (argc > 2 && strcmp(argv[1], "--dump") == 0) {
        /* the realistic inputs, for a profiler: --dump 0..3 */
        buf = malloc(MiB + 4096);
        switch (atoi(argv[2])) {
        case 0: len = make_json(buf, MiB, 0); break;
        case 1: len = make_json(buf, MiB, 1); break;
        case 2: len = make_b64(buf, MiB); break;
        default: len = make_form(buf, MiB); break;
        }
        fwrite(buf, 1, len, stdout);
        free(buf);
        return 0;
    }

    file = 0;
    len = 0;

    if (argc > 2 && strcmp(argv[1], "--file") == 0) {
        /* one row: a body of one's own, e.g. the gateway bench's */
        f = fopen(argv[2], "rb");
        if (f == NULL) {
            perror(argv[2]);
            return 1;
        }
        buf = malloc(MiB + 4096);
        len = fread(buf, 1, MiB, f);
        fclose(f);
        argv += 2;
        argc -= 2;
        file = 1;

    } else {
        buf = malloc(MiB + 4096);
    }

    fixed = argc > 1 && strcmp(argv[1], "--fixed") == 0;
    if (fixed) {
        argv++;
        argc--;
    }
    if (argc > 1) {
        budget = atof(argv[1]);
    }
    rows = argc > 2 ? argv[2] : NULL;

    t0 = now();
    if (bottle_scan_db_create(&db, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("vendor database compiled in %.0f ms\n", (now() - t0) * 1e3);

    make_secrets(toks, 20, names, values);
    if (bottle_scan_secrets_create(&none, db, NULL, NULL, 0, err, sizeof(err))
        || bottle_scan_secrets_create(&five, db, NULL, toks, 5, err,
                                      sizeof(err))
        || bottle_scan_secrets_create(&twenty, db, NULL, toks, 20, err,
                                      sizeof(err)))
    {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    naive_init(&nv, toks, 5);

    t0 = now();
    bottle_scan_secrets_free(twenty);
    bottle_scan_secrets_create(&twenty, db, NULL, toks, 20, err, sizeof(err));
    printf("20-secret bottle database compiled in %.1f ms\n\n",
           (now() - t0) * 1e3);

    if (fixed) {
        return fixed_costs(five, buf);
    }

    printf("| input | vendor, raw only | vendor, views | 5 secrets, "
           "default | 20 secrets, raw only | 20 secrets, default | naive "
           "PCRE2, 5 secrets | default / naive |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");

    for (i = 0; i < (file ? 1 : sizeof(in) / sizeof(in[0])); i++) {
        if (!file && rows && !row_listed(rows, i)) {
            continue;
        }
        switch (file ? -1 : in[i].kind) {
        case -1: break;
        case 0: len = make_json(buf, MiB, 0); break;
        case 1: len = make_json(buf, MiB, 1); break;
        case 2: len = make_b64(buf, MiB); break;
        case 3: len = make_form(buf, MiB); break;
        case 4: len = make_repeat(buf, HOSTILE, in[i].unit); break;
        case 6: len = make_prose(buf, HOSTILE); break;
        default: len = make_jwt_chain(buf, HOSTILE); break;
        }

        printf("| %s |", file ? "the file" : in[i].name);
        mbs = run_scan(none, BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_SCAN_RAW_ONLY,
                       buf, len, &nm);
        printf(" %.0f |", mbs);
        mbs = run_scan(none, BOTTLE_DLP_TOKEN_PATTERNS, buf, len, &nm);
        printf(" %.0f |", mbs);
        full = run_scan(five, DEFAULT, buf, len, &nm);
        printf(" %.0f |", full);
        mbs = run_scan(twenty, DEFAULT | BOTTLE_SCAN_RAW_ONLY, buf, len, &nm);
        printf(" %.0f |", mbs);
        mbs = run_scan(twenty, DEFAULT, buf, len, &nm);
        printf(" %.0f |", mbs);
        base = run_naive(&nv, buf, len, &limited);
        printf(" %.1f%s | %.1fx |\n", base, limited ? " (match limit hit)" : "",
               full / base);
        fflush(stdout);
    }

    printf("\nMB/s = 10^6 bytes per second on one thread, fed in %zu-byte "
           "chunks, fastest of the passes made in %.1f s per cell.\n",
           (size_t) CHUNK, budget);

    free(buf);
    bottle_scan_secrets_free(none);
    bottle_scan_secrets_free(five);
    bottle_scan_secrets_free(twenty);
    bottle_scan_db_free(db);
    return 0;
}
