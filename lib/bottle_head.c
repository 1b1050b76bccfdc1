/*
 * Strict HTTP/1.x proxy request-head parser; see bottle_head.h.
 *
 * One forward pass: each line is delimited once (bottle_head_find_eol) and
 * then validated once, so a complete head costs O(length).  The caller
 * re-runs the parse on the grown buffer as bytes arrive; that is bounded by
 * max_head.
 */

#include <string.h>

#include "bottle_head.h"


/* which of the fields that must not repeat have been seen */
#define BOTTLE_HEAD_SEEN_HOST   0x01
#define BOTTLE_HEAD_SEEN_PAUTH  0x02


static int bottle_head_find_eol(const unsigned char *buf, size_t start,
    size_t end, size_t max_line, size_t *eol);
static int bottle_head_request_line(bottle_head_t *h,
    const unsigned char *line, size_t n);
static int bottle_head_target(bottle_head_t *h);
static size_t bottle_head_scheme_len(const unsigned char *t, size_t n);
static int bottle_head_authority(bottle_head_t *h, const unsigned char *s,
    size_t n, size_t *used);
static int bottle_head_port(bottle_head_t *h, const unsigned char *s,
    size_t n, size_t *used);
static int bottle_head_path_ok(const unsigned char *p, size_t n);
static int bottle_head_header(bottle_head_t *h, unsigned *seen,
    const unsigned char *line, size_t n);
static int bottle_head_content_length(bottle_head_t *h,
    const unsigned char *v, size_t n);
static int bottle_head_name_is(const unsigned char *name, size_t n,
    const char *lower);
static int bottle_head_b64(unsigned char c);
static int bottle_head_b64_quad(const unsigned char *q, int last,
    unsigned char *b);


void
bottle_head_limits_default(bottle_head_limits_t *lim)
{
    lim->max_head = 8192;
    lim->max_line = 4096;
    lim->max_headers = 64;
}


static int
bottle_head_is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9'))
    {
        return 1;
    }

    /* strchr() would also match the terminating NUL */
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}


static int
bottle_head_is_regname(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}


static int
bottle_head_is_ipv6(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
           || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}


static int
bottle_head_is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}


int
bottle_head_parse(bottle_head_t *out, const unsigned char *buf, size_t len,
    const bottle_head_limits_t *lim)
{
    int                    rc, have_request_line;
    size_t                 pos, end, eol, empty;
    unsigned               seen;
    bottle_head_limits_t   def;

    memset(out, 0, sizeof(bottle_head_t));

    if (lim == NULL) {
        bottle_head_limits_default(&def);
        lim = &def;
    }

    /* a head that has not ended within max_head bytes never will */
    end = len < lim->max_head ? len : lim->max_head;

    pos = 0;
    eol = 0;
    empty = 0;
    seen = 0;
    have_request_line = 0;

    for ( ;; ) {
        rc = bottle_head_find_eol(buf, pos, end, lim->max_line, &eol);

        if (rc == BOTTLE_HEAD_AGAIN) {
            return len >= lim->max_head ? BOTTLE_HEAD_E_HEAD_TOO_LARGE
                                        : BOTTLE_HEAD_AGAIN;
        }

        if (rc == BOTTLE_HEAD_E_LINE_TOO_LONG && have_request_line) {
            return BOTTLE_HEAD_E_HEADER_TOO_LONG;
        }

        if (rc != BOTTLE_HEAD_OK) {
            return rc;
        }

        if (!have_request_line) {
            if (eol == pos) {
                /* RFC 9112 2.2: ignore a few CRLFs left by a previous
                 * request, but not an unbounded stream of them */
                if (++empty > BOTTLE_HEAD_MAX_EMPTY_LINES) {
                    return BOTTLE_HEAD_E_REQUEST_LINE;
                }

            } else {
                rc = bottle_head_request_line(out, buf + pos, eol - pos);
                if (rc != BOTTLE_HEAD_OK) {
                    return rc;
                }

                have_request_line = 1;
            }

        } else if (eol == pos) {
            out->head_len = eol + 2;
            return BOTTLE_HEAD_OK;

        } else {
            if (++out->nheaders > lim->max_headers) {
                return BOTTLE_HEAD_E_TOO_MANY_HEADERS;
            }

            rc = bottle_head_header(out, &seen, buf + pos, eol - pos);
            if (rc != BOTTLE_HEAD_OK) {
                return rc;
            }
        }

        pos = eol + 2;
    }
}


