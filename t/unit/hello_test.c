/*
 * bottle_hello: the ClientHello check the CONNECT front runs before it
 * relays a tunnel.  A real ClientHello from openssl, whole, in pieces and
 * split over records; then crafted ones, each with one thing wrong.
 */

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_hello.h"


/* openssl s_client -servername api.example.test (OpenSSL 3, TLS 1.3) */
static const unsigned char  real[] = {
  0x16, 0x03, 0x01, 0x01, 0x3d, 0x01, 0x00, 0x01, 0x39, 0x03, 0x03, 0x2f,
  0xa7, 0x28, 0x59, 0x4c, 0x1b, 0x81, 0x67, 0xa1, 0x23, 0x7d, 0x2f, 0xf1,
  0x8f, 0xb4, 0xb5, 0xfb, 0xa0, 0x1d, 0xd9, 0x1a, 0x08, 0xd9, 0xc9, 0x4b,
  0x7d, 0x98, 0x9b, 0xc9, 0x81, 0x5b, 0x02, 0x20, 0x0f, 0xb0, 0x8e, 0x05,
  0xcd, 0xca, 0x88, 0xbc, 0x0d, 0xdb, 0x61, 0xf3, 0xcc, 0x26, 0x08, 0xce,
  0x7d, 0xad, 0xcb, 0x34, 0x6b, 0x20, 0x9e, 0x5c, 0x67, 0x3a, 0xa1, 0xc9,
  0x02, 0xa1, 0x29, 0x8b, 0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01,
  0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
  0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b,
  0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
  0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d,
  0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xb2,
  0x00, 0x00, 0x00, 0x15, 0x00, 0x13, 0x00, 0x00, 0x10, 0x61, 0x70, 0x69,
  0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x74, 0x65, 0x73,
  0x74, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00,
  0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00,
  0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00,
  0x23, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00,
  0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08,
  0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08,
  0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03,
  0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00,
  0x09, 0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d,
  0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d,
  0x00, 0x20, 0xad, 0x1c, 0x87, 0x92, 0x41, 0xb3, 0x61, 0x53, 0x2f, 0xb3,
  0xa3, 0xbd, 0xdc, 0x6c, 0xc6, 0x8a, 0xef, 0x0e, 0xcc, 0xf2, 0x42, 0xb3,
  0x5a, 0x35, 0x48, 0x7d, 0xd2, 0x3e, 0xe2, 0x70, 0xd7, 0x6e
};


/* a ClientHello message (no record) with the given field lengths */

typedef struct {
    unsigned  version;
    size_t    session_id;
    size_t    ciphers;
    size_t    compression;
    int       extensions;       /* -1: no extensions block */
    long      ext_fix;          /* added to the block's length */
    long      last_fix;         /* added to the last extension's length */
    size_t    ext_pad;          /* one more extension of this many bytes */
} spec_t;


static unsigned char  msg[20000], wire[40000];


static size_t
put(unsigned char *p, size_t v, size_t bytes)
{
    size_t  i;

    for (i = 0; i < bytes; i++) {
        p[i] = (unsigned char) (v >> (8 * (bytes - 1 - i)));
    }

    return bytes;
}


static void
spec_default(spec_t *s)
{
    memset(s, 0, sizeof(*s));
    s->version = 0x0303;
    s->session_id = 32;
    s->ciphers = 6;
    s->compression = 1;
    s->extensions = 2;
}


