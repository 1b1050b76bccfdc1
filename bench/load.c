/*
 * bottle-load: a small HTTP/1.1 load generator for the bench
 * (bench/README.md).  It does what hey does for the bench's scenarios, but
 * keeps its connections alive: N connections, one request at a time on
 * each, the next request as soon as the previous response has been read to
 * its end.  A connection is opened again only when the server closes it or
 * says "Connection: close" (or with --no-keepalive, for every request).
 *
 *   bottle-load -c N [-z SECONDS] [-w WARMUP_SECONDS]
 *               [-x http://user:pass@host:port] [-m METHOD] [-D BODYFILE]
 *               [-T CONTENT_TYPE] [-H 'Name: value']... [--no-keepalive]
 *               [-t TIMEOUT_SECONDS] URL
 *
 * URL is https://host[:port]/path (TLS, port 443 by default) or
 * http://host[:port]/path (plain).  The host is resolved once, at start.
 * With -x every connection goes through the proxy's CONNECT tunnel
 * (Proxy-Authorization: Basic, when the proxy URL has user:pass@).  TLS
 * certificates are not verified (as hey); SNI is the URL's host unless it
 * is an IP literal; no session resumption: every connection makes a full
 * handshake.
 *
 * Phases: -w seconds of warm-up (not counted), then the line "window" on
 * stdout, -z seconds of window (default 10), then the line "end" at the
 * moment the window ends.  No new requests start after that; the ones in
 * flight finish (within -t) and everything is closed.  Connections stay
 * open across the warm-up/window boundary.  Last, one line of JSON:
 *
 *   {"seconds":4.000,"requests":12345,"status":{"200":12340,"403":5},
 *    "errors":0,"error_kinds":{},"rps":3085.0,"p50_ms":1.234,"p90_ms":..,
 *    "p99_ms":..,"max_ms":..,"connections":16,"connections_total":17,
 *    "requests_total":..,"bytes_in":..}
 *
 * Counted in the window: the responses completed in it (any status; their
 * latency from the start of the request, including the connect, CONNECT
 * and handshake when the request needed a new connection, to the last
 * byte), the errors that happened in it, the connections opened in it and
 * the response bytes (TLS: decrypted) read in it.  rps is 200 responses per
 * second of window; percentiles are nearest-rank.  requests_total and
 * connections_total count the whole run (warm-up, window, drain).
 *
 * Exit status: 0 when it ran (even with errors), 2 on bad usage, 1 when it
 * could not set up (host unresolvable, body file unreadable).
 *
 * Build:
 *   cc -std=gnu99 -O2 -Wall -Wextra -Werror -o bottle-load bench/load.c \
 *      -lssl -lcrypto
 *
 * Design: one thread, non-blocking sockets, level-triggered epoll.  Each
 * connection is a small state machine (connect, CONNECT, TLS handshake,
 * send, receive) that goes as far as it can and then waits for its socket.
 * The request (head and body) is built once; one read buffer serves every
 * connection, because what is read is parsed at once by an incremental
 * parser that keeps only a line buffer per connection, so any split of the
 * bytes over reads is fine.  Nothing is allocated per request.
 */

#define _GNU_SOURCE

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#define LINE_LEN   1024             /* a longer header line keeps its start */
#define RBUF_SIZE  (64 * 1024)
#define EV_MAX     256
#define MAX_KINDS  10               /* error kinds; more go under "other" */
#define KIND_LEN   80
#define SWEEP_US   50000            /* how often timeouts are looked for */

/* what one step of a connection returns */
enum { STEP_AGAIN, STEP_NEXT, STEP_DEAD };

/* connection states */
enum { ST_IDLE, ST_CONNECT, ST_PROXY_SEND, ST_PROXY_RECV, ST_HANDSHAKE,
       ST_SEND, ST_RECV };

/* parser states: line-based ones, and two that count body bytes */
enum { PS_STATUS, PS_HEADER, PS_CHUNK_SIZE, PS_CHUNK_END, PS_TRAILER,
       PS_BODY, PS_EOF };

/* parser results */
enum { PR_MORE, PR_DONE, PR_BAD };

/* phases of the run */
enum { PH_WARM, PH_WINDOW, PH_DRAIN, PH_DONE };

/* io_read() and io_write() results besides a byte count */
enum { IO_EOF = 0, IO_WANT_READ = -1, IO_WANT_WRITE = -2, IO_ERROR = -3 };

typedef struct {
    int         tls;
    char        host[256];          /* no brackets: getaddrinfo, SNI */
    char        port[6];
    char        authority[272];     /* host[:port] as written: Host */
    char        target[272];        /* host:port, brackets kept: CONNECT */
    const char *path;               /* into argv, up to path_len */
    int         path_len;
    int         path_slash;         /* "?q" needs a "/" in front */
    char        userinfo[256];      /* user:pass, or empty */
} url_t;

typedef struct {
    int         fd;
    SSL        *ssl;
    int         state;
    uint32_t    events;             /* what epoll watches the fd for */
    size_t      off;                /* bytes of the output written */
    int64_t     start;              /* the request began, µs */
    int64_t     deadline;
    unsigned    served;             /* responses on this connection */
    unsigned    active:1;           /* a request is in flight */
    unsigned    queued:1;           /* in L.pending */
    unsigned    retried:1;          /* resent once on a new connection */
    unsigned    quiet:1;            /* no close_notify when closing */

    /* the response parser */
    int         ps;
    int         status;
    unsigned    connect_mode:1;     /* the proxy's answer: head only */
    unsigned    http10:1;
    unsigned    close:1;            /* the connection ends with it */
    unsigned    keepalive:1;        /* "Connection: keep-alive" */
    unsigned    chunked:1;
    unsigned    has_len:1;
    uint64_t    left;               /* body or chunk bytes to come */
    uint64_t    got;                /* bytes of this response so far */
    size_t      llen;
    char        line[LINE_LEN];
} conn_t;

