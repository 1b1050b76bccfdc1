/*
 * Unit tests for the proxy request-head parser (lib/bottle_head.c).
 */

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_head.h"


#define U(s)  ((const unsigned char *) (s))


static int
parse(bottle_head_t *h, const char *s, const bottle_head_limits_t *lim)
{
    return bottle_head_parse(h, U(s), strlen(s), lim);
}


static int
rc_of(const char *s)
{
    bottle_head_t  h;

    return parse(&h, s, NULL);
}


static int
str_is(bottle_head_str_t s, const char *want)
{
    return s.len == strlen(want)
           && (s.len == 0 || memcmp(s.data, want, s.len) == 0);
}


/* 1 when every proper prefix of s parses as BOTTLE_HEAD_AGAIN */

static int
all_prefixes_again(const char *s, const bottle_head_limits_t *lim)
{
    size_t         k, n;
    bottle_head_t  h;

    n = strlen(s);

    for (k = 0; k < n; k++) {
        if (bottle_head_parse(&h, U(s), k, lim) != BOTTLE_HEAD_AGAIN) {
            printf("#   prefix of %zu bytes: %s\n", k,
                   bottle_head_strerror(bottle_head_parse(&h, U(s), k, lim)));
            return 0;
        }
    }

    return 1;
}


/* a malloc'ed "<prefix><n times c><suffix>" */

static char *
build(const char *prefix, size_t n, char c, const char *suffix)
{
    char    *s;
    size_t   pl, sl;

    pl = strlen(prefix);
    sl = strlen(suffix);
    s = malloc(pl + n + sl + 1);
    if (s == NULL) {
        exit(2);
    }

    memcpy(s, prefix, pl);
    memset(s + pl, c, n);
    memcpy(s + pl + n, suffix, sl + 1);

    return s;
}


