/*
 * libFuzzer target for the streaming secret scanner (bottle_scan*.c): the
 * decoders on their own (JSON, percent, skeleton), then the scan of the
 * input as one field and fed in chunks the input chooses.  See
 * docs/fuzzing.md.  Beyond "no crash, no sanitizer report" it checks what
 * the gateway relies on: decoded bytes map inside the raw input in order,
 * every match lies in its field, a raw-view match is found however the
 * field is cut, and redaction either refuses or writes exactly the length
 * it announced.
 *
 * Input: byte 0 picks the detectors and the decoder run, byte 1 seeds the
 * chunk sizes, the rest is the field.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scan_int.h"
#include "fuzz.h"


static bottle_scan_db_t       *db;
static bottle_scan_secrets_t  *sec;


static void
setup(void)
{
    char              err[256];
    bottle_str_t      canary = { "CANARY-7f3a9c1e", 15 };
    bottle_secret_t   tok[3] = {
        { { "GH", 2 }, { "Sx9-fK2mQ7xL4pZ8vR1n_B6wY3cJ5hT0dG", 34 } },
        { { "K", 1 }, { "abcdefgh", 8 } },
        /* punctuation at the ends: raw literals too */
        { { "PAD", 3 }, { "-Zq8Rt5Wk1Xp0Nv3==", 18 } },
    };

    if (bottle_scan_db_create(&db, err, sizeof(err)) != 0
        || bottle_scan_secrets_create(&sec, db, &canary, tok, 3, err,
                                      sizeof(err)) != 0)
    {
        fprintf(stderr, "setup: %s\n", err);
        abort();
    }
}


/* a decoder alone: its output maps into the input, in order; the
 * implementations (scalar, SSSE3, AVX-512) agree with each other */
static void
fuzz_decoder(int which, const uint8_t *in, size_t n)
{
    int                  level, best;
    size_t               i, cap, o, k;
    uint32_t             last, st, en;
    unsigned char       *out0;
    uint32_t            *span0;
    unsigned             trig0;
    size_t               len0;
    bottle_scan_view_t   v;

    best = bottle_scan_skel_impl(-1);
    cap = n + 64;
    out0 = malloc(cap);
    span0 = malloc(2 * cap * sizeof(uint32_t));
    len0 = 0;
    trig0 = 0;

    for (level = 0; level <= best; level++) {
        bottle_scan_skel_impl(level);

        memset(&v, 0, sizeof(v));
        v.id = which == 0 ? BOTTLE_VIEW_JSON : which == 1 ? BOTTLE_VIEW_PCT
                                                          : BOTTLE_VIEW_SKELETON;
        v.buf = malloc(cap);
        if (v.id == BOTTLE_VIEW_SKELETON) {
            v.seg = malloc(cap * sizeof(bottle_scan_seg_t));
        } else {
            v.map = malloc(cap * sizeof(uint32_t));
            v.mlen = malloc(cap);
        }
        v.s = calloc(1, sizeof(bottle_scan_t));

        /* fed in two pieces, cut where the input says */
        k = n ? in[0] % (n + 1) : 0;
        for (o = 0; o < 2; o++) {
            const uint8_t  *p = o ? in + k : in;
            size_t          len = o ? n - k : k;
            uint32_t        off = o ? (uint32_t) k : 0;

            if (v.id == BOTTLE_VIEW_JSON) {
                bottle_scan_json_decode(&v, p, len, off);
            } else if (v.id == BOTTLE_VIEW_PCT) {
                bottle_scan_pct_decode(&v, p, len, NULL, NULL, off);
            } else {
                bottle_scan_skel_decode(&v, p, len, off);
            }
        }
        bottle_scan_decode_flush(&v);

        CHECK(v.curlen <= n);
        CHECK(v.seg == NULL || v.nseg <= v.curlen);
        last = 0;
        for (i = 0; i < v.curlen; i++) {
            bottle_scan_view_span(&v, i, &st, &en);
            CHECK(en > st);
            CHECK(en <= n);
            CHECK(st >= last);
            last = st;
            if (en - st == 1 && v.id != BOTTLE_VIEW_JSON) {
                CHECK(in[st] == v.buf[i]);
            }
            if (level == 0) {
                span0[2 * i] = st;
                span0[2 * i + 1] = en;
            } else {
                CHECK(span0[2 * i] == st && span0[2 * i + 1] == en);
            }
        }
        if (level == 0) {
            memcpy(out0, v.buf, v.curlen);
            len0 = v.curlen;
            trig0 = v.s->trig;
        } else {
            CHECK(v.curlen == len0 && memcmp(out0, v.buf, len0) == 0);
            CHECK(v.s->trig == trig0);
        }

        free(v.buf);
        free(v.map);
        free(v.mlen);
        free(v.seg);
        free(v.s);
    }

    bottle_scan_skel_impl(-1);
    free(out0);
    free(span0);
}


