/*
 * libFuzzer target for the Cookie header filter and the Set-Cookie reader
 * (lib/bottle_cookie.c).  See docs/fuzzing.md.
 *
 * The input's first byte picks the callback (keep every pair, none, those
 * whose value's length is odd, or those whose name starts with a byte of
 * the input's second byte's low nibble) and how the rest is split into
 * Cookie headers (one, or at each NUL, as HTTP/1.1's several headers).
 * Beyond "no crash, no sanitizer report" it checks the contract the jar
 * relies on:
 *   - the output never exceeds bottle_cookie_filter_bound() of the input's
 *     length, and with that cap never fails;
 *   - every output pair is a kept pair of the input, as the callback saw
 *     it; no name is written twice, and each is its first kept pair;
 *   - with a cap one byte short of the output, it fails and writes nothing
 *     past the cap; the headers are read from exact-size copies, so ASan
 *     sees any read past them.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_cookie.h"
#include "fuzz.h"


#define MAX_IN     64
#define MAX_KEPT   4096


typedef struct {
    unsigned              mode;
    unsigned char         first;
    size_t                nkept;
    bottle_cookie_str_t   name[MAX_KEPT];   /* the kept pairs, in order */
    bottle_cookie_str_t   value[MAX_KEPT];
} fuzz_keep_t;


static int
is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}


static int
keep(void *data, const unsigned char *name, size_t name_len,
    const unsigned char *value, size_t value_len)
{
    int           k;
    size_t        i;
    fuzz_keep_t  *f = data;

    /* what the header promises the callback */
    CHECK(name_len > 0);
    CHECK(memchr(name, ';', name_len) == NULL);
    CHECK(memchr(name, '=', name_len) == NULL);
    CHECK(!is_ows(name[0]) && !is_ows(name[name_len - 1]));
    CHECK(value_len == 0 || memchr(value, ';', value_len) == NULL);
    CHECK(value_len == 0
          || (!is_ows(value[0]) && !is_ows(value[value_len - 1])));

    /* never asked about a name already kept */
    for (i = 0; i < f->nkept; i++) {
        CHECK(f->name[i].len != name_len
              || memcmp(f->name[i].data, name, name_len) != 0);
    }

    switch (f->mode) {
    case 0:  k = 1; break;
    case 1:  k = 0; break;
    case 2:  k = value_len & 1; break;
    default: k = (name[0] & 0x0f) == (f->first & 0x0f); break;
    }

    if (k && f->nkept < MAX_KEPT) {
        f->name[f->nkept].data = name;
        f->name[f->nkept].len = name_len;
        f->value[f->nkept].data = value;
        f->value[f->nkept].len = value_len;
        f->nkept++;
    }

    return k;
}


/* out[0..len) is exactly the kept pairs, in order, "; " between them */

static void
check_output(const unsigned char *out, size_t len, const fuzz_keep_t *f)
{
    size_t  i, o;

    o = 0;

    for (i = 0; i < f->nkept; i++) {
        if (i) {
            CHECK(o + 2 <= len && out[o] == ';' && out[o + 1] == ' ');
            o += 2;
        }

        CHECK(o + f->name[i].len + 1 + f->value[i].len <= len);
        CHECK(memcmp(out + o, f->name[i].data, f->name[i].len) == 0);
        o += f->name[i].len;
        CHECK(out[o++] == '=');
        if (f->value[i].len) {
            CHECK(memcmp(out + o, f->value[i].data, f->value[i].len) == 0);
        }
        o += f->value[i].len;
    }

    CHECK(o == len);
}


static void
run_filter(const uint8_t *data, size_t size, unsigned mode,
    unsigned char first, int split)
{
    size_t                n, i, start, bound;
    ssize_t               rc, rc2;
    unsigned char        *out, *copies[MAX_IN];
    bottle_cookie_str_t   in[MAX_IN];
    static fuzz_keep_t    f;

    /* the headers, each in an exact-size copy */

    n = 0;
    start = 0;

    for (i = 0; i <= size && n < MAX_IN; i++) {
        if (i < size && (!split || data[i] != '\0')) {
            continue;
        }

        in[n].len = i - start;
        copies[n] = malloc(in[n].len ? in[n].len : 1);
        CHECK(copies[n] != NULL);
        if (in[n].len) {
            memcpy(copies[n], data + start, in[n].len);
        }
        in[n].data = copies[n];
        n++;
        start = i + 1;
    }

    bound = bottle_cookie_filter_bound(size);
    CHECK(bound >= size);

    out = malloc(bound ? bound : 1);
    CHECK(out != NULL);

    memset(&f, 0, sizeof(f));
    f.mode = mode;
    f.first = first;

    rc = bottle_cookie_filter(out, bound, in, n, keep, &f);
    CHECK(rc >= 0);
    CHECK((size_t) rc <= bound);

    if (f.nkept < MAX_KEPT) {
        check_output(out, (size_t) rc, &f);
    }

    /* one byte short: an error, and nothing written past the cap */

    if (rc > 0) {
        unsigned char  *tight;

        tight = malloc((size_t) rc - 1 ? (size_t) rc - 1 : 1);
        CHECK(tight != NULL);

        memset(&f, 0, sizeof(f));
        f.mode = mode;
        f.first = first;

        rc2 = bottle_cookie_filter(tight, (size_t) rc - 1, in, n, keep, &f);
        CHECK(rc2 == BOTTLE_COOKIE_E_SPACE);
        free(tight);
    }

    free(out);

    for (i = 0; i < n; i++) {
        free(copies[i]);
    }
}


static void
run_set_cookie(const uint8_t *data, size_t size)
{
    unsigned char        *copy;
    bottle_cookie_set_t   c;

    copy = malloc(size ? size : 1);
    CHECK(copy != NULL);
    if (size) {
        memcpy(copy, data, size);
    }

    if (bottle_cookie_set_parse(&c, copy, size) == 0) {
        CHECK(c.name.len > 0);
        CHECK(c.name.data >= copy && c.name.data + c.name.len <= copy + size);
        CHECK(c.value.len == 0 || (c.value.data >= copy
                                   && c.value.data + c.value.len
                                      <= copy + size));
        CHECK(c.expires.len == 0 || (c.expires.data >= copy
                                     && c.expires.data + c.expires.len
                                        <= copy + size));
        CHECK(!c.has_max_age || (c.max_age <= BOTTLE_COOKIE_MAX_AGE
                                 && c.max_age >= -BOTTLE_COOKIE_MAX_AGE));
    }

    free(copy);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char  sel, first;

    if (size == 0) {
        return 0;
    }

    sel = data[0];
    first = size > 1 ? data[1] : 0;
    data++;
    size--;

    run_filter(data, size, sel & 3, first, (sel >> 2) & 1);
    run_set_cookie(data, size);

    return 0;
}
