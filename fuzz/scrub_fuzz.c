/*
 * libFuzzer target for the held-secret scrubber (bottle_scrub.c): the
 * first byte picks a chunk size, the rest is a response body fed in those
 * chunks.  Beyond "no crash, no sanitizer report" it checks that no held
 * value is left in the output in its plain form (a run of output bytes
 * that are not a placeholder is a run of input bytes, which the scan saw
 * whole), that the same input in one chunk gives the same output, that
 * the output is as long as the input (placeholders are padded), and
 * that an input with no held form in it comes out byte-identical.  See
 * docs/fuzzing.md.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scrub.h"
#include "fuzz.h"


typedef struct {
    unsigned char  *buf;
    size_t          len;
    size_t          cap;
} out_t;


static int
sink(void *arg, const unsigned char *p, size_t len)
{
    out_t  *o = arg;

    CHECK(o->len + len <= o->cap);
    memcpy(o->buf + o->len, p, len);
    o->len += len;

    return 0;
}


static const bottle_scrub_value_t  values[] = {
    { "credential:API", "credential", (const unsigned char *) "s3cret-Val/ue+1", 15 },
    { "canary", "canary", (const unsigned char *) "CANARY-abcdef12", 15 },
};


static void
scrub(bottle_scrub_db_t *db, const uint8_t *p, size_t n, size_t chunk,
    out_t *o)
{
    size_t           i, k;
    bottle_scrub_t  *s;

    CHECK(bottle_scrub_create(&s, db, sink, o) == BOTTLE_SCRUB_OK);

    for (i = 0; i < n; i += k) {
        k = n - i < chunk ? n - i : chunk;
        CHECK(bottle_scrub_feed(s, p + i, k) == BOTTLE_SCRUB_OK);
    }

    CHECK(bottle_scrub_finish(s) == BOTTLE_SCRUB_OK);
    bottle_scrub_destroy(s);
}


static int
has(const unsigned char *h, size_t hn, const unsigned char *n, size_t nn)
{
    size_t  i;

    for (i = 0; i + nn <= hn; i++) {
        if (memcmp(h + i, n, nn) == 0) {
            return 1;
        }
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                       err[128];
    size_t                     i, chunk, cap;
    out_t                      a, b;
    static bottle_scrub_db_t  *db;

    if (size < 1) {
        return 0;
    }

    if (db == NULL) {
        CHECK(bottle_scrub_db_create(&db, values, 2, err, sizeof(err)) == 0);
        CHECK(db != NULL);
    }

    chunk = (size_t) data[0] + 1;
    data++;
    size--;

    /* a placeholder is longer than the shortest literal: room for it */
    cap = 4 * size + 64;
    a.buf = malloc(cap);
    b.buf = malloc(cap);
    CHECK(a.buf && b.buf);
    a.len = b.len = 0;
    a.cap = b.cap = cap;

    scrub(db, data, size, chunk, &a);
    scrub(db, data, size, size ? size : 1, &b);

    CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0);
    CHECK(a.len == size);

    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        CHECK(!has(a.buf, a.len, values[i].value, values[i].len));
    }

    if (!has(a.buf, a.len, (const unsigned char *) "[held", 5)) {
        CHECK(a.len == size && memcmp(a.buf, data, size) == 0);
    }

    free(a.buf);
    free(b.buf);

    return 0;
}