/*
 * Finds the CRLF ending the line that starts at buf[start], looking no
 * further than buf[end - 1].  Any CR not followed by LF and any LF not
 * preceded by CR is refused: a peer that splits lines differently from us
 * is how request smuggling starts.  The length limit is checked as bytes
 * are scanned, so an over-long line is refused before it is complete.
 */

static int
bottle_head_find_eol(const unsigned char *buf, size_t start, size_t end,
    size_t max_line, size_t *eol)
{
    size_t         i;
    unsigned char  c;

    for (i = start; i < end; i++) {
        c = buf[i];

        if (c == '\r') {
            if (i + 1 == end) {
                /* the LF may still be on its way */
                return BOTTLE_HEAD_AGAIN;
            }

            if (buf[i + 1] != '\n') {
                return BOTTLE_HEAD_E_BARE_CR_LF;
            }

            *eol = i;
            return BOTTLE_HEAD_OK;
        }

        if (c == '\n') {
            return BOTTLE_HEAD_E_BARE_CR_LF;
        }

        if (c == '\0') {
            return BOTTLE_HEAD_E_NUL;
        }

        if (i - start >= max_line) {
            return BOTTLE_HEAD_E_LINE_TOO_LONG;
        }
    }

    return BOTTLE_HEAD_AGAIN;
}


/* method SP request-target SP HTTP-version, exactly one SP each */

static int
bottle_head_request_line(bottle_head_t *h, const unsigned char *line,
    size_t n)
{
    size_t                i, t;
    const unsigned char  *v;

    for (i = 0; i < n && bottle_head_is_tchar(line[i]); i++) {
        /* void */
    }

    if (i == 0 || i == n || line[i] != ' ') {
        return BOTTLE_HEAD_E_REQUEST_LINE;
    }

    h->method.data = line;
    h->method.len = i;
    h->is_connect = (i == 7 && memcmp(line, "CONNECT", 7) == 0);

    t = i + 1;

    for (i = t; i < n && line[i] != ' '; i++) {
        /* void */
    }

    if (i == t || i == n) {
        return BOTTLE_HEAD_E_REQUEST_LINE;
    }

    h->target.data = line + t;
    h->target.len = i - t;

    /* the version is all that is left; this also refuses a second SP */
    v = line + i + 1;

    if (n - (i + 1) != 8 || memcmp(v, "HTTP/1.", 7) != 0
        || (v[7] != '0' && v[7] != '1'))
    {
        return BOTTLE_HEAD_E_REQUEST_LINE;
    }

    h->http_minor = v[7] - '0';

    return bottle_head_target(h);
}


static int
bottle_head_target(bottle_head_t *h)
{
    int                   rc;
    size_t                n, s, used;
    const unsigned char  *t;

    t = h->target.data;
    n = h->target.len;

    if (t[0] == '/') {
        if (h->is_connect) {
            return BOTTLE_HEAD_E_CONNECT_FORM;
        }

        h->form = BOTTLE_HEAD_FORM_ORIGIN;
        h->path = h->target;

        return bottle_head_path_ok(t, n) ? BOTTLE_HEAD_OK
                                         : BOTTLE_HEAD_E_TARGET;
    }

    s = bottle_head_scheme_len(t, n);

    if (s != 0) {
        if (h->is_connect) {
            return BOTTLE_HEAD_E_CONNECT_FORM;
        }

        h->form = BOTTLE_HEAD_FORM_ABSOLUTE;
        h->scheme.data = t;
        h->scheme.len = s;

        s += sizeof("://") - 1;

        rc = bottle_head_authority(h, t + s, n - s, &used);
        if (rc != BOTTLE_HEAD_OK) {
            return rc;
        }

        s += used;

        /* this also refuses userinfo ("http://user@host/"): '@' ends the
         * host, and "http://h#frag" */
        if (s < n && t[s] != '/' && t[s] != '?') {
            return BOTTLE_HEAD_E_TARGET;
        }

        h->path.data = t + s;
        h->path.len = n - s;

        return bottle_head_path_ok(t + s, n - s) ? BOTTLE_HEAD_OK
                                                 : BOTTLE_HEAD_E_TARGET;
    }

    if (t[0] == '*') {
        /* asterisk-form, "OPTIONS *": nothing a proxy client needs */
        return h->is_connect ? BOTTLE_HEAD_E_CONNECT_FORM
                             : BOTTLE_HEAD_E_TARGET;
    }

    rc = bottle_head_authority(h, t, n, &used);

    if (rc != BOTTLE_HEAD_OK || used != n || h->port == 0) {
        return BOTTLE_HEAD_E_TARGET;
    }

    if (!h->is_connect) {
        return BOTTLE_HEAD_E_AUTHORITY_FORM;
    }

    h->form = BOTTLE_HEAD_FORM_AUTHORITY;

    return BOTTLE_HEAD_OK;
}


