/*
 * Unit tests of the content codings (lib/bottle_coding.c): parsing a
 * Content-Encoding, decoding gzip, deflate (zlib and raw), br and stacks of
 * them fed in any chunks, the size limit, truncated and corrupt input,
 * bytes after the end, encoding back, and the gzip header fields shown to
 * a meta sink (every member, every stage, too long ones refused; br
 * refused).  TAP on stdout.
 */

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "tap.h"
#include "bottle_coding.h"


typedef struct {
    unsigned char  *buf;
    size_t          len;
    size_t          cap;
    size_t          stop_after;     /* 0: never */
} sink_t;

static long  allocs, frees;


static int
sink(void *arg, const unsigned char *p, size_t len)
{
    sink_t  *s = arg;

    if (s->len + len > s->cap) {
        s->cap = (s->len + len) * 2;
        s->buf = realloc(s->buf, s->cap);
    }

    memcpy(s->buf + s->len, p, len);
    s->len += len;

    return s->stop_after && s->len >= s->stop_after;
}


static void *
count_alloc(void *opaque, size_t size)
{
    (void) opaque;
    allocs++;
    return malloc(size);
}


static void
count_free(void *opaque, void *p)
{
    (void) opaque;
    frees++;
    free(p);
}


static bottle_coding_alloc_t  counted = { count_alloc, count_free, NULL };


/* decode in chunks of step bytes (0: whole); the result code, out in *s */

static int
decode(const int *codings, size_t n, const unsigned char *in, size_t len,
    size_t step, uint64_t limit, sink_t *s)
{
    int                rc, rc2;
    size_t             off, k;
    bottle_decoder_t  *d;

    memset(s, 0, sizeof(sink_t));

    rc = bottle_decoder_create(&d, codings, n, limit, &counted, sink, s);
    if (rc != BOTTLE_CODING_OK) {
        return rc;
    }

    for (off = 0; off < len; off += k) {
        k = step ? step : len;
        if (k > len - off) {
            k = len - off;
        }

        rc = bottle_decoder_feed(d, in + off, k);
        if (rc != BOTTLE_CODING_OK) {
            break;
        }
    }

    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_finish(d);
    }

    /* an error sticks */
    rc2 = bottle_decoder_feed(d, (const unsigned char *) "x", 1);
    if (rc != BOTTLE_CODING_OK && rc2 != rc) {
        rc = 99;
    }

    bottle_decoder_destroy(d);

    return rc;
}


static size_t
text(unsigned char *buf, size_t len)
{
    size_t    i;
    uint32_t  x = 12345;

    for (i = 0; i < len; i++) {
        x = x * 1103515245 + 12345;
        buf[i] = "{\"role\": \"user\", \"content\": \"ghp_ abc 0123 \\n\"}"
                 [(x >> 16) % 48];
    }

    return len;
}


static void
test_parse(void)
{
    int     c[BOTTLE_CODING_MAX];
    size_t  n;

    is_int(bottle_coding_parse("gzip", 4, c, &n), BOTTLE_CODING_OK, "gzip");
    ok(n == 1 && c[0] == BOTTLE_CODING_GZIP, "gzip: one coding");

    is_int(bottle_coding_parse(" X-Gzip ", 8, c, &n), BOTTLE_CODING_OK,
           "x-gzip, any case, spaces");
    ok(n == 1 && c[0] == BOTTLE_CODING_GZIP, "x-gzip is gzip");

    is_int(bottle_coding_parse("deflate,br", 10, c, &n), BOTTLE_CODING_OK,
           "deflate,br");
    ok(n == 2 && c[0] == BOTTLE_CODING_DEFLATE && c[1] == BOTTLE_CODING_BR,
       "in the order applied");

    is_int(bottle_coding_parse("identity", 8, c, &n), BOTTLE_CODING_OK,
           "identity");
    is_int(n, 0, "identity: nothing to undo");

    is_int(bottle_coding_parse("gzip, identity,\tbr", 18, c, &n),
           BOTTLE_CODING_OK, "identity in a list");
    is_int(n, 2, "identity dropped from a list");

    is_int(bottle_coding_parse("zstd", 4, c, &n), BOTTLE_CODING_EUNKNOWN,
           "zstd: unknown");
    is_int(bottle_coding_parse("compress", 8, c, &n), BOTTLE_CODING_EUNKNOWN,
           "compress: unknown");
    is_int(bottle_coding_parse("gzipx", 5, c, &n), BOTTLE_CODING_EUNKNOWN,
           "gzipx: unknown");
    is_int(bottle_coding_parse("gzip,,br", 8, c, &n), BOTTLE_CODING_EUNKNOWN,
           "an empty entry");
    is_int(bottle_coding_parse("", 0, c, &n), BOTTLE_CODING_EUNKNOWN,
           "an empty value");
    is_int(bottle_coding_parse("gzip,", 5, c, &n), BOTTLE_CODING_EUNKNOWN,
           "a trailing comma");
    is_int(bottle_coding_parse("gzip,br,gzip", 12, c, &n), BOTTLE_CODING_OK,
           "three stacked");
    is_int(bottle_coding_parse("gzip,br,gzip,br", 15, c, &n),
           BOTTLE_CODING_EUNKNOWN, "four stacked: more than decoded here");
    is_int(bottle_coding_parse("gzip;q=1", 8, c, &n), BOTTLE_CODING_EUNKNOWN,
           "parameters: unknown");
}