/* the command line, what is built from it once, and the run */
static struct {
    int           nconn;
    double        window_s, warmup_s, timeout_s;
    const char   *method, *body_file, *ctype;
    const char  **headers;
    int           nheaders;
    int           no_keepalive, use_proxy, head_method, sni;
    url_t         url, proxy;

    struct sockaddr_storage addr;
    socklen_t     addrlen;
    char         *req, *creq;       /* the request; the CONNECT request */
    size_t        req_len, creq_len;
    SSL_CTX      *ctx;

    int           ep, phase;
    int64_t       timeout, t_window, win_start, win_stop, drain_stop;
    conn_t       *conns;
    conn_t      **pending, **running;   /* slots to start a request on */
    int           npending;
} L;

/* what is counted */
static struct {
    uint64_t      status[1000];
    uint32_t     *lat;              /* µs, responses in the window */
    size_t        nlat, cap;
    uint64_t      requests, requests_total, errors;
    uint64_t      conns, conns_total, bytes_in;
    struct { char kind[KIND_LEN + 1]; uint64_t n; } kinds[MAX_KINDS + 1];
    int           nkinds;
} S;

static char rbuf[RBUF_SIZE];


/* ---------------------------------------------------------------- time */

static int64_t
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
in_window(int64_t t)
{
    return t >= L.win_start && t < L.win_stop;
}

/* Requests may start: warming up or in the window (win_stop is the far
 * future until the window begins), not after it, even before the main
 * loop has seen that it ended */
static int
loading(int64_t t)
{
    return L.phase <= PH_WINDOW && t < L.win_stop;
}


/* ----------------------------------------------------------- counting */

static void
count_error(const char *kind)
{
    int i;

    S.errors++;
    for (i = 0; i < S.nkinds; i++) {
        if (strncmp(S.kinds[i].kind, kind, KIND_LEN) == 0) {
            S.kinds[i].n++;
            return;
        }
    }
    if (S.nkinds == MAX_KINDS) {
        strcpy(S.kinds[MAX_KINDS].kind, "other");   /* shared by the rest */
        S.kinds[MAX_KINDS].n++;
        return;
    }
    snprintf(S.kinds[i].kind, sizeof S.kinds[i].kind, "%s", kind);
    S.kinds[i].n = 1;
    S.nkinds++;
}

static void
count_response(conn_t *c, int64_t now)
{
    uint32_t *lat;
    int64_t   us = now - c->start;

    S.requests_total++;
    if (!in_window(now)) {
        return;
    }
    S.requests++;
    S.status[c->status]++;
    if (S.nlat == S.cap) {
        lat = realloc(S.lat, S.cap * 2 * sizeof *lat);
        if (lat == NULL) {
            return;             /* a sample lost rather than the run */
        }
        S.lat = lat;
        S.cap *= 2;
    }
    S.lat[S.nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t) us;
}


/* ---------------------------------------------------- connection basics */

/* Watch the fd for these events (no system call when they are the same) */
static void
want(conn_t *c, uint32_t events)
{
    struct epoll_event ev;

    if (c->events == events) {
        return;
    }
    ev.events = events;
    ev.data.ptr = c;
    if (epoll_ctl(L.ep, EPOLL_CTL_MOD, c->fd, &ev) == 0) {
        c->events = events;
    }
}

/* Close the connection: close_notify first unless the peer is gone or
 * ends the connection itself (c->quiet).  Closing the fd takes it out of
 * the epoll set. */
static void
conn_close(conn_t *c)
{
    if (c->ssl) {
        if (!c->quiet) {
            ERR_clear_error();
            SSL_shutdown(c->ssl);
        }
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->state = ST_IDLE;
    c->events = 0;
}

/* Queue the slot for its next request, while the load phases last: it
 * starts from the main loop, never from inside a failing call. */
static void
slot_restart(conn_t *c)
{
    if (loading(now_us()) && !c->queued) {
        c->queued = 1;
        L.pending[L.npending++] = c;
    }
}

static int
conn_fail(conn_t *c, const char *kind)
{
    if (in_window(now_us())) {
        count_error(kind);
    }
    c->quiet = 1;
    c->active = 0;
    conn_close(c);
    slot_restart(c);
    return STEP_DEAD;
}

static const char *
sys_why(int err)
{
    switch (err) {
    case 0:            return "connection closed";
    case ECONNRESET:   return "connection reset";
    case ECONNREFUSED: return "connection refused";
    case EPIPE:        return "broken pipe";
    case ETIMEDOUT:    return "timed out";
    default:           return strerror(err);
    }
}

/* "what: why" as an error kind */
static int
conn_fail2(conn_t *c, const char *what, const char *why)
{
    char kind[KIND_LEN + 1];

    snprintf(kind, sizeof kind, "%s: %s", what, why);
    return conn_fail(c, kind);
}

/* Why an SSL call failed; err from SSL_get_error, e the call's errno */
static const char *
ssl_why(int err, int e)
{
    const char *r;

    if (ERR_peek_error() != 0) {
        r = ERR_reason_error_string(ERR_peek_error());
        return r ? r : "error";
    }
    if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN) {
        return sys_why(err == SSL_ERROR_SYSCALL ? e : 0);
    }
    return "error";
}


/* ------------------------------------------------------------ plain/TLS io */