/*
 * The length of the scheme when t starts with scheme "://", else 0.
 * scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 3.1).
 */

static size_t
bottle_head_scheme_len(const unsigned char *t, size_t n)
{
    size_t         i;
    unsigned char  c;

    if (!((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z'))) {
        return 0;
    }

    for (i = 1; i < n; i++) {
        c = t[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
        {
            break;
        }
    }

    if (n - i < 3 || memcmp(t + i, "://", 3) != 0) {
        return 0;
    }

    return i;
}


/*
 * host [ ":" port ] at the start of s; *used is how many bytes it took.
 * Only a reg-name of [A-Za-z0-9._-] or a bracketed IPv6 literal: no
 * percent-encoding, no userinfo, no zone id, nothing a resolver or the
 * policy could read as a different host than we do.
 */

static int
bottle_head_authority(bottle_head_t *h, const unsigned char *s, size_t n,
    size_t *used)
{
    size_t  i, colons;

    if (n > 0 && s[0] == '[') {
        colons = 0;

        for (i = 1; i < n && bottle_head_is_ipv6(s[i]); i++) {
            colons += (s[i] == ':');
        }

        /* every IPv6 literal has at least two colons ("::") */
        if (i == n || s[i] != ']' || i - 1 > BOTTLE_HEAD_IPV6_MAX
            || colons < 2)
        {
            return BOTTLE_HEAD_E_TARGET;
        }

        h->host.data = s + 1;
        h->host.len = i - 1;
        h->host_ipv6 = 1;
        i++;

    } else {
        for (i = 0; i < n && bottle_head_is_regname(s[i]); i++) {
            /* void */
        }

        if (i == 0) {
            return BOTTLE_HEAD_E_TARGET;
        }

        h->host.data = s;
        h->host.len = i;
    }

    if (i < n && s[i] == ':') {
        i++;

        if (bottle_head_port(h, s + i, n - i, used) != BOTTLE_HEAD_OK) {
            return BOTTLE_HEAD_E_TARGET;
        }

        i += *used;
    }

    *used = i;

    return BOTTLE_HEAD_OK;
}


/* 1 to 5 digits, 1..65535; an empty port ("host:") is refused */

static int
bottle_head_port(bottle_head_t *h, const unsigned char *s, size_t n,
    size_t *used)
{
    size_t    i;
    unsigned  port;

    port = 0;

    for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (i == 5) {
            return BOTTLE_HEAD_E_TARGET;
        }

        port = port * 10 + (s[i] - '0');
    }

    if (i == 0 || port == 0 || port > 65535) {
        return BOTTLE_HEAD_E_TARGET;
    }

    h->port = port;
    *used = i;

    return BOTTLE_HEAD_OK;
}


/*
 * Path and query: visible ASCII only.  '#' is refused because a fragment
 * is never part of a request-target and upstreams disagree on it.
 */

static int
bottle_head_path_ok(const unsigned char *p, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (p[i] <= 0x20 || p[i] >= 0x7f || p[i] == '#') {
            return 0;
        }
    }

    return 1;
}


/* field-name ":" OWS field-value OWS (RFC 9112 5) */

static int
bottle_head_header(bottle_head_t *h, unsigned *seen,
    const unsigned char *line, size_t n)
{
    size_t                i, nlen, vlen;
    const unsigned char  *name, *v;

    /* obs-fold: a continuation line; RFC 9112 5.2 lets us refuse it */
    if (line[0] == ' ' || line[0] == '\t') {
        return BOTTLE_HEAD_E_HEADER;
    }

    for (i = 0; i < n && bottle_head_is_tchar(line[i]); i++) {
        /* void */
    }

    /* this also refuses whitespace before the colon (RFC 9112 5.1) */
    if (i == 0 || i == n || line[i] != ':') {
        return BOTTLE_HEAD_E_HEADER;
    }

    name = line;
    nlen = i;

    for (i++; i < n; i++) {
        if (bottle_head_is_ctl(line[i]) && line[i] != '\t') {
            return BOTTLE_HEAD_E_HEADER;
        }
    }

    v = name + nlen + 1;
    vlen = n - nlen - 1;

    while (vlen > 0 && (v[0] == ' ' || v[0] == '\t')) {
        v++;
        vlen--;
    }

    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) {
        vlen--;
    }

    if (bottle_head_name_is(name, nlen, "host")) {
        if (*seen & BOTTLE_HEAD_SEEN_HOST) {
            return BOTTLE_HEAD_E_DUP_HOST;
        }

        *seen |= BOTTLE_HEAD_SEEN_HOST;
        h->has_host_header = 1;
        h->host_header.data = v;
        h->host_header.len = vlen;

    } else if (bottle_head_name_is(name, nlen, "proxy-authorization")) {
        if (*seen & BOTTLE_HEAD_SEEN_PAUTH) {
            return BOTTLE_HEAD_E_DUP_PROXY_AUTH;
        }

        *seen |= BOTTLE_HEAD_SEEN_PAUTH;
        h->proxy_authorization.data = v;
        h->proxy_authorization.len = vlen;

    } else if (bottle_head_name_is(name, nlen, "content-length")) {
        return bottle_head_content_length(h, v, vlen);

    } else if (bottle_head_name_is(name, nlen, "transfer-encoding")) {
        /* RFC 9112 6.1: both framings at once is how smuggling works */
        if (h->has_content_length) {
            return BOTTLE_HEAD_E_CL_AND_TE;
        }

        h->has_transfer_encoding = 1;
        h->has_body = 1;
    }

    return BOTTLE_HEAD_OK;
}


