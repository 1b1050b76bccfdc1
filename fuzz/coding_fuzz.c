/*
 * libFuzzer target for the content decoders (bottle_coding.c): the first
 * byte picks a stack of codings and a chunk size, the rest is fed to the
 * decoder as a compressed body.  Beyond "no crash, no sanitizer report" it
 * checks that no stage decodes past the limit, that a decoder reports an
 * error or a complete stream, and that the same bytes encoded with the
 * stack decode back to themselves.  See docs/fuzzing.md.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_coding.h"


#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond,         \
                    __FILE__, __LINE__);                                     \
            abort();                                                         \
        }                                                                    \
    } while (0)

#define LIMIT  (1 << 20)


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


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


static int
decode(const int *codings, size_t n, const uint8_t *data, size_t size,
    size_t step, sink_t *s)
{
    int                rc;
    size_t             off, k;
    bottle_decoder_t  *d;

    rc = bottle_decoder_create(&d, codings, n, LIMIT, NULL, sink, s);
    CHECK(rc == BOTTLE_CODING_OK);

    for (off = 0; off < size && rc == BOTTLE_CODING_OK; off += k) {
        k = size - off < step ? size - off : step;
        rc = bottle_decoder_feed(d, data + off, k);
    }

    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_finish(d);
    }

    CHECK(rc == BOTTLE_CODING_OK || rc == BOTTLE_CODING_ECORRUPT
          || rc == BOTTLE_CODING_ETRUNCATED || rc == BOTTLE_CODING_ELIMIT);
    CHECK(bottle_decoder_total(d) == s->len);

    bottle_decoder_destroy(d);

    return rc;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int             codings[BOTTLE_CODING_MAX];
    size_t          n, i, step, enc_len;
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
    decode(codings, n, data, size, step, &s);

    /* the input as the plain body: encoded with the stack, back again */

    if (bottle_coding_encode(codings, n, data, size, NULL, &enc, &enc_len)
        != BOTTLE_CODING_OK)
    {
        return 0;
    }

    memset(&s, 0, sizeof(s));
    s.buf = malloc(size ? size : 1);
    CHECK(decode(codings, n, enc, enc_len, step, &s) == BOTTLE_CODING_OK);
    CHECK(s.len == size && memcmp(s.buf, data, size) == 0);

    free(s.buf);
    free(enc);

    return 0;
}