static void
test_forms(void)
{
    int            rc;
    const char    *s;
    bottle_head_t  h;

    s = "CONNECT example.com:443 HTTP/1.1\r\n"
        "Host: example.com:443\r\n"
        "Proxy-Authorization:  Basic dXNlcjpwYXNz \t\r\n"
        "\r\n";
    rc = parse(&h, s, NULL);
    is_int(rc, BOTTLE_HEAD_OK, "CONNECT host:port parses");
    ok(h.is_connect, "CONNECT: is_connect");
    is_int(h.form, BOTTLE_HEAD_FORM_AUTHORITY, "CONNECT: authority form");
    ok(str_is(h.method, "CONNECT"), "CONNECT: method");
    ok(str_is(h.target, "example.com:443"), "CONNECT: target");
    ok(str_is(h.host, "example.com"), "CONNECT: host");
    is_int(h.port, 443, "CONNECT: port");
    ok(!h.host_ipv6, "CONNECT: not ipv6");
    is_int(h.http_minor, 1, "CONNECT: HTTP/1.1");
    ok(str_is(h.host_header, "example.com:443"), "CONNECT: Host header");
    ok(str_is(h.proxy_authorization, "Basic dXNlcjpwYXNz"),
       "CONNECT: Proxy-Authorization value OWS-trimmed");
    is_int(h.nheaders, 2, "CONNECT: two headers");
    ok(!h.has_body, "CONNECT: no body");
    is_int(h.head_len, strlen(s), "CONNECT: head_len");
    ok(h.scheme.len == 0 && h.path.len == 0, "CONNECT: no scheme, no path");
    ok(all_prefixes_again(s, NULL), "CONNECT head: every prefix is AGAIN");

    rc = parse(&h, "CONNECT [::1]:443 HTTP/1.0\r\n\r\n", NULL);
    is_int(rc, BOTTLE_HEAD_OK, "CONNECT [::1]:443 parses");
    ok(str_is(h.host, "::1") && h.host_ipv6, "[::1]: host without brackets");
    is_int(h.port, 443, "[::1]: port");
    is_int(h.http_minor, 0, "[::1]: HTTP/1.0");
    is_int(h.nheaders, 0, "[::1]: no headers");

    rc = parse(&h, "CONNECT [2001:db8::ffff:1.2.3.4]:8443 HTTP/1.1\r\n\r\n",
               NULL);
    ok(rc == BOTTLE_HEAD_OK && h.host_ipv6
       && str_is(h.host, "2001:db8::ffff:1.2.3.4") && h.port == 8443,
       "CONNECT v4-mapped IPv6 literal");

    rc = parse(&h, "CONNECT 1.2.3.4:443 HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && str_is(h.host, "1.2.3.4") && !h.host_ipv6
       && h.port == 443, "CONNECT 1.2.3.4:443");

    s = "GET http://h.example:8080/p?q HTTP/1.1\r\nHost: h.example:8080\r\n"
        "\r\n";
    rc = parse(&h, s, NULL);
    is_int(rc, BOTTLE_HEAD_OK, "absolute form parses");
    ok(!h.is_connect, "absolute: not CONNECT");
    is_int(h.form, BOTTLE_HEAD_FORM_ABSOLUTE, "absolute: form");
    ok(str_is(h.method, "GET"), "absolute: method");
    ok(str_is(h.scheme, "http"), "absolute: scheme");
    ok(str_is(h.host, "h.example"), "absolute: host");
    is_int(h.port, 8080, "absolute: port");
    ok(str_is(h.path, "/p?q"), "absolute: path");
    ok(str_is(h.target, "http://h.example:8080/p?q"), "absolute: target");
    ok(all_prefixes_again(s, NULL), "absolute head: every prefix is AGAIN");

    rc = parse(&h, "GET http://h HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && str_is(h.host, "h") && h.port == 0
       && h.path.len == 0, "absolute without path: empty path, port 0");

    rc = parse(&h, "GET HTTP://h?q=1 HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && str_is(h.scheme, "HTTP")
       && str_is(h.host, "h") && str_is(h.path, "?q=1"),
       "absolute query-only: path is the query, scheme as sent");

    rc = parse(&h, "GET http://[::1]:80/x HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.host_ipv6 && str_is(h.host, "::1")
       && h.port == 80 && str_is(h.path, "/x"), "absolute IPv6 literal");

    rc = parse(&h, "GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.form == BOTTLE_HEAD_FORM_ORIGIN
       && str_is(h.path, "/index.html") && h.host.len == 0,
       "origin form reported as ORIGIN");

    rc = parse(&h, "M-SEARCH!#$%&'*+.^_`|~09 http://h/ HTTP/1.1\r\n\r\n",
               NULL);
    is_int(rc, BOTTLE_HEAD_OK, "every tchar accepted in the method");

    rc = parse(&h, "\r\n\r\n\r\n\r\nCONNECT h:1 HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.head_len == 8 + 24,
       "four leading empty lines tolerated and counted in head_len");
    is_int(rc_of("\r\n\r\n\r\n\r\n\r\nCONNECT h:1 HTTP/1.1\r\n\r\n"),
           BOTTLE_HEAD_E_REQUEST_LINE, "five leading empty lines refused");
    ok(all_prefixes_again("\r\n\r\nCONNECT h:1 HTTP/1.1\r\nA: b\r\n\r\n",
                          NULL),
       "leading empty lines: every prefix is AGAIN");

    rc = parse(&h, "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
                   "content-length: 5\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.has_body && h.content_length == 5,
       "identical repeated Content-Length accepted, has_body");

    rc = parse(&h, "POST http://h/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
               NULL);
    ok(rc == BOTTLE_HEAD_OK && !h.has_body && h.has_content_length,
       "Content-Length: 0 is no body");

    rc = parse(&h, "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked"
                   "\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.has_body && h.has_transfer_encoding,
       "Transfer-Encoding means a body");

    rc = parse(&h, "GET http://h/ HTTP/1.1\r\nhOsT:\r\nX-Empty:\r\n"
                   "PROXY-AUTHORIZATION: \tBasic Zm9vOg==\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.has_host_header && h.host_header.len == 0
       && str_is(h.proxy_authorization, "Basic Zm9vOg=="),
       "header names case-insensitive, empty values allowed");

    rc = parse(&h, "GET http://h/ HTTP/1.1\r\nX-Bin: caf\xc3\xa9\tx\r\n\r\n",
               NULL);
    is_int(rc, BOTTLE_HEAD_OK, "obs-text and HTAB allowed in a value");

    rc = parse(&h, "GET http://h/ HTTP/1.1\r\nHost-X: a\r\nX-Host: b\r\n"
                   "Host: c\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && str_is(h.host_header, "c"),
       "only an exact Host name counts as Host");
}