static size_t
build(const spec_t *s)
{
    int     i;
    size_t  n, ext_at, last_at, len;

    n = 4;
    n += put(msg + n, s->version, 2);
    memset(msg + n, 0xaa, 32);
    n += 32;
    n += put(msg + n, s->session_id, 1);
    memset(msg + n, 0x01, s->session_id);
    n += s->session_id;
    n += put(msg + n, s->ciphers, 2);
    memset(msg + n, 0x13, s->ciphers);
    n += s->ciphers;
    n += put(msg + n, s->compression, 1);
    memset(msg + n, 0, s->compression);
    n += s->compression;

    if (s->extensions >= 0) {
        ext_at = n;
        n += 2;
        last_at = 0;

        for (i = 0; i < s->extensions; i++) {
            n += put(msg + n, (size_t) i, 2);
            last_at = n;
            n += put(msg + n, 3, 2);
            memset(msg + n, 'e', 3);
            n += 3;
        }

        if (s->ext_pad) {
            n += put(msg + n, 21, 2);
            last_at = n;
            n += put(msg + n, s->ext_pad, 2);
            memset(msg + n, 0, s->ext_pad);
            n += s->ext_pad;
        }

        if (last_at) {
            len = (size_t) ((long) (msg[last_at] << 8 | msg[last_at + 1])
                            + s->last_fix);
            put(msg + last_at, len, 2);
        }

        put(msg + ext_at, (size_t) ((long) (n - ext_at - 2) + s->ext_fix), 2);
    }

    msg[0] = 1;
    put(msg + 1, n - 4, 3);

    return n;
}


/* the message in records of at most frag bytes */

static size_t
records(const unsigned char *m, size_t len, size_t frag)
{
    size_t  n, part;

    n = 0;

    while (len) {
        part = len < frag ? len : frag;
        wire[n++] = 0x16;
        wire[n++] = 0x03;
        wire[n++] = 0x01;
        n += put(wire + n, part, 2);
        memcpy(wire + n, m, part);
        n += part;
        m += part;
        len -= part;
    }

    return n;
}


static int
check(const unsigned char *p, size_t n)
{
    bottle_hello_t  h;

    return bottle_hello_parse(&h, p, n);
}


/* an exact-size copy, so that ASan sees any read past the end */

static int
check_copy(const unsigned char *p, size_t n, bottle_hello_t *h)
{
    int             rc;
    unsigned char  *copy;

    copy = malloc(n ? n : 1);
    if (copy == NULL) {
        return -100;
    }

    memcpy(copy, p, n);
    rc = bottle_hello_parse(h, copy, n);
    free(copy);

    return rc;
}


static void
test_real(void)
{
    int             rc, bad;
    size_t          i, n;
    bottle_hello_t  h;
    unsigned char   buf[sizeof(real) + 64];

    rc = check_copy(real, sizeof(real), &h);
    is_int(rc, BOTTLE_HELLO_OK, "openssl's ClientHello passes");
    is_int(h.len, sizeof(real), "...all of it");
    is_int(h.records, 1, "...in one record");

    /* what follows it (a ChangeCipherSpec, early data) is not looked at */
    memcpy(buf, real, sizeof(real));
    memcpy(buf + sizeof(real), "\x14\x03\x03\x00\x01\x01GET / HTTP/1.1", 20);
    rc = bottle_hello_parse(&h, buf, sizeof(real) + 20);
    is_int(rc, BOTTLE_HELLO_OK, "bytes after the ClientHello: still ok");
    is_int(h.len, sizeof(real), "...its length is the ClientHello's");

    /* every prefix is incomplete, and says how much more it needs */
    bad = 0;

    for (i = 0; i < sizeof(real); i++) {
        rc = check_copy(real, i, &h);
        if (rc != BOTTLE_HELLO_AGAIN || h.need <= i
            || h.need > sizeof(real))
        {
            printf("#   prefix %zu: rc %d need %zu\n", i, rc, h.need);
            bad++;
        }
    }

    ok(bad == 0, "every prefix: need more, within the record");

    rc = bottle_hello_parse(&h, real, 3);
    is_int(h.need, 5, "three bytes: the record header is needed");
    rc = bottle_hello_parse(&h, real, 5);
    is_int(h.need, sizeof(real), "the header: the whole record is needed");

    /* split over records of every size */
    bad = 0;

    for (i = 1; i <= sizeof(real) - 5; i++) {
        n = records(real + 5, sizeof(real) - 5, i);
        rc = check_copy(wire, n, &h);
        if (rc != BOTTLE_HELLO_OK || h.len != n) {
            printf("#   records of %zu: rc %d\n", i, rc);
            bad++;
        }
    }

    ok(bad == 0, "split over records of 1 to %zu bytes: ok",
       sizeof(real) - 5);

    n = records(real + 5, sizeof(real) - 5, 1);
    rc = bottle_hello_parse(&h, wire, n);
    is_int(h.records, sizeof(real) - 5, "one-byte records: all counted");

    /* in one-byte records, every prefix is incomplete */
    bad = 0;

    for (i = 0; i < n; i++) {
        rc = bottle_hello_parse(&h, wire, i);
        if (rc != BOTTLE_HELLO_AGAIN || h.need <= i) {
            bad++;
        }
    }

    ok(bad == 0, "one-byte records: every prefix needs more");
}


