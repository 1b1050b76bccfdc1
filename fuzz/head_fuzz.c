/*
 * libFuzzer target for the proxy request-head parser (bottle_head.c).
 * See docs/fuzzing.md.  Beyond "no crash, no sanitizer report" it checks
 * the contract the front relies on: results point inside the parsed head,
 * bytes after the head are never read, every prefix of a complete head is
 * incomplete, and Basic credentials round-trip.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_head.h"
#include "fuzz.h"


static void
check_str(bottle_head_str_t s, const uint8_t *data, size_t head_len)
{
    if (s.len == 0) {
        return;
    }

    CHECK(s.data >= data);
    CHECK(s.len <= head_len);
    CHECK((size_t) (s.data - data) <= head_len - s.len);
}


static void
check_password(const bottle_head_str_t *v)
{
    ssize_t        n, m;
    unsigned char  out[64], *copy;

    n = bottle_head_basic_password(out, sizeof(out), v->data, v->len);
    CHECK(n >= -1 && n <= (ssize_t) sizeof(out));

    /* an exact-size copy so ASan sees any read past the value */
    copy = malloc(v->len + 1);
    CHECK(copy != NULL);
    memcpy(copy, v->data, v->len);
    m = bottle_head_basic_password(NULL, 0, copy, v->len);
    CHECK(m == -1 || m == 0);
    CHECK((n == 0) == (m == 0));
    free(copy);
}


static void
check_ok(const bottle_head_t *h, const uint8_t *data, size_t size,
    const bottle_head_limits_t *lim)
{
    size_t          len;
    uint8_t        *copy;
    bottle_head_t   h2;

    len = h->head_len;

    CHECK(len <= size);
    CHECK(len <= lim->max_head);
    CHECK(len >= 4 && memcmp(data + len - 4, "\r\n\r\n", 4) == 0);
    CHECK(h->nheaders <= lim->max_headers);
    CHECK(h->form >= BOTTLE_HEAD_FORM_AUTHORITY
          && h->form <= BOTTLE_HEAD_FORM_ORIGIN);
    CHECK((h->form == BOTTLE_HEAD_FORM_AUTHORITY) == h->is_connect);
    CHECK(h->port <= 65535);
    CHECK(h->http_minor == 0 || h->http_minor == 1);
    CHECK(h->method.len > 0 && h->target.len > 0);
    CHECK(h->form == BOTTLE_HEAD_FORM_ORIGIN || h->host.len > 0);
    CHECK(h->form != BOTTLE_HEAD_FORM_AUTHORITY || h->port > 0);

    check_str(h->method, data, len);
    check_str(h->target, data, len);
    check_str(h->scheme, data, len);
    check_str(h->host, data, len);
    check_str(h->path, data, len);
    check_str(h->proxy_authorization, data, len);
    check_str(h->host_header, data, len);

    /* the head alone, in an exact-size buffer: same result, and nothing
     * past head_len may be read (ASan would report it) */
    copy = malloc(len);
    CHECK(copy != NULL);
    memcpy(copy, data, len);
    CHECK(bottle_head_parse(&h2, copy, len, lim) == BOTTLE_HEAD_OK);
    CHECK(h2.head_len == len);
    CHECK(h2.nheaders == h->nheaders);
    CHECK(h2.port == h->port && h2.form == h->form);

    /* any prefix is just incomplete */
    CHECK(bottle_head_parse(&h2, copy, len - 1, lim) == BOTTLE_HEAD_AGAIN);
    CHECK(bottle_head_parse(&h2, copy, len / 2, lim) == BOTTLE_HEAD_AGAIN);
    free(copy);

    if (h->proxy_authorization.len > 0) {
        check_password(&h->proxy_authorization);
    }
}


static int
run(const uint8_t *data, size_t size, const bottle_head_limits_t *lim)
{
    int             rc;
    bottle_head_t   h;

    rc = bottle_head_parse(&h, data, size, lim);

    CHECK(rc == BOTTLE_HEAD_OK || rc == BOTTLE_HEAD_AGAIN
          || (rc < 0 && rc >= BOTTLE_HEAD_E_MIN));
    CHECK(strcmp(bottle_head_strerror(rc), "unknown error") != 0);

    if (rc == BOTTLE_HEAD_AGAIN) {
        CHECK(size < lim->max_head);
    }

    if (rc == BOTTLE_HEAD_OK) {
        check_ok(&h, data, size, lim);
    }

    return rc;
}


/* base64-encode "<data>:<data>" and decode it back */

static void
roundtrip(const uint8_t *data, size_t size)
{
    static const char  b64[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t          i, n, o, half;
    ssize_t         got;
    uint32_t        v;
    unsigned char   raw[130], enc[6 + 176], out[130];

    half = size < 64 ? size : 64;
    n = 0;
    memcpy(raw, data, half);
    n += half;
    raw[n++] = ':';
    memcpy(raw + n, data, half);
    n += half;

    memcpy(enc, "Basic ", 6);
    o = 6;

    for (i = 0; i < n; i += 3) {
        v = (uint32_t) raw[i] << 16;
        v |= i + 1 < n ? (uint32_t) raw[i + 1] << 8 : 0;
        v |= i + 2 < n ? (uint32_t) raw[i + 2] : 0;
        enc[o++] = b64[(v >> 18) & 63];
        enc[o++] = b64[(v >> 12) & 63];
        enc[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        enc[o++] = i + 2 < n ? b64[v & 63] : '=';
    }

    got = bottle_head_basic_password(out, sizeof(out), enc, o);

    /* the password is after the first ':', which may be inside data */
    for (i = 0; raw[i] != ':'; i++) {
        /* void */
    }

    CHECK(got == (ssize_t) (n - i - 1));
    CHECK(memcmp(out, raw + i + 1, (size_t) got) == 0);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                   rc;
    bottle_head_t         h;
    bottle_head_limits_t  lim;

    bottle_head_limits_default(&lim);
    rc = run(data, size, &lim);

    /* NULL limits are the defaults */
    CHECK(bottle_head_parse(&h, data, size, NULL) == rc);

    lim.max_head = 64;
    lim.max_line = 32;
    lim.max_headers = 3;
    run(data, size, &lim);

    lim.max_head = 24;
    lim.max_line = 8;
    lim.max_headers = 0;
    run(data, size, &lim);

    /* the raw input as a header value */
    {
        bottle_head_str_t  v;

        v.data = data;
        v.len = size;
        check_password(&v);
    }

    roundtrip(data, size);

    return 0;
}