static void
test_trailing(void)
{
    int                   rc;
    size_t                n;
    bottle_head_t         h;
    unsigned char         buf[128];
    const char           *head = "CONNECT h.example:443 HTTP/1.1\r\n\r\n";
    static const unsigned char  hello[] = {
        0x16, 0x03, 0x01, 0x00, 0x0a, 0x01, 0x00, 0x00, 0x06, 0x03, 0x03,
        '\r', '\n', '\n', 0x00, '\r', 0xff
    };

    n = strlen(head);
    memcpy(buf, head, n);
    memcpy(buf + n, hello, sizeof(hello));

    rc = bottle_head_parse(&h, buf, n + sizeof(hello), NULL);
    is_int(rc, BOTTLE_HEAD_OK, "head followed by a ClientHello parses");
    is_int(h.head_len, n, "head_len stops at the blank line");
    ok(memcmp(buf + n, hello, sizeof(hello)) == 0, "trailing bytes untouched");
    ok(h.host.data >= buf && h.host.data + h.host.len <= buf + n,
       "host points into the caller's buffer");
}


static void
test_errors(void)
{
    size_t  i;
    static const struct {
        const char  *head;
        int          rc;
        const char  *what;
    } cases[] = {
        /* request line */
        { "GET  http://h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "two SPs after the method" },
        { "GET http://h/  HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "two SPs before the version" },
        { "GET http://h/ HTTP/1.1 \r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "trailing SP after the version" },
        { " GET http://h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "leading SP" },
        { "GET\thttp://h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "HTAB as separator" },
        { "G(T http://h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "non-tchar in the method" },
        { "GET http://h/ HTTP/1.2\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "HTTP/1.2" },
        { "GET http://h/ http/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "lowercase version" },
        { "GET http://h/ HTTP/2.0\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "HTTP/2.0" },
        { "GET http://h/\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "HTTP/0.9 style, no version" },
        { "GET /a b HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_REQUEST_LINE,
          "SP inside the target" },

        /* target */
        { "CONNECT h HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT without port" },
        { "CONNECT h:0 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT port 0" },
        { "CONNECT h:65536 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT port 65536" },
        { "CONNECT h:000443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "port of six digits" },
        { "CONNECT h:+443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "port with a leading +" },
        { "CONNECT h: HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "empty port" },
        { "CONNECT h:443/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT with a path" },
        { "CONNECT u@h:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT with userinfo" },
        { "CONNECT :443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "CONNECT empty host" },
        { "CONNECT []:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "empty IPv6 literal" },
        { "CONNECT [::1:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "unclosed IPv6 literal" },
        { "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
          BOTTLE_HEAD_E_TARGET, "IPv6 zone id" },
        { "CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "IPv4 in brackets" },
        { "CONNECT h%2e:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "percent in host" },
        { "GET http://u:p@h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "absolute URI with userinfo" },
        { "GET http://good@evil/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "absolute URI with user@" },
        { "GET http:///p HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "absolute URI with empty host" },
        { "GET http://h:/p HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "absolute URI with empty port" },
        { "GET http://h:99999/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "absolute URI with port out of range" },
        { "GET http://h#f HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "fragment after the host" },
        { "GET http://h/p#f HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "fragment in the path" },
        { "GET http://h/\x7f HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "DEL in the path" },
        { "GET http://h/\xc3\xa9 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "raw UTF-8 in the path" },
        { "GET http:h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "scheme without //" },
        { "OPTIONS * HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_TARGET,
          "asterisk form" },

        /* form / method mismatch */
        { "GET h.example:443 HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_AUTHORITY_FORM,
          "GET in authority form" },
        { "connect h.example:443 HTTP/1.1\r\n\r\n",
          BOTTLE_HEAD_E_AUTHORITY_FORM, "lowercase connect is not CONNECT" },
        { "CONNECT http://h:443/ HTTP/1.1\r\n\r\n",
          BOTTLE_HEAD_E_CONNECT_FORM, "CONNECT in absolute form" },
        { "CONNECT / HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_CONNECT_FORM,
          "CONNECT in origin form" },

        /* header fields */
        { "GET http://h/ HTTP/1.1\r\nHost : h\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "SP before the colon" },
        { "GET http://h/ HTTP/1.1\r\nHost\t: h\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "HTAB before the colon" },
        { "GET http://h/ HTTP/1.1\r\nNoColon\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "header without a colon" },
        { "GET http://h/ HTTP/1.1\r\n: v\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "empty header name" },
        { "GET http://h/ HTTP/1.1\r\nX(y): v\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "non-tchar in a header name" },
        { "GET http://h/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "obs-fold with SP" },
        { "GET http://h/ HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n",
          BOTTLE_HEAD_E_HEADER, "obs-fold with HTAB" },
        { "GET http://h/ HTTP/1.1\r\n Host: h\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "first header line starts with SP" },
        { "GET http://h/ HTTP/1.1\r\nA: b\x01\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "CTL in a value" },
        { "GET http://h/ HTTP/1.1\r\nA: b\x7f\r\n\r\n", BOTTLE_HEAD_E_HEADER,
          "DEL in a value" },

        /* duplicates and framing */
        { "GET http://h/ HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
          BOTTLE_HEAD_E_DUP_HOST, "duplicate Host" },
        { "GET http://h/ HTTP/1.1\r\nProxy-Authorization: a\r\n"
          "proxy-authorization: b\r\n\r\n", BOTTLE_HEAD_E_DUP_PROXY_AUTH,
          "duplicate Proxy-Authorization" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
          "Content-Length: 6\r\n\r\n", BOTTLE_HEAD_E_CONTENT_LENGTH,
          "conflicting Content-Length" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
          BOTTLE_HEAD_E_CONTENT_LENGTH, "Content-Length list" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
          BOTTLE_HEAD_E_CONTENT_LENGTH, "Content-Length with a sign" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length:\r\n\r\n",
          BOTTLE_HEAD_E_CONTENT_LENGTH, "empty Content-Length" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length: "
          "99999999999999999999\r\n\r\n", BOTTLE_HEAD_E_CONTENT_LENGTH,
          "Content-Length overflowing 64 bits" },
        { "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n"
          "Transfer-Encoding: chunked\r\n\r\n", BOTTLE_HEAD_E_CL_AND_TE,
          "Content-Length then Transfer-Encoding" },
        { "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
          "Content-Length: 0\r\n\r\n", BOTTLE_HEAD_E_CL_AND_TE,
          "Transfer-Encoding then Content-Length" },

        /* line endings */
        { "GET http://h/ HTTP/1.1\n\n", BOTTLE_HEAD_E_BARE_CR_LF,
          "bare LF ending the request line" },
        { "GET http://h/ HTTP/1.1\r\nA: b\n\r\n", BOTTLE_HEAD_E_BARE_CR_LF,
          "bare LF ending a header" },
        { "GET http://h/ HTTP/1.1\r\nA: b\r\n\n", BOTTLE_HEAD_E_BARE_CR_LF,
          "bare LF as the blank line" },
        { "GET http://h/ HTTP/1.1\r\nA: b\rc\r\n\r\n",
          BOTTLE_HEAD_E_BARE_CR_LF, "bare CR inside a value" },
        { "GET http://h/ HTTP/1.1\r\r\n\r\n", BOTTLE_HEAD_E_BARE_CR_LF,
          "CR CR LF" },
        { "\nGET http://h/ HTTP/1.1\r\n\r\n", BOTTLE_HEAD_E_BARE_CR_LF,
          "leading bare LF" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(rc_of(cases[i].head), cases[i].rc, "%s: %s", cases[i].what,
               bottle_head_strerror(cases[i].rc));
    }
}


static void
test_nul(void)
{
    bottle_head_t  h;
    static const char  head[] = "GET http://h/ HTTP/1.1\r\nA: b\0c\r\n\r\n";
    static const char  line[] = "GET http://h/\0 HTTP/1.1\r\n\r\n";

    is_int(bottle_head_parse(&h, U(head), sizeof(head) - 1, NULL),
           BOTTLE_HEAD_E_NUL, "NUL in a header value");
    is_int(bottle_head_parse(&h, U(line), sizeof(line) - 1, NULL),
           BOTTLE_HEAD_E_NUL, "NUL in the request line");
    is_int(bottle_head_parse(&h, U(line), 14, NULL), BOTTLE_HEAD_E_NUL,
           "NUL refused before the line is complete");
}


static void
test_early(void)
{
    is_int(rc_of("GET http://h/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n"),
           BOTTLE_HEAD_E_DUP_HOST, "error reported before the head ends");
    is_int(rc_of("GET http://h/ HTTP/1.1\r\nA: b\r"), BOTTLE_HEAD_AGAIN,
           "a CR at the end of the buffer waits for its LF");
    is_int(rc_of(""), BOTTLE_HEAD_AGAIN, "empty buffer is AGAIN");
}


static void
test_limits(void)
{
    int                   rc;
    char                 *s;
    size_t                n;
    bottle_head_t         h;
    bottle_head_limits_t  lim;

    bottle_head_limits_default(&lim);
    ok(lim.max_head == 8192 && lim.max_line == 4096 && lim.max_headers == 64,
       "default limits");

    /* request line: "CONNECT " + host + ":1 HTTP/1.1" is max_line bytes */
    lim.max_line = 64;
    n = 64 - strlen("CONNECT :1 HTTP/1.1");
    s = build("CONNECT ", n, 'a', ":1 HTTP/1.1\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_OK, "request line of max_line");
    free(s);
    s = build("CONNECT ", n + 1, 'a', ":1 HTTP/1.1\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_LINE_TOO_LONG,
           "request line of max_line + 1");
    free(s);
    s = build("CONNECT ", 100, 'a', "");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_LINE_TOO_LONG,
           "over-long request line refused before its CRLF");
    free(s);
    s = build("CONNECT ", n, 'a', ":1 HTTP/1.1\r");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_AGAIN,
           "request line of max_line plus a CR waits for the LF");
    free(s);

    /* header line: "X: " + value is max_line bytes */
    n = 64 - strlen("X: ");
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n, 'v', "\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_OK, "header line of max_line");
    ok(all_prefixes_again(s, &lim), "header line of max_line: prefixes AGAIN");
    free(s);
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n + 1, 'v', "\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_HEADER_TOO_LONG,
           "header line of max_line + 1");
    free(s);
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n + 1, 'v', "");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_HEADER_TOO_LONG,
           "over-long header line refused before its CRLF");
    free(s);

    /* whole head: request line 22 + "X: " value CRLF + CRLF */
    bottle_head_limits_default(&lim);
    lim.max_head = 100;
    n = 100 - strlen("CONNECT h:1 HTTP/1.1\r\nX: \r\n\r\n");
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n, 'v', "\r\n\r\n");
    rc = parse(&h, s, &lim);
    ok(rc == BOTTLE_HEAD_OK && h.head_len == 100, "head of max_head");
    ok(all_prefixes_again(s, &lim), "head of max_head: prefixes AGAIN");
    free(s);
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n + 1, 'v', "\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_HEAD_TOO_LARGE,
           "head of max_head + 1");
    is_int(bottle_head_parse(&h, U(s), 100, &lim),
           BOTTLE_HEAD_E_HEAD_TOO_LARGE,
           "head of max_head + 1 refused after max_head bytes");
    is_int(bottle_head_parse(&h, U(s), 99, &lim), BOTTLE_HEAD_AGAIN,
           "head of max_head + 1: max_head - 1 bytes are AGAIN");
    free(s);

    /* the default 8192 with a ClientHello-sized tail after it */
    bottle_head_limits_default(&lim);
    n = 8192 - strlen("CONNECT h:1 HTTP/1.1\r\nX: \r\n\r\n");
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n, 'v', "\r\n\r\n");
    lim.max_line = 8192;
    rc = parse(&h, s, &lim);
    ok(rc == BOTTLE_HEAD_OK && h.head_len == 8192, "head of default max_head");
    free(s);
    s = build("CONNECT h:1 HTTP/1.1\r\nX: ", n + 1, 'v', "\r\n\r\n");
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_HEAD_TOO_LARGE,
           "head of default max_head + 1");
    free(s);

    /* header count */
    bottle_head_limits_default(&lim);
    lim.max_headers = 3;
    s = "CONNECT h:1 HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    rc = parse(&h, s, &lim);
    ok(rc == BOTTLE_HEAD_OK && h.nheaders == 3, "max_headers headers");
    s = "CONNECT h:1 HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    is_int(parse(&h, s, &lim), BOTTLE_HEAD_E_TOO_MANY_HEADERS,
           "max_headers + 1 headers");

    /* port boundaries */
    rc = rc_of("CONNECT h:65535 HTTP/1.1\r\n\r\n");
    is_int(rc, BOTTLE_HEAD_OK, "port 65535");
    rc = parse(&h, "CONNECT h:00001 HTTP/1.1\r\n\r\n", NULL);
    ok(rc == BOTTLE_HEAD_OK && h.port == 1, "port of five digits, 1");
    rc = parse(&h, "CONNECT [1:2:3:4:5:6:7:8]:1 HTTP/1.1\r\n\r\n", NULL);
    is_int(rc, BOTTLE_HEAD_OK, "full-length IPv6 literal");
    s = build("CONNECT [::", BOTTLE_HEAD_IPV6_MAX - 2, 'f', "]:1 HTTP/1.1\r\n"
              "\r\n");
    is_int(rc_of(s), BOTTLE_HEAD_OK, "IPv6 literal of 45 characters");
    free(s);
    s = build("CONNECT [::", BOTTLE_HEAD_IPV6_MAX - 1, 'f', "]:1 HTTP/1.1\r\n"
              "\r\n");
    is_int(rc_of(s), BOTTLE_HEAD_E_TARGET, "IPv6 literal of 46 characters");
    free(s);
}


static void
basic(const char *value, ssize_t want, const char *pw, const char *what)
{
    ssize_t        n;
    unsigned char  out[64];

    n = bottle_head_basic_password(out, sizeof(out), U(value),
                                   strlen(value));
    ok(n == want && (n < 0 || memcmp(out, pw, (size_t) n) == 0),
       "basic: %s", what);
    if (n != want) {
        printf("#   got %zd, want %zd\n", n, want);
    }
}


static void
test_basic(void)
{
    ssize_t        n;
    unsigned char  out[4];

    /* "user:pass" */
    basic("Basic dXNlcjpwYXNz", 4, "pass", "valid");
    basic("basic dXNlcjpwYXNz", 4, "pass", "lowercase scheme");
    basic("BASIC   dXNlcjpwYXNz", 4, "pass", "uppercase scheme, several SPs");
    /* "user" */
    basic("Basic dXNlcg==", -1, NULL, "no colon");
    /* "user:" */
    basic("Basic dXNlcjo=", 0, "", "empty password");
    /* ":" */
    basic("Basic Og==", 0, "", "only a colon");
    /* "u:a:b" */
    basic("Basic dTphOmI=", 3, "a:b", "password containing a colon");
    /* ":tok" */
    basic("Basic OnRvaw==", 3, "tok", "empty username");
    basic("Bearer dXNlcjpwYXNz", -1, NULL, "wrong scheme");
    basic("Basicx dXNlcjpwYXNz", -1, NULL, "longer scheme name");
    basic("Basic", -1, NULL, "no credentials");
    basic("Basic ", -1, NULL, "empty credentials");
    basic("Basic\tdXNlcjpwYXNz", -1, NULL, "HTAB after the scheme");
    basic("Basic dXNlcjpwYXN", -1, NULL, "length not a multiple of 4");
    basic("Basic dXNlcjo", -1, NULL, "padding missing");
    basic("Basic dXNl cjpwYXNz", -1, NULL, "whitespace inside");
    basic("Basic dXNlcjpwYXNz ", -1, NULL, "trailing SP");
    basic("Basic dXNlcjpwYXNz====", -1, NULL, "trailing padding group");
    basic("Basic dXNlcjo=dXNl", -1, NULL, "padding in the middle");
    basic("Basic dXNlcjpwYX*z", -1, NULL, "non-alphabet character");
    basic("Basic dXNlcjpwYXNz-", -1, NULL, "trailing garbage");
    basic("Basic Og=a", -1, NULL, "data after padding");
    basic("Basic Oh==", -1, NULL, "non-zero bits under '=='");
    basic("Basic dXNlcjp=", -1, NULL, "non-zero bits under '='");
    basic("Basic dXNlcjpwYXNz=", -1, NULL, "stray '='");

    /* "user:pass" into a buffer that holds exactly the password */
    n = bottle_head_basic_password(out, 4, U("Basic dXNlcjpwYXNz"), 18);
    ok(n == 4 && memcmp(out, "pass", 4) == 0, "basic: password fills cap");
    n = bottle_head_basic_password(out, 3, U("Basic dXNlcjpwYXNz"), 18);
    is_int(n, -1, "basic: password one byte over cap");
    n = bottle_head_basic_password(NULL, 0, U("Basic dXNlcjo="), 14);
    is_int(n, 0, "basic: empty password with NULL out and cap 0");
}


static void
test_strerror(void)
{
    int          rc, distinct;
    const char  *a, *b;
    int          r2;

    is_str(bottle_head_strerror(BOTTLE_HEAD_E_HEADER_TOO_LONG),
           "header line too long", "strerror text");

    distinct = 1;
    for (rc = BOTTLE_HEAD_E_MIN; rc <= BOTTLE_HEAD_AGAIN; rc++) {
        a = bottle_head_strerror(rc);
        for (r2 = rc + 1; r2 <= BOTTLE_HEAD_AGAIN; r2++) {
            b = bottle_head_strerror(r2);
            if (strcmp(a, b) == 0 || strcmp(a, "unknown error") == 0) {
                distinct = 0;
            }
        }
    }
    ok(distinct, "every code has its own strerror text");
    is_str(bottle_head_strerror(-1000), "unknown error", "unknown code");
}


int
main(void)
{
    test_forms();
    test_trailing();
    test_errors();
    test_nul();
    test_early();
    test_limits();
    test_basic();
    test_strerror();

    return done_testing();
}