static void
test_roundtrip(void)
{
    static const int  single[][1] = {
        { BOTTLE_CODING_GZIP }, { BOTTLE_CODING_DEFLATE }, { BOTTLE_CODING_BR }
    };
    static const int  stack[] = {
        BOTTLE_CODING_GZIP, BOTTLE_CODING_BR, BOTTLE_CODING_DEFLATE
    };
    static const size_t  steps[] = { 0, 1, 7, 4096 };

    int             rc, all;
    size_t          i, k, n, out_len;
    sink_t          s;
    unsigned char  *in, *out;

    n = 200000;
    in = malloc(n);
    text(in, n);

    for (i = 0; i < 3; i++) {
        rc = bottle_coding_encode(single[i], 1, in, n, NULL, &out, &out_len);
        is_int(rc, BOTTLE_CODING_OK, "encode %s",
               bottle_coding_name(single[i][0]));
        ok(out_len < n * 3 / 4, "%s compresses (%zu to %zu)",
           bottle_coding_name(single[i][0]), n, out_len);

        all = 1;

        for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
            rc = decode(single[i], 1, out, out_len, steps[k], n, &s);
            all = all && rc == BOTTLE_CODING_OK && s.len == n
                  && memcmp(s.buf, in, n) == 0;
            free(s.buf);
        }

        ok(all, "%s decodes to the input in chunks of 1, 7, 4096 and whole",
           bottle_coding_name(single[i][0]));

        rc = decode(single[i], 1, out, out_len, 0, n - 1, &s);
        free(s.buf);
        is_int(rc, BOTTLE_CODING_ELIMIT, "%s: a limit one byte short",
               bottle_coding_name(single[i][0]));

        rc = decode(single[i], 1, out, out_len - 1, 0, n, &s);
        free(s.buf);
        is_int(rc, BOTTLE_CODING_ETRUNCATED, "%s: the last byte missing",
               bottle_coding_name(single[i][0]));

        out = realloc(out, out_len + 1);
        out[out_len] = 'x';
        rc = decode(single[i], 1, out, out_len + 1, 0, n, &s);
        free(s.buf);
        is_int(rc, BOTTLE_CODING_ECORRUPT, "%s: a byte after the end",
               bottle_coding_name(single[i][0]));

        out[out_len / 2] ^= 0x55;
        out[out_len / 2 + 1] ^= 0xaa;
        rc = decode(single[i], 1, out, out_len, 0, n, &s);
        free(s.buf);
        ok(rc == BOTTLE_CODING_ECORRUPT || rc == BOTTLE_CODING_ETRUNCATED
           || rc == BOTTLE_CODING_ELIMIT,
           "%s: damaged in the middle is refused (%s)",
           bottle_coding_name(single[i][0]), bottle_coding_strerror(rc));

        free(out);
    }

    rc = bottle_coding_encode(stack, 3, in, n, &counted, &out, &out_len);
    is_int(rc, BOTTLE_CODING_OK, "encode gzip, br, deflate");

    all = 1;

    for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        rc = decode(stack, 3, out, out_len, steps[k], n, &s);
        all = all && rc == BOTTLE_CODING_OK && s.len == n
              && memcmp(s.buf, in, n) == 0;
        free(s.buf);
    }

    ok(all, "a stack of three decodes in any chunks");

    rc = decode(stack, 2, out, out_len, 0, n, &s);
    free(s.buf);
    ok(rc != BOTTLE_CODING_OK, "the wrong stack is refused (%s)",
       bottle_coding_strerror(rc));

    count_free(NULL, out);
    free(in);
}