static const bottle_scan_match_t *
scan(bottle_scan_t *s, const uint8_t *p, size_t n, unsigned seed, size_t *nm)
{
    size_t  o, k;

    if (seed == 0) {
        /* whole: as the module scans a header, short fields left out */
        CHECK(bottle_scan_field(s, 7, p, n) == 0);
        return bottle_scan_matches(s, nm);
    }

    CHECK(bottle_scan_begin(s, 7) == 0);
    for (o = 0; o < n; o += k) {
        if (seed == 0) {
            k = n - o;
        } else {
            seed = seed * 1103515245u + 12345u;
            k = 1 + (seed >> 16) % (seed & 0x100 ? 9000 : 40);
            k = k < n - o ? k : n - o;
        }
        CHECK(bottle_scan_feed(s, p + o, k) == 0);
    }
    CHECK(bottle_scan_end(s) == 0);
    return bottle_scan_matches(s, nm);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                     i, j, n1, n2, n;
    ssize_t                    want, got;
    unsigned                   det, seed;
    unsigned char             *out;
    bottle_scan_t             *s, *t;
    bottle_scan_match_t       *whole;
    const bottle_scan_match_t *m, *m2;

    if (db == NULL) {
        setup();        /* also the decoders' tables */
    }
    if (size < 2) {
        return 0;
    }

    det = data[0] & 0x0f;
    seed = data[1] | 1;
    data += 2;
    n = size - 2;

    fuzz_decoder((data[-2] >> 4) % 3, data, n);

    CHECK(bottle_scan_acquire(&s, sec, det) == 0);
    m = scan(s, data, n, 0, &n1);
    whole = malloc((n1 + 1) * sizeof(*whole));
    memcpy(whole, m, n1 * sizeof(*whole));

    for (i = 0; i < n1; i++) {
        CHECK(whole[i].rule != NULL);
        CHECK(whole[i].start <= whole[i].end && whole[i].end <= n);
        CHECK(whole[i].detector >= BOTTLE_DETECT_CANARY
              && whole[i].detector <= BOTTLE_DETECT_INJECTION);
        CHECK(whole[i].field == 7);
    }

    /* redaction: refuses, or writes what it announced */
    want = bottle_scan_redact_len(n, 0, whole, n1, 7, ~0u, 0);
    if (want >= 0) {
        out = malloc((size_t) want + 1);
        got = bottle_scan_redact(out, (size_t) want, data, n, 0, whole, n1, 7,
                                 ~0u, 0);
        CHECK(got == want);
        free(out);
    }

    /* the same field in chunks: every raw-view match is there too */
    CHECK(bottle_scan_acquire(&t, sec, det) == 0);
    m2 = scan(t, data, n, seed, &n2);
    /* a full list drops warnings, or hits, in an order that depends on
     * the cuts */
    if (s->dropped == 0 && t->dropped == 0) {
        for (i = 0; i < n1; i++) {
            if (whole[i].view != BOTTLE_VIEW_RAW
                || whole[i].detector == BOTTLE_DETECT_INJECTION)
            {
                continue;
            }
            for (j = 0; j < n2; j++) {
                if (strcmp(m2[j].rule, whole[i].rule) == 0
                    && m2[j].start <= whole[i].start
                    && m2[j].end >= whole[i].end)
                {
                    break;
                }
            }
            CHECK(j < n2);
        }
    }

    /*
     * a field too short for the vendor patterns, or for the raw literals,
     * which bottle_scan_field() does not feed them: fed in chunks, they
     * find nothing in it either
     */
    for (j = 0; j < n2; j++) {
        if (m2[j].view != BOTTLE_VIEW_RAW) {
            continue;
        }
        if (m2[j].detector == BOTTLE_DETECT_TOKEN_PATTERNS) {
            CHECK(n >= s->db->vendor_min);
        }
        if (m2[j].detector == BOTTLE_DETECT_CANARY
            || m2[j].detector == BOTTLE_DETECT_KNOWN_SECRETS)
        {
            CHECK(n >= sec->raw_min);
        }
    }

    bottle_scan_release(t);
    bottle_scan_release(s);
    free(whole);
    return 0;
}