/*
 * 1*DIGIT only: no sign, no list ("5, 5"); repeats must agree (RFC 9110
 * 8.6 allows refusing them outright, we accept identical ones).
 */

static int
bottle_head_content_length(bottle_head_t *h, const unsigned char *v,
    size_t n)
{
    size_t    i;
    uint64_t  cl;

    if (h->has_transfer_encoding) {
        return BOTTLE_HEAD_E_CL_AND_TE;
    }

    if (n == 0) {
        return BOTTLE_HEAD_E_CONTENT_LENGTH;
    }

    cl = 0;

    for (i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return BOTTLE_HEAD_E_CONTENT_LENGTH;
        }

        if (cl > (UINT64_MAX - 9) / 10) {
            return BOTTLE_HEAD_E_CONTENT_LENGTH;
        }

        cl = cl * 10 + (uint64_t) (v[i] - '0');
    }

    if (h->has_content_length && cl != h->content_length) {
        return BOTTLE_HEAD_E_CONTENT_LENGTH;
    }

    h->has_content_length = 1;
    h->content_length = cl;

    if (cl > 0) {
        h->has_body = 1;
    }

    return BOTTLE_HEAD_OK;
}


/* case-insensitive compare of a field name with a lowercase literal */

static int
bottle_head_name_is(const unsigned char *name, size_t n, const char *lower)
{
    size_t         i;
    unsigned char  c;

    for (i = 0; i < n; i++) {
        if (lower[i] == '\0') {
            return 0;
        }

        c = name[i];
        if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }

        if (c != (unsigned char) lower[i]) {
            return 0;
        }
    }

    return lower[n] == '\0';
}