static void
test_forms(void)
{
    int             gz[1] = { BOTTLE_CODING_GZIP };
    int             df[1] = { BOTTLE_CODING_DEFLATE };
    int             rc;
    size_t          len, one;
    sink_t          s;
    z_stream        z;
    unsigned char   raw[256], two[512], *out, *bomb;
    unsigned char   zeros[65536];

    /* two gzip members in a row */

    rc = bottle_coding_encode(gz, 1, (const unsigned char *) "hello ", 6,
                              NULL, &out, &one);
    memcpy(two, out, one);
    free(out);
    rc = bottle_coding_encode(gz, 1, (const unsigned char *) "world", 5,
                              NULL, &out, &len);
    memcpy(two + one, out, len);
    free(out);

    rc = decode(gz, 1, two, one + len, 3, 100, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 11
       && memcmp(s.buf, "hello world", 11) == 0, "two gzip members");
    free(s.buf);

    /* raw deflate, as some clients send "deflate" */

    memset(&z, 0, sizeof(z));
    deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (unsigned char *) "raw deflate body";
    z.avail_in = 16;
    z.next_out = raw;
    z.avail_out = sizeof(raw);
    deflate(&z, Z_FINISH);
    len = sizeof(raw) - z.avail_out;
    deflateEnd(&z);

    rc = decode(df, 1, raw, len, 1, 100, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 16
       && memcmp(s.buf, "raw deflate body", 16) == 0,
       "raw deflate under \"deflate\", one byte at a time");
    free(s.buf);

    rc = decode(df, 1, raw, 1, 0, 100, &s);
    free(s.buf);
    is_int(rc, BOTTLE_CODING_ETRUNCATED, "deflate: one byte");

    rc = decode(gz, 1, raw, 0, 0, 100, &s);
    free(s.buf);
    is_int(rc, BOTTLE_CODING_ETRUNCATED, "gzip: no bytes at all");

    rc = decode(gz, 1, (const unsigned char *) "not gzip at all", 15, 0, 100,
                &s);
    free(s.buf);
    is_int(rc, BOTTLE_CODING_ECORRUPT, "gzip: not gzip");

    /* a bomb: 64 MiB of zeros in about 64 KiB, stopped at the limit */

    memset(zeros, 0, sizeof(zeros));
    memset(&z, 0, sizeof(z));
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
    bomb = malloc(1 << 20);
    z.next_out = bomb;
    z.avail_out = 1 << 20;

    for (one = 0; one < 1024; one++) {
        z.next_in = zeros;
        z.avail_in = sizeof(zeros);
        deflate(&z, one == 1023 ? Z_FINISH : Z_NO_FLUSH);
    }

    len = (1 << 20) - z.avail_out;
    deflateEnd(&z);

    rc = decode(gz, 1, bomb, len, 16384, 1 << 20, &s);
    ok(rc == BOTTLE_CODING_ELIMIT && s.len <= (1 << 20),
       "64 MiB of zeros in %zu bytes stops at a 1 MiB limit (%zu out)",
       len, s.len);
    free(s.buf);

    rc = decode(gz, 1, bomb, len, 0, (uint64_t) 64 << 20, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == (size_t) 64 << 20,
       "and decodes whole at a 64 MiB limit");
    free(s.buf);

    /* the sink stops it */

    memset(&s, 0, sizeof(s));
    {
        bottle_decoder_t  *d;

        s.stop_after = 1000;
        bottle_decoder_create(&d, gz, 1, (uint64_t) 64 << 20, NULL, sink, &s);
        rc = bottle_decoder_feed(d, bomb, len);
        is_int(rc, BOTTLE_CODING_ESINK, "the sink stops the decoder");
        ok(bottle_decoder_total(d) >= 1000
           && bottle_decoder_total(d) < 100000, "soon");
        bottle_decoder_destroy(d);
    }
    free(s.buf);
    free(bomb);
}


/* a gzip member with the given header fields, by zlib; its length */

static unsigned long  gz_time;     /* MTIME of the next member */
static int            gz_os;

static size_t
gzip_member(unsigned char *out, size_t cap, const char *name,
    const char *comment, unsigned char *extra, size_t extra_len,
    const char *body)
{
    z_stream   z;
    gz_header  h;

    memset(&z, 0, sizeof(z));
    memset(&h, 0, sizeof(h));
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);

    h.name = (unsigned char *) name;
    h.comment = (unsigned char *) comment;
    h.extra = extra;
    h.extra_len = extra_len;
    h.hcrc = 1;
    h.time = gz_time;
    h.os = gz_os;
    deflateSetHeader(&z, &h);

    z.next_in = (unsigned char *) body;
    z.avail_in = strlen(body);
    z.next_out = out;
    z.avail_out = cap;
    deflate(&z, Z_FINISH);
    deflateEnd(&z);

    return cap - z.avail_out;
}


