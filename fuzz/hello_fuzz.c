/*
 * libFuzzer target for the ClientHello check (bottle_hello.c).  See
 * docs/fuzzing.md.  Beyond "no crash, no sanitizer report" it checks what
 * the front relies on: an incomplete answer asks for more than it was
 * given and no more than the cap, a complete one covers no byte it was not
 * given and none past the ClientHello, a verdict never changes as bytes
 * are added, and how the message is cut into records does not matter.
 * Each input is also checked as a bare handshake message, framed here, so
 * that the fuzzer reaches the fields without learning the framing first.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_hello.h"
#include "fuzz.h"


static int
parse_copy(const uint8_t *data, size_t size, bottle_hello_t *h)
{
    int       rc;
    uint8_t  *copy;

    /* an exact-size copy so ASan sees any read past the end */
    copy = malloc(size ? size : 1);
    CHECK(copy != NULL);
    memcpy(copy, data, size);
    rc = bottle_hello_parse(h, copy, size);
    free(copy);

    return rc;
}


/* the message in records of frag bytes; 0 if they would not fit */

static size_t
frame(uint8_t *out, size_t room, const uint8_t *m, size_t len, size_t frag)
{
    size_t  n, part;

    n = 0;

    while (len) {
        part = len < frag ? len : frag;

        if (room - n < 5 + part) {
            return 0;
        }

        out[n++] = 0x16;
        out[n++] = 0x03;
        out[n++] = 0x03;
        out[n++] = (uint8_t) (part >> 8);
        out[n++] = (uint8_t) part;
        memcpy(out + n, m, part);
        n += part;
        m += part;
        len -= part;
    }

    return n;
}


/* the handshake bytes of checked records */

static size_t
unframe(uint8_t *out, const uint8_t *data, size_t len)
{
    size_t  n, p, rec;

    n = 0;
    p = 0;

    while (p < len) {
        rec = (size_t) data[p + 3] << 8 | data[p + 4];
        memcpy(out + n, data + p + 5, rec);
        n += rec;
        p += 5 + rec;
    }

    CHECK(p == len);

    return n;
}


static int
run(const uint8_t *data, size_t size, size_t frag)
{
    int             rc, rc2;
    size_t          m, n;
    bottle_hello_t  h, h2;
    static uint8_t  msg[BOTTLE_HELLO_MAX_WIRE];
    static uint8_t  wire[6 * BOTTLE_HELLO_MAX_MESSAGE];

    rc = parse_copy(data, size, &h);

    CHECK(rc == BOTTLE_HELLO_OK || rc == BOTTLE_HELLO_AGAIN
          || (rc < 0 && rc >= BOTTLE_HELLO_E_MIN));
    CHECK(strcmp(bottle_hello_strerror(rc), "unknown error") != 0);

    if (rc == BOTTLE_HELLO_AGAIN) {
        CHECK(h.need > size);
        CHECK(h.need <= BOTTLE_HELLO_MAX_WIRE);
    }

    /* a prefix is incomplete or already refused the same way */
    if (size > 0) {
        rc2 = parse_copy(data, size - 1, &h2);
        CHECK(rc2 == BOTTLE_HELLO_AGAIN || (rc < 0 && rc2 == rc)
              || (rc == BOTTLE_HELLO_OK && h.len < size && rc2 == rc));
        rc2 = parse_copy(data, size / 2, &h2);
        CHECK(rc2 == BOTTLE_HELLO_AGAIN || rc2 == rc);
    }

    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    CHECK(h.len <= size);
    CHECK(h.len <= BOTTLE_HELLO_MAX_WIRE);
    CHECK(h.records >= 1);

    /* the ClientHello alone: the same; one byte less: incomplete */
    CHECK(parse_copy(data, h.len, &h2) == BOTTLE_HELLO_OK);
    CHECK(h2.len == h.len && h2.records == h.records);
    CHECK(parse_copy(data, h.len - 1, &h2) == BOTTLE_HELLO_AGAIN);

    /* cut into other records: the same verdict while it fits the cap */
    m = unframe(msg, data, h.len);
    CHECK(m >= 4 && m <= BOTTLE_HELLO_MAX_MESSAGE);
    n = frame(wire, sizeof(wire), msg, m, frag);
    CHECK(n > 0);

    rc2 = parse_copy(wire, n, &h2);
    CHECK(rc2 == (n <= BOTTLE_HELLO_MAX_WIRE ? BOTTLE_HELLO_OK
                                             : BOTTLE_HELLO_E_TOO_LARGE));

    return rc;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t          n, frag;
    static uint8_t  wire[6 * BOTTLE_HELLO_MAX_MESSAGE];

    frag = size ? (size_t) data[size - 1] % 64 + 1 : 1;

    run(data, size, frag);

    /* the input as a handshake message, in one record and in pieces */
    if (size > 0 && size <= BOTTLE_HELLO_RECORD_MAX) {
        n = frame(wire, sizeof(wire), data, size, BOTTLE_HELLO_RECORD_MAX);
        run(wire, n, frag);

        n = frame(wire, sizeof(wire), data, size, frag);
        if (n) {
            run(wire, n, BOTTLE_HELLO_RECORD_MAX);
        }
    }

    return 0;
}