const char *
bottle_head_strerror(int rc)
{
    switch (rc) {
    case BOTTLE_HEAD_OK:
        return "ok";
    case BOTTLE_HEAD_AGAIN:
        return "incomplete head";
    case BOTTLE_HEAD_E_HEAD_TOO_LARGE:
        return "head too large";
    case BOTTLE_HEAD_E_LINE_TOO_LONG:
        return "request line too long";
    case BOTTLE_HEAD_E_HEADER_TOO_LONG:
        return "header line too long";
    case BOTTLE_HEAD_E_TOO_MANY_HEADERS:
        return "too many headers";
    case BOTTLE_HEAD_E_REQUEST_LINE:
        return "bad request line";
    case BOTTLE_HEAD_E_TARGET:
        return "bad request target";
    case BOTTLE_HEAD_E_HEADER:
        return "bad header";
    case BOTTLE_HEAD_E_DUP_HOST:
        return "duplicate host header";
    case BOTTLE_HEAD_E_DUP_PROXY_AUTH:
        return "duplicate proxy-authorization header";
    case BOTTLE_HEAD_E_CONTENT_LENGTH:
        return "bad content-length";
    case BOTTLE_HEAD_E_CL_AND_TE:
        return "both content-length and transfer-encoding";
    case BOTTLE_HEAD_E_BARE_CR_LF:
        return "bare cr or lf";
    case BOTTLE_HEAD_E_NUL:
        return "nul byte in head";
    case BOTTLE_HEAD_E_AUTHORITY_FORM:
        return "authority form without connect";
    case BOTTLE_HEAD_E_CONNECT_FORM:
        return "connect without authority form";
    default:
        return "unknown error";
    }
}


static int
bottle_head_b64(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }

    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }

    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }

    if (c == '+') {
        return 62;
    }

    if (c == '/') {
        return 63;
    }

    return -1;
}


/*
 * Decodes one 4-character base64 group into b[]; returns the number of
 * bytes (1..3) or -1.  Padding is allowed only in the last group, and the
 * bits it hides must be zero, so each credential has one encoding only.
 */

static int
bottle_head_b64_quad(const unsigned char *q, int last, unsigned char *b)
{
    int  v0, v1, v2, v3;

    v0 = bottle_head_b64(q[0]);
    v1 = bottle_head_b64(q[1]);

    if (v0 < 0 || v1 < 0) {
        return -1;
    }

    b[0] = (unsigned char) ((v0 << 2) | (v1 >> 4));

    if (last && q[2] == '=' && q[3] == '=') {
        return (v1 & 0x0f) ? -1 : 1;
    }

    v2 = bottle_head_b64(q[2]);
    if (v2 < 0) {
        return -1;
    }

    b[1] = (unsigned char) (((v1 & 0x0f) << 4) | (v2 >> 2));

    if (last && q[3] == '=') {
        return (v2 & 0x03) ? -1 : 2;
    }

    v3 = bottle_head_b64(q[3]);
    if (v3 < 0) {
        return -1;
    }

    b[2] = (unsigned char) (((v2 & 0x03) << 6) | v3);

    return 3;
}


ssize_t
bottle_head_basic_password(unsigned char *out, size_t cap,
    const unsigned char *value, size_t len)
{
    int                   k, j, colon;
    size_t                i, n, plen;
    unsigned char         b[3];
    const unsigned char  *p;

    /* "Basic" 1*SP token68 (RFC 9110 11.4, RFC 7617) */
    if (value == NULL || len < 6 || !bottle_head_name_is(value, 5, "basic")
        || value[5] != ' ')
    {
        return -1;
    }

    for (i = 5; i < len && value[i] == ' '; i++) {
        /* void */
    }

    p = value + i;
    n = len - i;

    if (n == 0 || n % 4 != 0) {
        return -1;
    }

    colon = 0;
    plen = 0;

    for (i = 0; i < n; i += 4) {
        k = bottle_head_b64_quad(p + i, i + 4 == n, b);
        if (k < 0) {
            return -1;
        }

        for (j = 0; j < k; j++) {
            if (!colon) {
                colon = (b[j] == ':');
                continue;
            }

            if (plen == cap) {
                return -1;
            }

            out[plen++] = b[j];
        }
    }

    return colon ? (ssize_t) plen : -1;
}