static sink_t  meta_s, fixed_s;

static int
meta_sink(void *arg, int part, const unsigned char *p, size_t len)
{
    (void) arg;

    if (part == BOTTLE_CODING_META_FIXED) {
        return len != 6 || sink(&fixed_s, p, len);
    }

    /* fields apart by '|' */
    sink(&meta_s, p, len);
    sink(&meta_s, (const unsigned char *) "|", 1);

    return meta_s.stop_after && meta_s.len >= meta_s.stop_after;
}


static int
decode_meta(const int *codings, size_t n, const unsigned char *in,
    size_t len, size_t step, sink_t *s)
{
    int                rc;
    size_t             off, k;
    bottle_decoder_t  *d;

    memset(s, 0, sizeof(sink_t));
    free(meta_s.buf);
    memset(&meta_s, 0, sizeof(sink_t));
    free(fixed_s.buf);
    memset(&fixed_s, 0, sizeof(sink_t));

    rc = bottle_decoder_create(&d, codings, n, 1 << 20, &counted, sink, s);
    if (rc != BOTTLE_CODING_OK) {
        return rc;
    }

    rc = bottle_decoder_meta(d, meta_sink);

    for (off = 0; rc == BOTTLE_CODING_OK && off < len; off += k) {
        k = step && step < len - off ? step : len - off;
        rc = bottle_decoder_feed(d, in + off, k);
    }

    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_finish(d);
    }

    bottle_decoder_destroy(d);

    return rc;
}


#define meta_is(want)  meta_is_n(want, sizeof(want) - 1)

static int
meta_is_n(const char *want, size_t len)
{
    return meta_s.len == len && memcmp(meta_s.buf, want, len) == 0;
}