static void
test_fake_header(void)
{
    bottle_hello_t  h;

    static const unsigned char  issue[] =
        "\x16\x03\x01\x00\x05\x01GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    static const unsigned char  short_msg[] =
        "\x16\x03\x01\x00\x05\x01\x00\x00\x01GET / HTTP/1.1\r\n\r\n";
    static const unsigned char  framed[] =
        "\x16\x03\x01\x00\x25\x01\x00\x00\x21"
        "GET /secret HTTP/1.1\r\nHost: x\r\n\r\n";

    is_int(check(issue, sizeof(issue) - 1), BOTTLE_HELLO_E_TOO_LARGE,
           "16 03 01 00 05 01 + plaintext (the issue): refused");
    is_int(check(issue, 10), BOTTLE_HELLO_E_TOO_LARGE,
           "...as soon as the message length is in");
    is_int(check(short_msg, sizeof(short_msg) - 1), BOTTLE_HELLO_E_SHORT,
           "a one-byte message and plaintext: refused");
    is_int(check(framed, sizeof(framed) - 1), BOTTLE_HELLO_E_LEGACY_VERSION,
           "consistent framing around plaintext: refused");

    is_int(check((const unsigned char *) "G", 1), BOTTLE_HELLO_E_RECORD,
           "a plaintext first byte: refused at once");
    is_int(check((const unsigned char *) "\x16\x02", 2),
           BOTTLE_HELLO_E_VERSION, "record version 2.x: refused");
    is_int(check((const unsigned char *) "\x16\x03\x05", 3),
           BOTTLE_HELLO_E_VERSION, "record version 3.5: refused");
    is_int(check((const unsigned char *) "\x16\x03\x01\x00\x00", 5),
           BOTTLE_HELLO_E_RECORD_LEN, "an empty record: refused");
    is_int(check((const unsigned char *) "\x16\x03\x01\x40\x01", 5),
           BOTTLE_HELLO_E_RECORD_LEN, "a record of 16385 bytes: refused");
    is_int(check((const unsigned char *) "\x17\x03\x03\x00\x10", 5),
           BOTTLE_HELLO_E_RECORD, "an application_data record: refused");
    is_int(check((const unsigned char *) "\x16\x03\x01\x00\x04\x02", 6),
           BOTTLE_HELLO_E_TYPE, "a ServerHello: refused");
    is_int(check((const unsigned char *) "", 0), BOTTLE_HELLO_AGAIN,
           "nothing yet: need more");
    bottle_hello_parse(&h, (const unsigned char *) "", 0);
    is_int(h.need, 5, "...a record header");
}


