/*
 * Request-target checks and query credential names; see bottle_uri.h.
 *
 * The path goes upstream as the agent sent it and allow entries match
 * those bytes, so a path must not mean another one to the server: Tomcat,
 * Jetty and Spring drop ";..." from a segment, some stacks decode twice,
 * others trim whitespace or split on '\'.  Instead of guessing which server
 * is behind a route, every such reading is undone here and a "." or ".."
 * segment in any of them is refused.
 */

#include <string.h>

#include "bottle_uri.h"
#include "bottle_util.h"


/* longer than any credential name, so a longer name is none of them */
#define BOTTLE_QUERY_NAME_MAX  16


/* CREDENTIAL_QUERY_PARAMS of the spec (gateway.txt), lowercase */
static const char  *bottle_query_credentials[] = {
    "access_token",
    "token",
    "key",
    "api_key",
    "apikey",
    "private_token",
    NULL
};


static size_t bottle_uri_decode(unsigned char *b, size_t n, int *changed);
static size_t bottle_uri_fold(unsigned char *b, size_t n, int *changed);
static int bottle_uri_encoded(const unsigned char *b, size_t n);
static int bottle_uri_dot_segment(const unsigned char *b, size_t n);
static int bottle_query_next(const unsigned char **pp,
    const unsigned char *end);
static int bottle_query_closed(const unsigned char *p,
    const unsigned char *end);


int
bottle_uri_check_target(const unsigned char *p, size_t n)
{
    return (n && memchr(p, '#', n)) ? BOTTLE_URI_E_FRAGMENT : BOTTLE_URI_OK;
}


int
bottle_uri_check_path(const unsigned char *p, size_t n,
    unsigned char *scratch)
{
    int     round, changed, folded;
    size_t  len;

    if (n == 0) {
        return BOTTLE_URI_OK;
    }

    memcpy(scratch, p, n);
    len = n;

    for (round = 0; round < BOTTLE_URI_DECODE_ROUNDS; round++) {
        len = bottle_uri_decode(scratch, len, &changed);
        len = bottle_uri_fold(scratch, len, &folded);

        if (!changed && !folded) {
            break;
        }
    }

    if (bottle_uri_dot_segment(scratch, len)) {
        return BOTTLE_URI_E_DOT;
    }

    /* a server that decodes once more than we did reads another path */

    if (bottle_uri_encoded(scratch, len)) {
        return BOTTLE_URI_E_DEEP;
    }

    return BOTTLE_URI_OK;
}


const char *
bottle_uri_strerror(int rc)
{
    switch (rc) {
    case BOTTLE_URI_OK:
        return "ok";
    case BOTTLE_URI_E_FRAGMENT:
        return "a '#' in the request target";
    case BOTTLE_URI_E_DOT:
        return "a dot segment in the path";
    case BOTTLE_URI_E_DEEP:
        return "percent-encoding nested too deep in the path";
    default:
        return "unknown error";
    }
}


/* one round of percent-decoding in place; a '%' without two hex digits
 * stays as it is, as most servers leave it */

static size_t
bottle_uri_decode(unsigned char *b, size_t n, int *changed)
{
    int     hi, lo;
    size_t  i, o;

    *changed = 0;

    for (i = 0, o = 0; i < n; o++) {
        if (b[i] == '%' && n - i >= 3
            && (hi = bottle_hexval(b[i + 1])) >= 0
            && (lo = bottle_hexval(b[i + 2])) >= 0)
        {
            b[o] = (unsigned char) (hi << 4 | lo);
            i += 3;
            *changed = 1;
            continue;
        }

        b[o] = b[i++];
    }

    return o;
}


/*
 * Overlong UTF-8 for an ASCII byte (C0 AE is '.', E0 80 AF is '/'): old
 * Java and IIS decoders read them as the ASCII byte, so we do as well.
 */

static size_t
bottle_uri_fold(unsigned char *b, size_t n, int *changed)
{
    size_t  i, o;

    *changed = 0;

    for (i = 0, o = 0; i < n; o++) {
        if ((b[i] == 0xc0 || b[i] == 0xc1) && n - i >= 2
            && (b[i + 1] & 0xc0) == 0x80)
        {
            b[o] = (unsigned char) ((b[i] & 0x01) << 6 | (b[i + 1] & 0x3f));
            i += 2;
            *changed = 1;
            continue;
        }

        if (b[i] == 0xe0 && n - i >= 3 && (b[i + 1] & 0xe0) == 0x80
            && (b[i + 2] & 0xc0) == 0x80)
        {
            b[o] = (unsigned char) ((b[i + 1] & 0x01) << 6
                                    | (b[i + 2] & 0x3f));
            i += 3;
            *changed = 1;
            continue;
        }

        b[o] = b[i++];
    }

    return o;
}