static void
test_meta(void)
{
    int             gz[1] = { BOTTLE_CODING_GZIP };
    int             gz2[2] = { BOTTLE_CODING_GZIP, BOTTLE_CODING_GZIP };
    int             gzbr[2] = { BOTTLE_CODING_GZIP, BOTTLE_CODING_BR };
    int             rc;
    char           *big;
    size_t          len, len2, out_len;
    sink_t          s;
    unsigned char   buf[16384], extra[8192], *out;

    memcpy(extra, "Ab\x05\x00" "CANRY", 9);

    len = gzip_member(buf, sizeof(buf), "f.json", "a CANARY comment", extra,
                      9, "{\"a\": 1}");

    rc = decode_meta(gz, 1, buf, len, 0, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 8,
       "FNAME, FCOMMENT, FEXTRA: the body decodes");
    ok(meta_is("f.json|a CANARY comment|Ab\x05\x00" "CANRY|"),
       "the three fields go to the meta sink, each whole");
    free(s.buf);

    rc = decode_meta(gz, 1, buf, len, 1, &s);
    ok(rc == BOTTLE_CODING_OK
       && meta_is("f.json|a CANARY comment|Ab\x05\x00" "CANRY|"),
       "the same fed one byte at a time");
    free(s.buf);

    /* MTIME, XFL, OS of every member, one after another */

    gz_time = 0x41524143;                   /* "CARA" little-endian */
    gz_os = 'N';
    len = gzip_member(buf, sizeof(buf), NULL, NULL, NULL, 0, "a");
    gz_time = 0x2d315952;                   /* "RY1-" */
    gz_os = '!';
    len += gzip_member(buf + len, sizeof(buf) - len, NULL, NULL, NULL, 0,
                       "b");
    gz_time = 0;
    gz_os = 0;
    rc = decode_meta(gz, 1, buf, len, 3, &s);
    ok(rc == BOTTLE_CODING_OK && fixed_s.len == 12
       && memcmp(fixed_s.buf, "CARA", 4) == 0
       && fixed_s.buf[5] == 'N'
       && memcmp(fixed_s.buf + 6, "RY1-", 4) == 0
       && fixed_s.buf[11] == '!' && meta_s.len == 0,
       "MTIME, XFL and OS of two members: 12 bytes as sent, in order");
    free(s.buf);

    /* every member */

    len = gzip_member(buf, sizeof(buf), NULL, NULL, NULL, 0, "one ");
    len += gzip_member(buf + len, sizeof(buf) - len, NULL, "second", NULL, 0,
                       "two");
    rc = decode_meta(gz, 1, buf, len, 5, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 7 && meta_is("second|"),
       "the second member's FCOMMENT, the first has none");
    free(s.buf);

    /* every stage: the inner gzip's header */

    len = gzip_member(buf, sizeof(buf), "inner", NULL, NULL, 0, "x");
    rc = bottle_coding_encode(gz, 1, buf, len, NULL, &out, &out_len);
    rc = decode_meta(gz2, 2, out, out_len, 0, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 1 && meta_is("inner|"),
       "gzip, gzip: the inner member's FNAME");
    free(s.buf);
    free(out);

    /* as long as zlib keeps them whole, no longer */

    big = malloc(BOTTLE_CODING_HEAD_MAX + 1);
    memset(big, 'n', BOTTLE_CODING_HEAD_MAX);
    big[BOTTLE_CODING_HEAD_MAX - 1] = '\0';
    len = gzip_member(buf, sizeof(buf), big, NULL, NULL, 0, "x");
    rc = decode_meta(gz, 1, buf, len, 0, &s);
    ok(rc == BOTTLE_CODING_OK
       && meta_s.len == BOTTLE_CODING_HEAD_MAX,
       "an FNAME of %d bytes is shown whole", BOTTLE_CODING_HEAD_MAX - 1);
    free(s.buf);

    big[BOTTLE_CODING_HEAD_MAX - 1] = 'n';
    big[BOTTLE_CODING_HEAD_MAX] = '\0';
    len = gzip_member(buf, sizeof(buf), NULL, big, NULL, 0, "x");
    rc = decode_meta(gz, 1, buf, len, 7, &s);
    is_int(rc, BOTTLE_CODING_EHEADER, "an FCOMMENT of %d bytes: EHEADER",
           BOTTLE_CODING_HEAD_MAX);
    free(s.buf);
    free(big);

    memset(extra, 'e', sizeof(extra));
    len = gzip_member(buf, sizeof(buf), NULL, NULL, extra,
                      BOTTLE_CODING_HEAD_MAX + 1, "x");
    rc = decode_meta(gz, 1, buf, len, 0, &s);
    is_int(rc, BOTTLE_CODING_EHEADER, "an FEXTRA of %d bytes: EHEADER",
           BOTTLE_CODING_HEAD_MAX + 1);
    free(s.buf);

    len2 = gzip_member(buf, sizeof(buf), NULL, NULL, extra,
                       BOTTLE_CODING_HEAD_MAX, "x");
    rc = decode_meta(gz, 1, buf, len2, 0, &s);
    ok(rc == BOTTLE_CODING_OK && meta_s.len == BOTTLE_CODING_HEAD_MAX + 1,
       "an FEXTRA of %d bytes is shown whole", BOTTLE_CODING_HEAD_MAX);
    free(s.buf);

    /* the meta sink stops it */

    len = gzip_member(buf, sizeof(buf), "stop", NULL, NULL, 0, "x");
    free(meta_s.buf);
    memset(&meta_s, 0, sizeof(sink_t));
    {
        bottle_decoder_t  *d;

        bottle_decoder_create(&d, gz, 1, 100, &counted, sink, &s);
        bottle_decoder_meta(d, meta_sink);
        meta_s.stop_after = 1;
        memset(&s, 0, sizeof(s));
        rc = bottle_decoder_feed(d, buf, len);
        is_int(rc, BOTTLE_CODING_ESINK, "the meta sink stops the decoder");
        bottle_decoder_destroy(d);
        free(s.buf);
    }

    /* without a meta sink the fields are skipped, as before */

    len = gzip_member(buf, sizeof(buf), "skipped", NULL, NULL, 0, "body");
    rc = decode(gz, 1, buf, len, 0, 100, &s);
    ok(rc == BOTTLE_CODING_OK && s.len == 4, "no meta sink: decoded alone");
    free(s.buf);

    /* br: metadata blocks cannot be shown */

    rc = decode_meta(gzbr, 2, buf, len, 0, &s);
    is_int(rc, BOTTLE_CODING_EOPAQUE, "a br stage: EOPAQUE");
    free(s.buf);
    free(meta_s.buf);
    memset(&meta_s, 0, sizeof(sink_t));
    free(fixed_s.buf);
    memset(&fixed_s, 0, sizeof(sink_t));
}


int
main(void)
{
    test_parse();
    test_roundtrip();
    test_forms();
    test_meta();

    is_int(allocs, frees, "every allocation freed (%ld)", allocs);

    return done_testing();
}