static ssize_t
io_read(conn_t *c, char *buf, size_t len, const char **why)
{
    ssize_t n;
    int     err, e;

    if (c->ssl == NULL) {
        do {
            n = read(c->fd, buf, len);
        } while (n < 0 && errno == EINTR);
        if (n >= 0) {
            return n;
        }
        if (errno == EAGAIN) {
            return IO_WANT_READ;
        }
        *why = sys_why(errno);
        return IO_ERROR;
    }
    ERR_clear_error();
    errno = 0;                      /* for SSL_ERROR_SYSCALL: this call's */
    n = SSL_read(c->ssl, buf, (int) (len > INT32_MAX ? INT32_MAX : len));
    if (n > 0) {
        return n;
    }
    e = errno;
    err = SSL_get_error(c->ssl, (int) n);
    switch (err) {
    case SSL_ERROR_WANT_READ:   return IO_WANT_READ;
    case SSL_ERROR_WANT_WRITE:  return IO_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return IO_EOF;
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && e == 0) {
        return IO_EOF;
    }
    *why = ssl_why(err, e);
    return IO_ERROR;
}

static ssize_t
io_write(conn_t *c, const char *buf, size_t len, const char **why)
{
    ssize_t n;
    int     err, e;

    if (c->ssl == NULL) {
        do {
            n = write(c->fd, buf, len);
        } while (n < 0 && errno == EINTR);
        if (n >= 0) {
            return n;
        }
        if (errno == EAGAIN) {
            return IO_WANT_WRITE;
        }
        *why = sys_why(errno);
        return IO_ERROR;
    }
    /* partial writes are on (tls_init): a retry after WANT_* passes the
     * same bytes again, as OpenSSL requires */
    ERR_clear_error();
    errno = 0;
    n = SSL_write(c->ssl, buf, (int) (len > INT32_MAX ? INT32_MAX : len));
    if (n > 0) {
        return n;
    }
    e = errno;
    err = SSL_get_error(c->ssl, (int) n);
    if (err == SSL_ERROR_WANT_READ) {
        return IO_WANT_READ;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
        return IO_WANT_WRITE;
    }
    *why = ssl_why(err, e);
    return IO_ERROR;
}


/* -------------------------------------------------------------- parser */

static void
parser_reset(conn_t *c, int connect_mode)
{
    c->ps = PS_STATUS;
    c->status = 0;
    c->connect_mode = connect_mode;
    c->http10 = c->close = c->keepalive = c->chunked = c->has_len = 0;
    c->left = 0;
    c->llen = 0;
}

/* Add bytes up to and with the next LF to c->line (a line longer than the
 * buffer keeps its start); *complete when the LF came.  Returns the bytes
 * taken.  The line ends up without its CRLF and NUL-terminated. */
static size_t
line_take(conn_t *c, const char *p, size_t n, int *complete)
{
    const char *lf = memchr(p, '\n', n);
    size_t      len = lf ? (size_t) (lf - p) : n;
    size_t      room = sizeof c->line - 1 - c->llen;
    size_t      k = len < room ? len : room;

    memcpy(c->line + c->llen, p, k);
    c->llen += k;
    *complete = lf != NULL;
    if (lf == NULL) {
        return n;
    }
    if (c->llen > 0 && c->line[c->llen - 1] == '\r') {
        c->llen--;
    }
    c->line[c->llen] = '\0';
    return len + 1;
}

/* "HTTP/1.x NNN[ reason]" */
static int
status_line(conn_t *c)
{
    const char *l = c->line;

    if (c->llen < 12 || memcmp(l, "HTTP/1.", 7) != 0
        || !isdigit((unsigned char) l[7]) || l[8] != ' '
        || !isdigit((unsigned char) l[9]) || !isdigit((unsigned char) l[10])
        || !isdigit((unsigned char) l[11]) || (l[12] && l[12] != ' '))
    {
        return PR_BAD;
    }
    c->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    if (c->status < 100) {
        return PR_BAD;
    }
    c->http10 = l[7] == '0';
    c->ps = PS_HEADER;
    return PR_MORE;
}

/* The headers that say where the response ends; the rest are skipped */
static int
header_line(conn_t *c)
{
    char               *colon = memchr(c->line, ':', c->llen);
    char               *v, *end;
    size_t              n;
    unsigned long long  len;

    if (colon == NULL) {
        /* an obsolete continuation line, or garbage */
        return c->line[0] == ' ' || c->line[0] == '\t' ? PR_MORE : PR_BAD;
    }
    n = (size_t) (colon - c->line);
    for (v = colon + 1; *v == ' ' || *v == '\t'; v++) { /* void */ }

    if (n == 14 && strncasecmp(c->line, "content-length", n) == 0) {
        if (!isdigit((unsigned char) *v)) {
            return PR_BAD;
        }
        errno = 0;
        len = strtoull(v, &end, 10);
        while (*end == ' ' || *end == '\t') {
            end++;
        }
        if (errno || *end || (c->has_len && c->left != len)) {
            return PR_BAD;
        }
        c->has_len = 1;
        c->left = len;

    } else if (n == 17 && strncasecmp(c->line, "transfer-encoding", n) == 0) {
        c->chunked |= strcasestr(v, "chunked") != NULL;

    } else if (n == 10 && strncasecmp(c->line, "connection", n) == 0) {
        c->close |= strcasestr(v, "close") != NULL;
        c->keepalive |= strcasestr(v, "keep-alive") != NULL;
    }
    return PR_MORE;
}

/* The empty line after the headers: where does the body end? */
static int
head_end(conn_t *c)
{
    int s = c->status;

    if (c->connect_mode) {
        return PR_DONE;
    }
    if (s < 200 && s != 101) {
        parser_reset(c, 0);             /* an interim 1xx: the real one next */
        return PR_MORE;
    }
    if (s == 101) {
        c->close = 1;                   /* another protocol: not ours */
    }
    if (L.head_method || s == 101 || s == 204 || s == 304) {
        return PR_DONE;
    }
    if (c->chunked) {
        c->ps = PS_CHUNK_SIZE;
        return PR_MORE;
    }
    if (c->has_len) {
        c->ps = PS_BODY;
        return c->left ? PR_MORE : PR_DONE;
    }
    c->ps = PS_EOF;                     /* the body ends with the connection */
    c->close = 1;
    return PR_MORE;
}