static void
test_fields(void)
{
    size_t  m, n;
    spec_t  s;

    spec_default(&s);
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "crafted ClientHello: ok");

    s.extensions = 0;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "empty extensions block: ok");

    s.extensions = -1;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "no extensions block: ok");

    spec_default(&s);
    s.session_id = 0;
    s.ciphers = 2;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "no session id, one suite: ok");

    spec_default(&s);
    s.version = 0x0200;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_LEGACY_VERSION,
           "ClientHello version 2.0: refused");

    s.version = 0x0305;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_LEGACY_VERSION,
           "ClientHello version 3.5: refused");

    spec_default(&s);
    s.session_id = 33;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_SESSION_ID,
           "a 33-byte session id: refused");

    spec_default(&s);
    s.ciphers = 0;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_CIPHERS, "no cipher suites: refused");

    s.ciphers = 5;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_CIPHERS,
           "odd cipher suites length: refused");

    spec_default(&s);
    s.compression = 0;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_COMPRESSION,
           "no compression methods: refused");

    spec_default(&s);
    s.ext_fix = 1;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "extensions block one byte longer than the rest: refused");

    s.ext_fix = -1;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "extensions block one byte shorter: refused");

    spec_default(&s);
    s.last_fix = 1;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "an extension longer than the block: refused");

    s.last_fix = -1;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "an extension that leaves 1 byte over: refused");

    s.last_fix = -3;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "an extension that leaves 3 bytes over: refused");

    /* the message length against its records */
    spec_default(&s);
    m = build(&s);
    put(msg + 1, m - 4 - 1, 3);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_TRAILING,
           "message shorter than its record: refused");

    n = records(msg, m - 1, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_EXTENSIONS,
           "message one byte short, record to match: refused");

    spec_default(&s);
    s.ext_fix = 1;
    s.last_fix = 1;
    m = build(&s);
    put(msg + 1, m - 4 + 1, 3);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_AGAIN,
           "message longer than its record: waits for the next record");
    wire[n] = 0x17;
    is_int(check(wire, n + 1), BOTTLE_HELLO_E_RECORD,
           "...which is no handshake record: refused at its first byte");

    /* a second record running past the message's end */
    spec_default(&s);
    m = build(&s);
    n = records(msg, m, 40);
    put(wire + n - (m % 40 ? m % 40 : 40) - 2, (m % 40 ? m % 40 : 40) + 1, 2);
    wire[n] = 0;
    is_int(check(wire, n + 1), BOTTLE_HELLO_E_TRAILING,
           "the last record goes on after the message: refused");
}


static void
test_sizes(void)
{
    size_t          m, n;
    spec_t          s;
    bottle_hello_t  h;

    /* the largest: a full record */
    spec_default(&s);
    m = build(&s);
    s.ext_pad = 16384 - m - 4;
    m = build(&s);
    is_int(m, 16384, "a 16384-byte ClientHello built");
    n = records(msg, m, 16384);
    is_int(check_copy(wire, n, &h), BOTTLE_HELLO_OK,
           "a ClientHello of 16384 bytes: ok");
    bottle_hello_parse(&h, wire, 9);
    is_int(h.need, 16389, "...its header asks for all of it");

    n = records(msg, m, 8192);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "...in two records: ok");

    s.ext_pad++;
    m = build(&s);
    n = records(msg, m, 16384);
    is_int(check(wire, n), BOTTLE_HELLO_E_TOO_LARGE,
           "a ClientHello of 16385 bytes: refused");
    is_int(check(wire, 9), BOTTLE_HELLO_E_TOO_LARGE,
           "...from its header");

    /* small records: headers count against the cap */
    spec_default(&s);
    s.ext_pad = 3000;
    m = build(&s);
    n = records(msg, m, 1);
    ok(n > BOTTLE_HELLO_MAX_WIRE, "%zu bytes in one-byte records", m);
    is_int(check(wire, n), BOTTLE_HELLO_E_TOO_LARGE,
           "...over the cap: refused");

    n = records(msg, m, 16);
    is_int(check(wire, n), BOTTLE_HELLO_OK, "...in 16-byte records: ok");
}


static void
test_strerror(void)
{
    int  rc, bad;

    bad = 0;

    for (rc = BOTTLE_HELLO_E_MIN; rc <= BOTTLE_HELLO_AGAIN; rc++) {
        if (strcmp(bottle_hello_strerror(rc), "unknown error") == 0) {
            bad++;
        }
    }

    ok(bad == 0, "every code has a message");
}


int
main(void)
{
    test_real();
    test_fake_header();
    test_fields();
    test_sizes();
    test_strerror();

    return done_testing();
}
