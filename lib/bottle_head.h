/*
 * Strict parser for the request head an agent sends to the egress proxy:
 * "CONNECT host:port HTTP/1.1" or an absolute-form "GET http://host/p".
 *
 * Everything in the head is hostile input, so the parser refuses anything
 * two HTTP implementations could read differently (bare CR or LF, obs-fold,
 * duplicate Host or Proxy-Authorization, Content-Length plus
 * Transfer-Encoding, ...) instead of guessing.  No nginx types and no
 * allocation: the result points into the caller's buffer.
 */

#ifndef BOTTLE_HEAD_H
#define BOTTLE_HEAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


#define BOTTLE_HEAD_OK                    0
/* incomplete: call again with the same buffer plus more bytes */
#define BOTTLE_HEAD_AGAIN                 1

#define BOTTLE_HEAD_E_HEAD_TOO_LARGE     -1
#define BOTTLE_HEAD_E_LINE_TOO_LONG      -2   /* the request line */
#define BOTTLE_HEAD_E_HEADER_TOO_LONG    -3
#define BOTTLE_HEAD_E_TOO_MANY_HEADERS   -4
#define BOTTLE_HEAD_E_REQUEST_LINE       -5
#define BOTTLE_HEAD_E_TARGET             -6
#define BOTTLE_HEAD_E_HEADER             -7
#define BOTTLE_HEAD_E_DUP_HOST           -8
#define BOTTLE_HEAD_E_DUP_PROXY_AUTH     -9
#define BOTTLE_HEAD_E_CONTENT_LENGTH    -10
#define BOTTLE_HEAD_E_CL_AND_TE         -11
#define BOTTLE_HEAD_E_BARE_CR_LF        -12
#define BOTTLE_HEAD_E_NUL               -13
#define BOTTLE_HEAD_E_AUTHORITY_FORM    -14   /* authority form, not CONNECT */
#define BOTTLE_HEAD_E_CONNECT_FORM      -15   /* CONNECT, not authority form */

/* the lowest error code, for callers that keep per-error counters */
#define BOTTLE_HEAD_E_MIN               -15

/* leading empty lines tolerated before the request line (RFC 9112 2.2) */
#define BOTTLE_HEAD_MAX_EMPTY_LINES       4

/* longest IPv6 literal between the brackets: INET6_ADDRSTRLEN - 1 */
#define BOTTLE_HEAD_IPV6_MAX             45


typedef struct {
    const unsigned char  *data;
    size_t                len;
} bottle_head_str_t;


typedef struct {
    /* max bytes of the whole head incl. final CRLFCRLF, default 8192 */
    size_t  max_head;
    /* max bytes of the request line or any one header line, not counting
     * its CRLF, default 4096 */
    size_t  max_line;
    /* max header fields, default 64 */
    size_t  max_headers;
} bottle_head_limits_t;


void bottle_head_limits_default(bottle_head_limits_t *lim);


enum {
    BOTTLE_HEAD_FORM_AUTHORITY = 1,  /* CONNECT host:port */
    BOTTLE_HEAD_FORM_ABSOLUTE,       /* GET http://host[:port]/path?q */
    BOTTLE_HEAD_FORM_ORIGIN          /* GET /path (only reported; the front
                                        refuses it) */
};


/*
 * Only meaningful when bottle_head_parse() returned BOTTLE_HEAD_OK.
 * Absent strings have data NULL and len 0.
 */
typedef struct {
    bottle_head_str_t  method;       /* token as sent */
    int                is_connect;   /* method == "CONNECT" (case-sensitive) */
    int                form;         /* BOTTLE_HEAD_FORM_* */
    bottle_head_str_t  target;       /* request-target as sent */
    /* absolute form: "http" etc. as sent (lowercase compare by caller) */
    bottle_head_str_t  scheme;
    /* authority/absolute: host WITHOUT [] for IPv6, as sent */
    bottle_head_str_t  host;
    int                host_ipv6;    /* host was a [bracketed] literal */
    unsigned           port;         /* explicit port, or 0 if none given */
    /* absolute/origin form: the rest of the target after the authority, so
     * it starts with '/' or '?' or is empty ("http://h"); origin form: the
     * whole target */
    bottle_head_str_t  path;
    int                http_minor;   /* HTTP/1.0 -> 0, HTTP/1.1 -> 1 */
    bottle_head_str_t  proxy_authorization;  /* value (OWS trimmed) or len 0 */
    bottle_head_str_t  host_header;          /* value of Host or len 0 */
    int                has_host_header;      /* a Host field was present */
    size_t             nheaders;
    /* Content-Length > 0 or any Transfer-Encoding present */
    int                has_body;
    int                has_content_length;
    uint64_t           content_length;       /* 0 when absent */
    int                has_transfer_encoding;
    size_t             head_len;     /* bytes consumed including blank line */
} bottle_head_t;


/*
 * Returns BOTTLE_HEAD_OK (complete head parsed into *out), BOTTLE_HEAD_AGAIN
 * (incomplete: call again with the same buffer plus more bytes), or a
 * negative BOTTLE_HEAD_E_* error.  Only the bytes up to the end of the head
 * are examined when it is complete; bytes after it (e.g. a pipelined TLS
 * ClientHello) are left alone.  Errors in complete lines are reported as
 * soon as those lines have arrived, before the rest of the head.
 * lim may be NULL for the defaults.
 */
int bottle_head_parse(bottle_head_t *out, const unsigned char *buf,
    size_t len, const bottle_head_limits_t *lim);

/* short lowercase reason, e.g. "header line too long"; never NULL */
const char *bottle_head_strerror(int rc);

/*
 * Proxy-Authorization "Basic <b64>" -> the password (after the first ':'),
 * decoded into out (cap bytes).  Scheme compared case-insensitively; strict
 * base64 (padding required, no whitespace inside, no trailing garbage);
 * returns password length >= 0, or -1 when the value is not valid Basic
 * credentials or the password does not fit (out may then hold a partial
 * password).  Username is ignored.  out may be NULL when cap is 0.
 */
ssize_t bottle_head_basic_password(unsigned char *out, size_t cap,
    const unsigned char *value, size_t len);


#endif /* BOTTLE_HEAD_H */