/* "hex[ ][;extensions]" */
static int
chunk_size(conn_t *c)
{
    const char *s = c->line;
    uint64_t    v = 0;
    int         d, digits = 0;

    for ( ;; s++, digits++) {
        if (*s >= '0' && *s <= '9') {
            d = *s - '0';
        } else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f') {
            d = (*s | 0x20) - 'a' + 10;
        } else {
            break;
        }
        if (v >> 59) {
            return PR_BAD;
        }
        v = v * 16 + (uint64_t) d;
    }
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    if (digits == 0 || (*s && *s != ';')) {
        return PR_BAD;
    }
    c->left = v;
    c->ps = v ? PS_BODY : PS_TRAILER;
    return PR_MORE;
}

/* A whole line arrived in the line-based state c->ps */
static int
line_done(conn_t *c)
{
    switch (c->ps) {
    case PS_STATUS:
        return status_line(c);
    case PS_HEADER:
        return c->llen ? header_line(c) : head_end(c);
    case PS_CHUNK_SIZE:
        return chunk_size(c);
    case PS_CHUNK_END:                  /* the CRLF after a chunk's data */
        if (c->llen) {
            return PR_BAD;
        }
        c->ps = PS_CHUNK_SIZE;
        return PR_MORE;
    default:                            /* PS_TRAILER: skip to the end */
        return c->llen ? PR_MORE : PR_DONE;
    }
}

/* Feed n bytes of response.  PR_DONE: the response ended after *used
 * bytes; PR_MORE: all were taken and more are needed. */
static int
parse(conn_t *c, const char *p, size_t n, size_t *used)
{
    size_t i = 0, k;
    int    rc, complete;

    while (i < n) {
        if (c->ps == PS_EOF) {
            i = n;
            break;
        }
        if (c->ps == PS_BODY) {
            k = n - i < c->left ? n - i : (size_t) c->left;
            i += k;
            c->left -= k;
            if (c->left) {
                break;
            }
            if (!c->chunked) {
                *used = i;
                return PR_DONE;
            }
            c->ps = PS_CHUNK_END;
            continue;
        }
        i += line_take(c, p + i, n - i, &complete);
        if (!complete) {
            break;
        }
        rc = line_done(c);
        c->llen = 0;
        if (rc != PR_MORE) {
            *used = i;
            return rc;
        }
    }
    *used = i;
    return PR_MORE;
}


/* --------------------------------------------------- connection steps */

/* After the TCP connect, or after the proxy's 200 */
static int
conn_established(conn_t *c, int tunnelled)
{
    c->off = 0;
    if (L.use_proxy && !tunnelled) {
        c->state = ST_PROXY_SEND;
    } else {
        c->state = L.url.tls ? ST_HANDSHAKE : ST_SEND;
    }
    return STEP_NEXT;
}

/* A new socket, connecting to the server or the proxy */
static int
conn_open(conn_t *c)
{
    struct epoll_event ev;
    int                fd, on = 1;
    int64_t            now = now_us();

    S.conns_total++;
    if (in_window(now)) {
        S.conns++;
    }
    fd = socket(L.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                0);
    if (fd < 0) {
        return conn_fail2(c, "socket", sys_why(errno));
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    c->fd = fd;
    c->served = 0;
    c->quiet = 0;
    c->events = EPOLLOUT;
    ev.events = EPOLLOUT;
    ev.data.ptr = c;
    if (epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        return conn_fail2(c, "epoll", sys_why(errno));
    }
    if (connect(fd, (struct sockaddr *) &L.addr, L.addrlen) == 0) {
        return conn_established(c, 0);
    }
    if (errno != EINPROGRESS) {
        return conn_fail2(c, "connect", sys_why(errno));
    }
    c->state = ST_CONNECT;
    return STEP_AGAIN;
}

/* The socket became writable (or failed) while connecting */
static int
step_connect(conn_t *c)
{
    int       err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
        err = errno;
    }
    if (err) {
        return conn_fail2(c, "connect", sys_why(err));
    }
    return conn_established(c, 0);
}

static int
step_proxy_send(conn_t *c)
{
    ssize_t n;

    while (c->off < L.creq_len) {
        n = write(c->fd, L.creq + c->off, L.creq_len - c->off);
        if (n < 0 && errno == EAGAIN) {
            want(c, EPOLLOUT);
            return STEP_AGAIN;
        }
        if (n < 0 && errno != EINTR) {
            return conn_fail2(c, "CONNECT: write", sys_why(errno));
        }
        c->off += n > 0 ? (size_t) n : 0;
    }
    c->state = ST_PROXY_RECV;
    parser_reset(c, 1);
    want(c, EPOLLIN);
    return STEP_AGAIN;
}

/* The proxy's answer: its head only.  Nothing may follow it yet: the
 * server in the tunnel speaks only after the client. */
static int
step_proxy_recv(conn_t *c)
{
    char    kind[32];
    ssize_t n;
    size_t  used;
    int     rc;

    n = read(c->fd, rbuf, sizeof rbuf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return STEP_AGAIN;
    }
    if (n <= 0) {
        return conn_fail2(c, "CONNECT", sys_why(n ? errno : 0));
    }
    rc = parse(c, rbuf, (size_t) n, &used);
    if (rc == PR_MORE) {
        return STEP_AGAIN;
    }
    if (rc == PR_BAD || used != (size_t) n) {
        return conn_fail(c, "CONNECT: bad response");
    }
    if (c->status != 200) {
        snprintf(kind, sizeof kind, "CONNECT %d", c->status);
        return conn_fail(c, kind);
    }
    return conn_established(c, 1);
}

/* Wait for what OpenSSL wants, or fail */
static int
ssl_wait(conn_t *c, int n, const char *what)
{
    int e = errno, err = SSL_get_error(c->ssl, n);

    if (err == SSL_ERROR_WANT_READ) {
        want(c, EPOLLIN);
        return STEP_AGAIN;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
        want(c, EPOLLOUT);
        return STEP_AGAIN;
    }
    return conn_fail2(c, what, ssl_why(err, e));
}

