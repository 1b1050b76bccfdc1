/*
 * libFuzzer target for git-gate's decoded views (gitgate-helper/
 * gg_decode.c): the coding found at a blob's start (gg_dec_coding()), its
 * stream decoded within a cap (gg_dec_stream(), lib/bottle_coding.c), and
 * the four UTF-16 views (gg_u16_view()).  Beyond "no crash, no sanitizer
 * report": a decode never goes over its cap and says why it failed; each
 * UTF-16 view fits the bound its callers size for ((n / 2) * 3 bytes), is
 * valid UTF-8, and decodes back to the input's code units (a BOM first
 * dropped, a lone surrogate U+FFFD, a pair one character).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scan_int.h"
#include "fuzz.h"


/* the next UTF-8 character of p[*i, n): its code point, or -1 if invalid */
static long
utf8_next(const unsigned char *p, size_t n, size_t *i)
{
    size_t    k, len;
    uint32_t  u;

    if (p[*i] < 0x80) {
        return p[(*i)++];
    }
    if ((p[*i] & 0xe0) == 0xc0) {
        len = 2;
        u = p[*i] & 0x1f;
    } else if ((p[*i] & 0xf0) == 0xe0) {
        len = 3;
        u = p[*i] & 0x0f;
    } else if ((p[*i] & 0xf8) == 0xf0) {
        len = 4;
        u = p[*i] & 0x07;
    } else {
        return -1;
    }
    if (*i + len > n) {
        return -1;
    }
    for (k = 1; k < len; k++) {
        if ((p[*i + k] & 0xc0) != 0x80) {
            return -1;
        }
        u = (u << 6) | (p[*i + k] & 0x3f);
    }
    /* shortest form, no surrogate, in range */
    if ((len == 2 && u < 0x80) || (len == 3 && u < 0x800)
        || (len == 4 && (u < 0x10000 || u > 0x10ffff))
        || (u >= 0xd800 && u <= 0xdfff))
    {
        return -1;
    }
    *i += len;
    return (long) u;
}


static void
check_u16(const unsigned char *p, size_t n, int be, size_t start)
{
    char           *out;
    size_t          len, i, j;
    long            u;
    uint32_t        a, b, want;

    out = malloc(n / 2 * 3 + 1);
    CHECK(out != NULL);
    len = gg_u16_view(out, p, n, be, start);
    CHECK(len <= n / 2 * 3);

    j = start;
    if (j + 1 < n && (be ? (p[j] == 0xfe && p[j + 1] == 0xff)
                         : (p[j] == 0xff && p[j + 1] == 0xfe)))
    {
        j += 2;
    }

    i = 0;
    while (i < len) {
        u = utf8_next((const unsigned char *) out, len, &i);
        CHECK(u >= 0);
        CHECK(j + 1 < n);
        a = be ? ((uint32_t) p[j] << 8) | p[j + 1]
               : ((uint32_t) p[j + 1] << 8) | p[j];
        j += 2;
        want = a;
        if (a >= 0xd800 && a <= 0xdbff && j + 1 < n) {
            b = be ? ((uint32_t) p[j] << 8) | p[j + 1]
                   : ((uint32_t) p[j + 1] << 8) | p[j];
            if (b >= 0xdc00 && b <= 0xdfff) {
                want = 0x10000 + ((a - 0xd800) << 10) + (b - 0xdc00);
                j += 2;
            }
        }
        if (want >= 0xd800 && want <= 0xdfff) {
            want = 0xfffd;
        }
        CHECK((uint32_t) u == want);
    }
    /* every code unit is in the view */
    CHECK(j + 1 >= n);

    free(out);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int        rc, coding;
    char       why[256];
    size_t     k;
    uint64_t   limit;
    gg_buf_t   out, meta;

    coding = gg_dec_coding(data, size);
    CHECK(coding == 0 || coding == GG_DEC_GZIP || coding == GG_DEC_ZLIB);

    /* the coding found, else each in turn on the same bytes */
    for (k = 0; k < 2; k++) {
        if (coding != 0 && k > 0) {
            break;
        }
        memset(&out, 0, sizeof(out));
        memset(&meta, 0, sizeof(meta));
        limit = size * 100 < (1 << 20) ? size * 100 : (1 << 20);
        why[0] = '\0';
        rc = gg_dec_stream(NULL, &out, &meta, data, size,
                           coding ? coding
                                  : (k == 0 ? GG_DEC_GZIP : GG_DEC_ZLIB),
                           limit, why, sizeof(why));
        CHECK(rc == 0 || rc == -1 || rc == -4 || rc == -3);
        CHECK(out.len <= limit);
        CHECK(meta.len <= limit + 1);
        CHECK(rc == 0 || why[0] != '\0');
        free(out.data);
        free(meta.data);
    }

    for (k = 0; k < 4; k++) {
        check_u16(data, size, (int) (k & 1), k >> 1);
    }

    return 0;
}
