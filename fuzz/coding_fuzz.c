/*
 * libFuzzer target for the content decoders (bottle_coding.c): the first
 * byte picks a stack of codings and a chunk size, the rest is fed to the
 * decoder as a compressed body.  Beyond "no crash, no sanitizer report" it
 * checks that no stage decodes past the limit, that a decoder reports an
 * error or a complete stream, and that the same bytes encoded with the
 * stack decode back to themselves.  The compressed body is decoded a
 * second time with a meta sink (the gzip header fields the DLP scans):
 * each field at most BOTTLE_CODING_HEAD_MAX bytes, the decoded bytes the
 * same as without it, and a stack with br refused (EOPAQUE).  See
 * docs/fuzzing.md.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_coding.h"
#include "fuzz.h"


#define LIMIT  (1 << 20)


typedef struct {
    unsigned char  *buf;
    size_t          len;
} sink_t;


static int
sink(void *arg, const unsigned char *p, size_t len)
{
    sink_t  *s = arg;

    CHECK(s->len + len <= LIMIT);

    if (s->buf) {
        memcpy(s->buf + s->len, p, len);
    }

    s->len += len;

    return 0;
}


static size_t  meta_total;

static int
meta(void *arg, int part, const unsigned char *p, size_t len)
{
    (void) arg;

    CHECK(len > 0 && len <= BOTTLE_CODING_HEAD_MAX);
    CHECK(part != BOTTLE_CODING_META_FIXED || len == 6);
    CHECK(part >= BOTTLE_CODING_META_FIXED
          && part <= BOTTLE_CODING_META_EXTRA);
    CHECK(p[0] == p[0]);                /* readable: ASan checks */
    CHECK(p[len - 1] == p[len - 1]);

    meta_total += len;

    return 0;
}


static int
decode(const int *codings, size_t n, const uint8_t *data, size_t size,
    size_t step, sink_t *s, int with_meta)
{
    int                rc;
    size_t             off, k, i;
    bottle_decoder_t  *d;

    rc = bottle_decoder_create(&d, codings, n, LIMIT, NULL, sink, s);
    CHECK(rc == BOTTLE_CODING_OK);

    if (with_meta) {
        rc = bottle_decoder_meta(d, meta);

        for (i = 0; i < n; i++) {
            if (codings[i] == BOTTLE_CODING_BR) {
                CHECK(rc == BOTTLE_CODING_EOPAQUE);
                bottle_decoder_destroy(d);
                return rc;
            }
        }

        CHECK(rc == BOTTLE_CODING_OK);
    }

    for (off = 0; off < size && rc == BOTTLE_CODING_OK; off += k) {
        k = size - off < step ? size - off : step;
        rc = bottle_decoder_feed(d, data + off, k);
    }

    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_finish(d);
    }

    CHECK(rc == BOTTLE_CODING_OK || rc == BOTTLE_CODING_ECORRUPT
          || rc == BOTTLE_CODING_ETRUNCATED || rc == BOTTLE_CODING_ELIMIT
          || (with_meta && rc == BOTTLE_CODING_EHEADER));
    CHECK(bottle_decoder_total(d) == s->len);

    bottle_decoder_destroy(d);

    return rc;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int             codings[BOTTLE_CODING_MAX], rc, rc2;
    size_t          n, i, step, enc_len, plain_len;
    sink_t          s;
    unsigned char  *enc;

    if (size < 1) {
        return 0;
    }

    n = 1 + data[0] % BOTTLE_CODING_MAX;

    for (i = 0; i < n; i++) {
        codings[i] = 1 + (data[0] >> (2 + 2 * i)) % 3;
    }

    step = 1 + ((data[0] * 131u) % 64) * 61;
    data++;
    size--;

    /* the input as a compressed body */

    memset(&s, 0, sizeof(s));
    rc = decode(codings, n, data, size, step, &s, 0);
    plain_len = s.len;

    /* again with the meta sink: the same bytes decoded, fields bounded */

    memset(&s, 0, sizeof(s));
    meta_total = 0;
    rc2 = decode(codings, n, data, size, step, &s, 1);

    if (rc2 == BOTTLE_CODING_OK) {
        CHECK(rc == BOTTLE_CODING_OK && s.len == plain_len);
    }

    if (rc == BOTTLE_CODING_OK && rc2 != BOTTLE_CODING_EOPAQUE) {
        CHECK(rc2 == BOTTLE_CODING_OK || rc2 == BOTTLE_CODING_EHEADER);
    }

    /* the input as the plain body: encoded with the stack, back again */

    if (bottle_coding_encode(codings, n, data, size, NULL, &enc, &enc_len)
        != BOTTLE_CODING_OK)
    {
        return 0;
    }

    memset(&s, 0, sizeof(s));
    s.buf = malloc(size ? size : 1);
    CHECK(decode(codings, n, enc, enc_len, step, &s, 0) == BOTTLE_CODING_OK);
    CHECK(s.len == size && memcmp(s.buf, data, size) == 0);

    free(s.buf);
    free(enc);

    return 0;
}