static int
step_handshake(conn_t *c)
{
    int n;

    if (c->ssl == NULL) {
        c->ssl = SSL_new(L.ctx);
        if (c->ssl == NULL || !SSL_set_fd(c->ssl, c->fd)
            || (L.sni && !SSL_set_tlsext_host_name(c->ssl, L.url.host)))
        {
            return conn_fail(c, "TLS handshake: cannot set up");
        }
        SSL_set_connect_state(c->ssl);
    }
    ERR_clear_error();
    errno = 0;
    n = SSL_connect(c->ssl);
    if (n != 1) {
        return ssl_wait(c, n, "TLS handshake");
    }
    c->state = ST_SEND;
    c->off = 0;
    return STEP_NEXT;
}

/* The request failed on a kept-alive connection before any byte of the
 * response came: the server may have closed it just then (idle timeout).
 * Send it once more on a new connection, as Go does for a GET (here for
 * any method: it is a benchmark); the latency counts from the first try. */
static int
can_retry(conn_t *c)
{
    return c->served > 0 && c->got == 0 && !c->retried;
}

static int
retry(conn_t *c)
{
    c->quiet = 1;
    conn_close(c);
    c->retried = 1;
    return conn_open(c);
}

static int
step_send(conn_t *c)
{
    const char *why = "";
    ssize_t     n;

    while (c->off < L.req_len) {
        n = io_write(c, L.req + c->off, L.req_len - c->off, &why);
        if (n == IO_WANT_READ || n == IO_WANT_WRITE) {
            want(c, n == IO_WANT_READ ? EPOLLIN : EPOLLOUT);
            return STEP_AGAIN;
        }
        if (n < 0) {
            return can_retry(c) ? retry(c) : conn_fail2(c, "write", why);
        }
        c->off += (size_t) n;
    }
    /* the response cannot be there yet: wait rather than try a read */
    c->state = ST_RECV;
    parser_reset(c, 0);
    want(c, EPOLLIN);
    return STEP_AGAIN;
}

/* The start of a request on the slot: on its connection, or on a new one */
static void
req_begin(conn_t *c, int64_t now)
{
    c->start = now;
    c->deadline = now + L.timeout;
    c->active = 1;
    c->retried = 0;
    c->got = 0;
    c->off = 0;
    if (c->fd >= 0) {
        c->state = ST_SEND;
    }
}

/* A response ended; must_close: bytes followed it that no request asked
 * for, or it ended with the connection */
static int
resp_done(conn_t *c, int must_close)
{
    int64_t now = now_us();
    int     keep;

    count_response(c, now);
    c->served++;
    c->active = 0;
    keep = !must_close && !c->close && !L.no_keepalive
           && (!c->http10 || c->keepalive);
    if (keep && loading(now)) {
        req_begin(c, now);
        return STEP_NEXT;
    }
    c->quiet = !keep;
    conn_close(c);
    slot_restart(c);
    return STEP_DEAD;
}

static int
recv_eof(conn_t *c)
{
    c->quiet = 1;
    if (c->ps == PS_EOF) {
        return resp_done(c, 1);
    }
    return can_retry(c) ? retry(c)
                        : conn_fail(c, "read: connection closed");
}

static int
step_recv(conn_t *c)
{
    const char *why = "";
    ssize_t     n;
    size_t      used;
    int         rc;

    for ( ;; ) {
        n = io_read(c, rbuf, sizeof rbuf, &why);
        if (n == IO_WANT_READ || n == IO_WANT_WRITE) {
            want(c, n == IO_WANT_READ ? EPOLLIN : EPOLLOUT);
            return STEP_AGAIN;
        }
        if (n == IO_EOF) {
            return recv_eof(c);
        }
        if (n < 0) {
            return can_retry(c) ? retry(c) : conn_fail2(c, "read", why);
        }
        c->got += (uint64_t) n;
        if (in_window(now_us())) {
            S.bytes_in += (uint64_t) n;
        }
        rc = parse(c, rbuf, (size_t) n, &used);
        if (rc == PR_BAD) {
            return conn_fail(c, "bad response");
        }
        if (rc == PR_DONE) {
            return resp_done(c, used < (size_t) n
                                || (c->ssl && SSL_pending(c->ssl) > 0));
        }
        /* nothing buffered (a short plain read; no TLS data held by
         * OpenSSL): the socket's readiness tells the rest, no need for a
         * read that returns EAGAIN */
        if (c->ssl ? !SSL_has_pending(c->ssl) : (size_t) n < sizeof rbuf) {
            want(c, EPOLLIN);
            return STEP_AGAIN;
        }
    }
}

/* Go as far as the connection can without waiting */
static void
conn_step(conn_t *c)
{
    int rc;

    do {
        switch (c->state) {
        case ST_CONNECT:    rc = step_connect(c); break;
        case ST_PROXY_SEND: rc = step_proxy_send(c); break;
        case ST_PROXY_RECV: rc = step_proxy_recv(c); break;
        case ST_HANDSHAKE:  rc = step_handshake(c); break;
        case ST_SEND:       rc = step_send(c); break;
        case ST_RECV:       rc = step_recv(c); break;
        default:            return;
        }
    } while (rc == STEP_NEXT);
}

/* Start the queued slots (from the main loop only: a slot that fails at
 * once is queued again for the next turn, never restarted recursively) */
static void
run_pending(void)
{
    conn_t **run = L.pending;
    int      i, n = L.npending;
    int64_t  now = now_us();

    L.pending = L.running;
    L.running = run;
    L.npending = 0;
    for (i = 0; i < n; i++) {
        run[i]->queued = 0;
        if (!loading(now)) {
            continue;
        }
        req_begin(run[i], now);
        if (conn_open(run[i]) == STEP_NEXT) {   /* a queued slot has no fd */
            conn_step(run[i]);
        }
    }
}