static int
bottle_uri_encoded(const unsigned char *b, size_t n)
{
    size_t  i;

    for (i = 0; i + 2 < n; i++) {
        if (b[i] == '%' && bottle_hexval(b[i + 1]) >= 0
            && bottle_hexval(b[i + 2]) >= 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * Segments split on '/' and '\', each cut at ';' and trimmed.  Any run of
 * dots counts, not only "." and "..", also with spaces between them:
 * Windows drops trailing dots and spaces, and no name is made of them.
 */

static int
bottle_uri_dot_segment(const unsigned char *b, size_t n)
{
    size_t  s, e, l, r, i;

    for (s = 0; s <= n; s = e + 1) {
        for (e = s; e < n && b[e] != '/' && b[e] != '\\'; e++) {
            /* void */
        }

        for (r = s; r < e && b[r] != ';'; r++) {
            /* void */
        }

        for (l = s; l < r && (b[l] <= 0x20 || b[l] == 0x7f); l++) {
            /* void */
        }

        while (r > l && (b[r - 1] <= 0x20 || b[r - 1] == 0x7f)) {
            r--;
        }

        for (i = l; i < r && (b[i] == '.' || b[i] <= 0x20 || b[i] == 0x7f);
             i++)
        {
            /* void */
        }

        if (r > l && i == r) {
            return 1;
        }
    }

    return 0;
}


int
bottle_query_is_credential(const unsigned char *name, size_t n)
{
    int                   c, started, bracket;
    size_t                o, spaces, i;
    const unsigned char  *p, *end;
    unsigned char         buf[BOTTLE_QUERY_NAME_MAX];

    o = 0;
    spaces = 0;
    started = 0;
    bracket = 0;
    end = name + n;

    /* a NUL ends the name for frameworks that keep C strings */

    for (p = name; (c = bottle_query_next(&p, end)) > 0; /* void */) {

        if (c <= 0x20 || c == 0x7f) {
            /* leading ones dropped; inner ones are '_', trailing dropped */
            spaces += started;
            continue;
        }

        started = 1;

        if (c == '[' && !bracket) {
            bracket = 1;

            if (bottle_query_closed(p, end)) {
                break;
            }

            c = '_';

        } else if (c == '.') {
            c = '_';
        }

        for ( /* void */ ; spaces; spaces--) {
            if (o == sizeof(buf)) {
                return 0;
            }

            buf[o++] = '_';
        }

        if (o == sizeof(buf)) {
            return 0;
        }

        buf[o++] = (unsigned char) ((c >= 'A' && c <= 'Z') ? c | 0x20 : c);
    }

    for (i = 0; bottle_query_credentials[i]; i++) {
        if (strlen(bottle_query_credentials[i]) == o
            && memcmp(bottle_query_credentials[i], buf, o) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* the next byte of a name as a framework decodes it: '+', then %XX */

static int
bottle_query_next(const unsigned char **pp, const unsigned char *end)
{
    int                   hi, lo;
    const unsigned char  *p;

    p = *pp;

    if (p == end) {
        return -1;
    }

    if (*p == '+') {
        *pp = p + 1;
        return ' ';
    }

    if (*p == '%' && end - p >= 3
        && (hi = bottle_hexval(p[1])) >= 0
        && (lo = bottle_hexval(p[2])) >= 0)
    {
        *pp = p + 3;
        return hi << 4 | lo;
    }

    *pp = p + 1;

    return *p;
}


/* PHP reads "name[...]" as an array only when a ']' follows the '[' */

static int
bottle_query_closed(const unsigned char *p, const unsigned char *end)
{
    int  c;

    while ((c = bottle_query_next(&p, end)) > 0) {
        if (c == ']') {
            return 1;
        }
    }

    return 0;
}


size_t
bottle_query_strip(unsigned char *out, const unsigned char *q, size_t n,
    size_t *stripped)
{
    int                   first;
    size_t                dropped;
    unsigned char        *o, sep;
    const unsigned char  *p, *e, *eq, *end;

    if (n == 0) {
        if (stripped) {
            *stripped = 0;
        }

        return 0;
    }

    o = out;
    sep = '&';
    first = 1;
    dropped = 0;
    end = q + n;

    for (p = q; /* void */ ; p = e + 1) {
        for (e = p; e < end && *e != '&' && *e != ';'; e++) {
            /* void */
        }

        for (eq = p; eq < e && *eq != '='; eq++) {
            /* void */
        }

        if (bottle_query_is_credential(p, eq - p)) {
            dropped++;

        } else {
            if (!first) {
                *o++ = sep;
            }

            if (e > p) {
                memcpy(o, p, e - p);
                o += e - p;
            }

            first = 0;
        }

        if (e == end) {
            break;
        }

        sep = *e;
    }

    if (stripped) {
        *stripped = dropped;
    }

    return o - out;
}
