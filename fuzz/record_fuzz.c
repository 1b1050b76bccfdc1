/*
 * libFuzzer target for the request records (bottle_record.c): the agent's
 * bytes as a header value, a path and a body, and a secret, through the
 * scrubbing and both JSON forms.  See docs/fuzzing.md.  Beyond "no crash,
 * no sanitizer report" it checks: scrubbing keeps the length and leaves no
 * whole secret behind, the full log's line and the OCSF record are one
 * line of valid JSON each, and a printable secret of 8 bytes or more is
 * in neither (but in a base64 body, which may spell anything), and the
 * OCSF record appended to a batch is the same bytes.  A
 * secret with a '*', the mask, is not tried: masks may spell it.
 *
 * Input: a first byte n (the secret's length, 1 to 32), n bytes of secret,
 * then the rest, split in three at its first two NUL bytes.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_record.h"
#include "fuzz.h"


static const char *
find(const char *h, size_t hlen, const char *n, size_t nlen)
{
    size_t  i;

    for (i = 0; nlen && i + nlen <= hlen; i++) {
        if (memcmp(h + i, n, nlen) == 0) {
            return h + i;
        }
    }

    return NULL;
}


static void
check_json(char *s, size_t len, const char *secret, size_t slen)
{
    json_t        *j;
    json_error_t   e;

    CHECK(memchr(s, '\n', len) == NULL);
    j = json_loadb(s, len, JSON_ALLOW_NUL, &e);
    CHECK(j != NULL);
    free(s);

    /* base64 may spell anything: without it, and JSON escapes could hide
       a secret but never a printable one */

    json_object_del(j, "body_base64");
    json_object_del(json_object_get(j, "unmapped"), "body_base64");
    s = json_dumps(j, JSON_COMPACT | JSON_ALLOW_NUL);
    CHECK(s != NULL);
    CHECK(slen < 8 || find(s, strlen(s), secret, slen) == NULL);
    json_decref(j);
    free(s);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                      printable;
    char                    *out, *secret;
    size_t                   n, i, len, part[3], off[3];
    bottle_record_batch_t    batch;
    uint8_t                 *copy;
    const uint8_t           *p, *nul;
    bottle_t                 b;
    bottle_route_t           route;
    bottle_record_t          rec;
    bottle_record_header_t   h;

    if (size < 2) {
        return 0;
    }

    n = 1 + data[0] % 32;
    if (size < 1 + n) {
        return 0;
    }

    /* the mask is '*': a secret with one may be spelled by masks */

    if (memchr(data + 1, '*', n) != NULL) {
        return 0;
    }

    secret = malloc(n);
    CHECK(secret != NULL);
    memcpy(secret, data + 1, n);

    printable = 1;
    for (i = 0; i < n; i++) {
        if (secret[i] < 0x21 || secret[i] > 0x7e || secret[i] == '\\'
            || secret[i] == '"')
        {
            printable = 0;
        }
    }

    p = data + 1 + n;
    len = size - 1 - n;

    for (i = 0; i < 3; i++) {
        off[i] = p - (data + 1 + n);
        nul = (i < 2) ? memchr(p, 0, len - off[i]) : NULL;
        part[i] = nul ? (size_t) (nul - p) : len - off[i];
        p += part[i] + (nul != NULL);
        if (nul == NULL) {
            for (i++; i < 3; i++) {
                off[i] = len;
                part[i] = 0;
            }
            break;
        }
    }

    p = data + 1 + n;

    memset(&b, 0, sizeof(b));
    memset(&route, 0, sizeof(route));
    b.id.data = "fuzz";
    b.id.len = 4;
    b.canary.data = secret;
    b.canary.len = n;

    /* the scrub itself */

    copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    memcpy(copy, p, len);
    bottle_record_scrub(&b, copy, len, 1);
    CHECK(find((char *) copy, len, secret, n) == NULL);

    /* nor its hex (values of 4 bytes or more), one of the encoded forms */
    if (n >= 4 && n <= 64) {
        char  hex[129];

        for (i = 0; i < n; i++) {
            hex[2 * i] = "0123456789abcdef"[(unsigned char) secret[i] >> 4];
            hex[2 * i + 1] = "0123456789abcdef"[(unsigned char) secret[i] & 15];
        }

        CHECK(find((char *) copy, len, hex, 2 * n) == NULL);
    }

    free(copy);

    memset(&rec, 0, sizeof(rec));
    h.name = (const char *) p + off[0];
    h.name_len = part[0] > 8 ? 8 : part[0];
    h.value = (const char *) p + off[0];
    h.value_len = part[0];

    rec.bottle = &b;
    rec.route = &route;
    rec.method.data = "POST";
    rec.method.len = 4;
    rec.host.data = "h.test";
    rec.host.len = 6;
    rec.path.data = (const char *) p + off[1];
    rec.path.len = part[1];
    rec.dst_addr.data = "[::1]:443";
    rec.dst_addr.len = 9;
    rec.headers = &h;
    rec.nheaders = 1;
    rec.body.data = p + off[2];
    rec.body.len = part[2];
    rec.body.size = part[2] + (data[0] & 1);
    rec.body.seen = 1;

    CHECK(bottle_record_full(&out, &len, &rec, 0) == 0);
    check_json(out, len, secret, printable ? n : 0);
    CHECK(bottle_record_ocsf(&out, &len, &rec, 0) == 0);

    /* in a batch: the same bytes, after the room left before them */
    memset(&batch, 0, sizeof(bottle_record_batch_t));
    batch.len = 64;
    batch.buf = calloc(1, 64);
    batch.cap = 64;
    CHECK(batch.buf != NULL);
    CHECK(bottle_record_ocsf_append(&batch, &rec, 0, 2) == 0);
    CHECK(batch.len == 64 + len && memcmp(batch.buf + 64, out, len) == 0);
    CHECK(batch.cap >= batch.len + 2);
    free(batch.buf);

    check_json(out, len, secret, printable ? n : 0);
    CHECK(bottle_record_ocsf(&out, &len, &rec, 1) == 0);
    check_json(out, len, secret, printable ? n : 0);

    free(secret);

    return 0;
}