static void
sweep_timeouts(int64_t now)
{
    int i;

    for (i = 0; i < L.nconn; i++) {
        if (L.conns[i].active && now >= L.conns[i].deadline) {
            conn_fail(&L.conns[i], "timeout");
        }
    }
}


/* -------------------------------------------------------------- phases */

static void
say(const char *line)
{
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static int
active_count(void)
{
    int i, n = 0;

    for (i = 0; i < L.nconn; i++) {
        n += L.conns[i].active;
    }
    return n;
}

/* Move to the next phase when its time (or, draining, its work) is over */
static void
phase_tick(int64_t now)
{
    int i;

    if (L.phase == PH_WARM && now >= L.t_window) {
        L.win_start = now;
        L.win_stop = now + (int64_t) (L.window_s * 1e6);
        L.phase = PH_WINDOW;
        say("window");
    }
    if (L.phase == PH_WINDOW && now >= L.win_stop) {
        L.phase = PH_DRAIN;
        L.drain_stop = now + L.timeout;
        say("end");
        for (i = 0; i < L.npending; i++) {
            L.pending[i]->queued = 0;
        }
        L.npending = 0;
    }
    if (L.phase == PH_DRAIN && (now >= L.drain_stop || active_count() == 0)) {
        for (i = 0; i < L.nconn; i++) {
            L.conns[i].active = 0;
            conn_close(&L.conns[i]);
        }
        L.phase = PH_DONE;
    }
}

/* Milliseconds epoll may wait: to the next phase boundary or sweep */
static int
wait_ms(int64_t now, int64_t next_sweep)
{
    int64_t until = next_sweep;

    if (L.npending) {
        return 0;
    }
    if (L.phase == PH_WARM && L.t_window < until) {
        until = L.t_window;
    } else if (L.phase == PH_WINDOW && L.win_stop < until) {
        until = L.win_stop;
    } else if (L.phase == PH_DRAIN && L.drain_stop < until) {
        until = L.drain_stop;
    }
    return until <= now ? 0 : (int) ((until - now + 999) / 1000);
}

static void
run(void)
{
    struct epoll_event ev[EV_MAX];
    int64_t            now = now_us(), next_sweep = now + SWEEP_US;
    int                i, n;

    L.win_start = L.win_stop = INT64_MAX;
    L.t_window = now + (int64_t) (L.warmup_s * 1e6);
    L.phase = PH_WARM;
    phase_tick(now);
    for (i = 0; i < L.nconn; i++) {
        slot_restart(&L.conns[i]);
    }
    while (L.phase != PH_DONE) {
        run_pending();
        n = epoll_wait(L.ep, ev, EV_MAX, wait_ms(now_us(), next_sweep));
        for (i = 0; i < n; i++) {
            conn_step(ev[i].data.ptr);
        }
        now = now_us();
        if (now >= next_sweep) {
            sweep_timeouts(now);
            next_sweep = now + SWEEP_US;
        }
        phase_tick(now);
    }
}


/* -------------------------------------------------------------- report */

static void
json_string(const char *s)
{
    putchar('"');
    for ( ; *s; s++) {
        if (*s == '"' || *s == '\\') {
            printf("\\%c", *s);
        } else if ((unsigned char) *s < 0x20) {
            printf("\\u%04x", *s);
        } else {
            putchar(*s);
        }
    }
    putchar('"');
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

    return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least p% at or below it */
static void
json_percentile(const char *name, unsigned p)
{
    size_t rank = (p * S.nlat + 99) / 100;

    if (S.nlat == 0) {
        printf(",\"%s\":null", name);
        return;
    }
    printf(",\"%s\":%.3f", name, S.lat[(rank ? rank : 1) - 1] / 1000.0);
}

static void
report(void)
{
    const char *sep = "";
    int         i;

    qsort(S.lat, S.nlat, sizeof *S.lat, cmp_u32);
    printf("{\"seconds\":%.3f,\"requests\":%llu,\"status\":{", L.window_s,
           (unsigned long long) S.requests);
    for (i = 0; i < 1000; i++) {
        if (S.status[i]) {
            printf("%s\"%d\":%llu", sep, i, (unsigned long long) S.status[i]);
            sep = ",";
        }
    }
    printf("},\"errors\":%llu,\"error_kinds\":{",
           (unsigned long long) S.errors);
    for (i = 0, sep = ""; i <= MAX_KINDS; i++) {
        if (S.kinds[i].n) {
            printf("%s", sep);
            json_string(S.kinds[i].kind);
            printf(":%llu", (unsigned long long) S.kinds[i].n);
            sep = ",";
        }
    }
    printf("},\"rps\":%.1f", S.status[200] / L.window_s);
    json_percentile("p50_ms", 50);
    json_percentile("p90_ms", 90);
    json_percentile("p99_ms", 99);
    json_percentile("max_ms", 100);
    printf(",\"connections\":%llu,\"connections_total\":%llu,"
           "\"requests_total\":%llu,\"bytes_in\":%llu}\n",
           (unsigned long long) S.conns, (unsigned long long) S.conns_total,
           (unsigned long long) S.requests_total,
           (unsigned long long) S.bytes_in);
    fflush(stdout);
}


/* --------------------------------------------------------------- setup */

static void
usage(FILE *f)
{
    fputs(
"usage: bottle-load -c N [-z SECONDS] [-w WARMUP_SECONDS]\n"
"                   [-x http://user:pass@host:port] [-m METHOD] [-D FILE]\n"
"                   [-T CONTENT_TYPE] [-H 'Name: value']... [--no-keepalive]\n"
"                   [-t TIMEOUT_SECONDS] URL\n"
"\n"
"  URL               https://host[:port]/path (TLS, unverified) or http://\n"
"  -c N              connections, one request at a time on each\n"
"  -z SECONDS        the measured window (default 10)\n"
"  -w SECONDS        warm-up before it, not counted (default 0)\n"
"  -x URL            through this proxy's CONNECT tunnel\n"
"  -m METHOD         the request method (default GET)\n"
"  -D FILE           the request body, read once\n"
"  -T TYPE           its Content-Type (default with -D: application/json)\n"
"  -H 'Name: value'  a request header, repeatable\n"
"  --no-keepalive    a new connection (and TLS handshake) per request\n"
"  -t SECONDS        timeout per request (default 30)\n"
"\n"
"Prints \"window\" when the window starts, \"end\" when it ends, then one\n"
"line of JSON.  Exit status: 0 when it ran, 2 on bad usage, 1 when it could\n"
"not set up.\n", f);
}

/* Seconds, "1.5" or "1.5s"; zero allowed or not */
static int
parse_seconds(const char *s, int zero_ok, double *out)
{
    char   *end;
    double  v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno) {
        return -1;
    }
    if (*end == 's') {
        end++;
    }
    if (*end || !(v >= 0) || v > 1e6 || (v == 0 && !zero_ok)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* http[s]://[userinfo@]host[:port][/path]; host may be [v6] */
static int
parse_url(const char *s, url_t *u)
{
    const char *a, *end, *at, *h, *he, *p;
    size_t      hl;

    memset(u, 0, sizeof *u);
    if (strncasecmp(s, "https://", 8) == 0) {
        u->tls = 1;
        a = s + 8;
    } else if (strncasecmp(s, "http://", 7) == 0) {
        a = s + 7;
    } else {
        return -1;
    }
    end = a + strcspn(a, "/?#");
    at = memrchr(a, '@', (size_t) (end - a));
    if (at) {
        if ((size_t) (at - a) >= sizeof u->userinfo) {
            return -1;
        }
        memcpy(u->userinfo, a, (size_t) (at - a));
        a = at + 1;
    }
    h = a;
    if (*h == '[') {
        he = memchr(h, ']', (size_t) (end - h));
        if (he == NULL) {
            return -1;
        }
        p = he + 1;
        h++;
    } else {
        he = memchr(h, ':', (size_t) (end - h));
        he = he ? he : end;
        p = he;
    }
    hl = (size_t) (he - h);
    if (hl == 0 || hl >= sizeof u->host || (p < end && *p != ':')) {
        return -1;
    }
    memcpy(u->host, h, hl);
    if (p < end) {                               /* ":port" */
        if (end - p < 2 || end - p > 6
            || strspn(p + 1, "0123456789") < (size_t) (end - p - 1))
        {
            return -1;
        }
        memcpy(u->port, p + 1, (size_t) (end - p - 1));
    } else {
        strcpy(u->port, u->tls ? "443" : "80");
    }
    if (atoi(u->port) < 1 || atoi(u->port) > 65535) {
        return -1;
    }
    snprintf(u->authority, sizeof u->authority, "%.*s", (int) (end - a), a);
    snprintf(u->target, sizeof u->target, "%s%s%s:%s",
             *a == '[' ? "[" : "", u->host, *a == '[' ? "]" : "", u->port);
    u->path = *end == '\0' || *end == '#' ? "/" : end;
    u->path_len = (int) strcspn(u->path, "#");
    u->path_slash = *u->path == '?';
    return 0;
}

static int
is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1
           || inet_pton(AF_INET6, host, buf) == 1;
}

/* The command line into L; -1 on bad usage */
static int
parse_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "no-keepalive", no_argument, NULL, 'K' },
        { "help",         no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int opt;

    L.window_s = 10;
    L.timeout_s = 30;
    L.method = "GET";
    L.headers = calloc((size_t) argc, sizeof *L.headers);
    if (L.headers == NULL) {
        return -1;
    }
    while ((opt = getopt_long(argc, argv, "c:z:w:x:m:D:T:H:t:h", longs,
                              NULL)) != -1)
    {
        switch (opt) {
        case 'c':
            L.nconn = atoi(optarg);
            if (strspn(optarg, "0123456789") != strlen(optarg)
                || L.nconn < 1 || L.nconn > 100000)
            {
                return -1;
            }
            break;
        case 'z': if (parse_seconds(optarg, 0, &L.window_s)) return -1; break;
        case 'w': if (parse_seconds(optarg, 1, &L.warmup_s)) return -1; break;
        case 't': if (parse_seconds(optarg, 0, &L.timeout_s)) return -1; break;
        case 'x':
            if (parse_url(optarg, &L.proxy) || L.proxy.tls) {
                return -1;
            }
            L.use_proxy = 1;
            break;
        case 'm':
            if (*optarg == '\0' || strpbrk(optarg, " \t\r\n")) {
                return -1;
            }
            L.method = optarg;
            break;
        case 'D': L.body_file = optarg; break;
        case 'T': L.ctype = optarg; break;
        case 'H':
            if (strchr(optarg, ':') == NULL || strpbrk(optarg, "\r\n")) {
                return -1;
            }
            L.headers[L.nheaders++] = optarg;
            break;
        case 'K': L.no_keepalive = 1; break;
        case 'h': usage(stdout); exit(0);
        default:  return -1;
        }
    }
    if (L.nconn == 0 || optind != argc - 1 || parse_url(argv[optind], &L.url)
        || L.url.userinfo[0])
    {
        return -1;
    }
    L.head_method = strcmp(L.method, "HEAD") == 0;
    L.sni = L.url.tls && !is_ip_literal(L.url.host);
    L.timeout = (int64_t) (L.timeout_s * 1e6);
    return 0;
}

static int
resolve(void)
{
    const url_t     *u = L.use_proxy ? &L.proxy : &L.url;
    struct addrinfo  hints, *res;
    int              rc;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "bottle-load: cannot resolve '%s': %s\n", u->host,
                gai_strerror(rc));
        return -1;
    }
    memcpy(&L.addr, res->ai_addr, res->ai_addrlen);
    L.addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int
read_body(char **out, size_t *len)
{
    FILE   *f = fopen(L.body_file, "rb");
    char   *buf = NULL, *nbuf;
    size_t  cap = 0, n;

    *len = 0;
    if (f == NULL) {
        goto failed;
    }
    do {
        if (*len == cap) {
            cap = cap ? cap * 2 : 65536;
            nbuf = realloc(buf, cap);
            if (nbuf == NULL) {
                goto failed;
            }
            buf = nbuf;
        }
        n = fread(buf + *len, 1, cap - *len, f);
        *len += n;
    } while (n > 0);
    if (ferror(f)) {
        goto failed;
    }
    fclose(f);
    *out = buf;
    return 0;

failed:
    fprintf(stderr, "bottle-load: cannot read '%s': %s\n", L.body_file,
            strerror(errno));
    if (f) {
        fclose(f);
    }
    free(buf);
    return -1;
}

static int
has_header(const char *name)
{
    size_t n = strlen(name);
    int    i;

    for (i = 0; i < L.nheaders; i++) {
        if (strncasecmp(L.headers[i], name, n) == 0
            && L.headers[i][n] == ':')
        {
            return 1;
        }
    }
    return 0;
}

/* The request, head and body, once for the whole run */
static int
build_request(void)
{
    FILE   *f;
    char   *body = NULL;
    size_t  body_len = 0;
    int     i, m;

    if (L.body_file && read_body(&body, &body_len) < 0) {
        return -1;
    }
    f = open_memstream(&L.req, &L.req_len);
    if (f == NULL) {
        free(body);
        return -1;
    }
    fprintf(f, "%s %s%.*s HTTP/1.1\r\n", L.method, L.url.path_slash ? "/" : "",
            L.url.path_len, L.url.path);
    if (!has_header("Host")) {
        fprintf(f, "Host: %s\r\n", L.url.authority);
    }
    if (!has_header("User-Agent")) {
        fputs("User-Agent: bottle-load\r\n", f);
    }
    for (i = 0; i < L.nheaders; i++) {
        fprintf(f, "%s\r\n", L.headers[i]);
    }
    if (L.ctype || L.body_file) {
        fprintf(f, "Content-Type: %s\r\n", L.ctype ? L.ctype
                                                   : "application/json");
    }
    m = !strcmp(L.method, "POST") || !strcmp(L.method, "PUT")
        || !strcmp(L.method, "PATCH");
    if (L.body_file || m) {
        fprintf(f, "Content-Length: %zu\r\n", body_len);
    }
    if (L.no_keepalive) {
        fputs("Connection: close\r\n", f);
    }
    fputs("\r\n", f);
    fwrite(body ? body : "", 1, body_len, f);
    free(body);
    return fclose(f) == 0 ? 0 : -1;
}

/* CONNECT target, with Basic credentials when the proxy URL has them */
static int
build_connect(void)
{
    unsigned char  b64[4 * ((sizeof L.proxy.userinfo + 2) / 3) + 1];
    FILE          *f = open_memstream(&L.creq, &L.creq_len);

    if (f == NULL) {
        return -1;
    }
    fprintf(f, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", L.url.target,
            L.url.target);
    if (L.proxy.userinfo[0]) {
        EVP_EncodeBlock(b64, (const unsigned char *) L.proxy.userinfo,
                        (int) strlen(L.proxy.userinfo));
        fprintf(f, "Proxy-Authorization: Basic %s\r\n", b64);
    }
    fputs("\r\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Not verified (the bench checks chains with curl); no session cache and
 * no tickets, so every connection makes a full handshake, as hey does */
static int
tls_init(void)
{
    L.ctx = SSL_CTX_new(TLS_client_method());
    if (L.ctx == NULL) {
        fprintf(stderr, "bottle-load: SSL_CTX_new failed\n");
        return -1;
    }
    SSL_CTX_set_verify(L.ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_session_cache_mode(L.ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(L.ctx, SSL_OP_NO_TICKET
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
                        /* a body that ends with the connection may end
                         * without close_notify */
                        | SSL_OP_IGNORE_UNEXPECTED_EOF
#endif
                        );
    SSL_CTX_set_mode(L.ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                            | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* whole records in one read(); step_recv() reads until OpenSSL holds
     * nothing more, so epoll still tells when there is data */
    SSL_CTX_set_read_ahead(L.ctx, 1);
    return 0;
}

static int
setup(void)
{
    int i;

    if (resolve() < 0 || build_request() < 0
        || (L.use_proxy && build_connect() < 0)
        || (L.url.tls && tls_init() < 0))
    {
        return -1;
    }
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    L.conns = calloc((size_t) L.nconn, sizeof *L.conns);
    L.pending = calloc((size_t) L.nconn, sizeof *L.pending);
    L.running = calloc((size_t) L.nconn, sizeof *L.running);
    S.cap = 65536;
    S.lat = malloc(S.cap * sizeof *S.lat);
    if (L.ep < 0 || !L.conns || !L.pending || !L.running || !S.lat) {
        fprintf(stderr, "bottle-load: out of memory or epoll failed\n");
        return -1;
    }
    for (i = 0; i < L.nconn; i++) {
        L.conns[i].fd = -1;
    }
    return 0;
}

static void
cleanup(void)
{
    free(L.conns);
    free(L.pending);
    free(L.running);
    free(L.headers);
    free(L.req);
    free(L.creq);
    free(S.lat);
    SSL_CTX_free(L.ctx);
    if (L.ep > 0) {
        close(L.ep);
    }
}

int
main(int argc, char **argv)
{
    int rc = 0;

    if (parse_args(argc, argv) < 0) {
        usage(stderr);
        cleanup();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (setup() < 0) {
        rc = 1;
        goto done;
    }
    run();
    report();

done:
    cleanup();
    return rc;
}
