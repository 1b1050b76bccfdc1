/*
 * audit forward's targets (bottlectl_chain.h): a file (appended, fsync'd,
 * rotated by size), syslog (RFC 5424 over a unix datagram socket or UDP)
 * or an HTTP(S) endpoint (one POST of the batch's lines, acknowledged by
 * a 2xx).  A batch is NUL-free text, one record per line.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bottlectl_chain.h"


static int bottlectl_out_file(bottlectl_out_t *o, const char *batch,
    size_t len);
static int bottlectl_out_write(int fd, const char *p, size_t len);
static int bottlectl_out_rotate(bottlectl_out_t *o);
static int bottlectl_out_syslog(bottlectl_out_t *o, const char *batch,
    size_t len);
static int bottlectl_out_http(bottlectl_out_t *o, const char *batch,
    size_t len);
static size_t bottlectl_out_discard(char *p, size_t size, size_t n,
    void *data);


int
bottlectl_out_open(bottlectl_out_t *o, const char *to)
{
    int                  fd;
    char                *colon;
    const char          *p;
    struct addrinfo      hints, *ai;
    struct sockaddr_un   sun;

    o->fd = -1;

    if (strncmp(to, "file:", 5) == 0 && to[5] != '\0') {
        o->kind = BOTTLECTL_OUT_FILE;
        o->path = to + 5;
        return 0;
    }

    if (strncmp(to, "http://", 7) == 0 || strncmp(to, "https://", 8) == 0) {
        o->kind = BOTTLECTL_OUT_HTTP;
        o->url = to;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        return 0;
    }

    if (strncmp(to, "syslog:unix:", 12) == 0) {
        p = to + 12;

        if (strlen(p) == 0 || strlen(p) >= sizeof(sun.sun_path)) {
            bottlectl_error("invalid syslog socket '%s'", p);
            return -1;
        }

        memset(&sun, 0, sizeof(sun));
        sun.sun_family = AF_UNIX;
        memcpy(sun.sun_path, p, strlen(p));

        fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        if (fd == -1 || connect(fd, (struct sockaddr *) &sun, sizeof(sun))
                        != 0)
        {
            bottlectl_error("cannot connect to the syslog socket %s: %s", p,
                            strerror(errno));
            if (fd != -1) {
                close(fd);
            }
            return -1;
        }

        o->kind = BOTTLECTL_OUT_SYSLOG;
        o->fd = fd;
        return 0;
    }

    if (strncmp(to, "syslog:udp:", 11) == 0) {
        snprintf(o->host, sizeof(o->host), "%s", to + 11);
        colon = strrchr(o->host, ':');

        if (colon == NULL || colon == o->host || colon[1] == '\0') {
            bottlectl_error("invalid syslog address '%s': HOST:PORT",
                            to + 11);
            return -1;
        }

        *colon = '\0';

        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_DGRAM;

        if (getaddrinfo(o->host, colon + 1, &hints, &ai) != 0) {
            bottlectl_error("cannot resolve the syslog address '%s'",
                            to + 11);
            return -1;
        }

        fd = socket(ai->ai_family, SOCK_DGRAM, 0);
        if (fd == -1 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            bottlectl_error("cannot reach syslog at %s: %s", to + 11,
                            strerror(errno));
            if (fd != -1) {
                close(fd);
            }
            freeaddrinfo(ai);
            return -1;
        }

        freeaddrinfo(ai);

        if (gethostname(o->host, sizeof(o->host)) != 0) {
            strcpy(o->host, "-");
        }

        o->host[sizeof(o->host) - 1] = '\0';
        o->kind = BOTTLECTL_OUT_SYSLOG;
        o->fd = fd;
        return 0;
    }

    bottlectl_error("invalid --to '%s': file:PATH, syslog:unix:PATH, "
                    "syslog:udp:HOST:PORT, http(s)://...", to);
    return -1;
}


void
bottlectl_out_close(bottlectl_out_t *o)
{
    if (o->fd != -1) {
        close(o->fd);
        o->fd = -1;
    }
}


/* the batch delivered and acknowledged: 0; else -1 after a line */

int
bottlectl_out_send(bottlectl_out_t *o, const char *batch, size_t len)
{
    switch (o->kind) {

    case BOTTLECTL_OUT_FILE:
        return bottlectl_out_file(o, batch, len);

    case BOTTLECTL_OUT_SYSLOG:
        return bottlectl_out_syslog(o, batch, len);

    default:
        return bottlectl_out_http(o, batch, len);
    }
}


/*
 * Appended line by line into chunks: before a line that would take the
 * file past --max-size, what is written is fsync'd and the file rotated
 * (a line longer than the bound gets a file of its own).
 */

static int
bottlectl_out_file(bottlectl_out_t *o, const char *batch, size_t len)
{
    int                  fd;
    size_t               off, chunk, line;
    const char          *nl;
    struct stat          st;
    unsigned long long   size;

    off = 0;

    while (off < len) {
        size = stat(o->path, &st) == 0 ? (unsigned long long) st.st_size : 0;

        /* the lines that fit */

        for (chunk = 0; off + chunk < len; chunk += line) {
            nl = memchr(batch + off + chunk, '\n', len - off - chunk);
            line = nl ? (size_t) (nl - (batch + off + chunk)) + 1
                      : len - off - chunk;

            if (o->max_size && size + chunk + line > o->max_size
                && size + chunk > 0)
            {
                break;
            }
        }

        if (chunk == 0) {
            if (bottlectl_out_rotate(o) != 0) {
                return -1;
            }
            continue;
        }

        fd = open(o->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd == -1) {
            bottlectl_error("cannot open %s: %s", o->path, strerror(errno));
            return -1;
        }

        if (bottlectl_out_write(fd, batch + off, chunk) != 0
            || fsync(fd) != 0)
        {
            bottlectl_error("cannot write %s: %s", o->path, strerror(errno));
            close(fd);
            return -1;
        }

        close(fd);
        off += chunk;
    }

    return 0;
}


static int
bottlectl_out_write(int fd, const char *p, size_t len)
{
    size_t   off;
    ssize_t  n;

    for (off = 0; off < len; off += (size_t) n) {
        n = write(fd, p + off, len - off);
        if (n < 0 && errno == EINTR) {
            n = 0;
            continue;
        }
        if (n <= 0) {
            return -1;
        }
    }

    return 0;
}


/* PATH becomes PATH.N, N one more than the highest there */

static int
bottlectl_out_rotate(bottlectl_out_t *o)
{
    int          fd;
    char         to[4200], dir[4096];
    unsigned     i;
    struct stat  st;

    for (i = 1; i < 1000000; i++) {
        snprintf(to, sizeof(to), "%s.%u", o->path, i);
        if (stat(to, &st) != 0) {
            break;
        }
    }

    if (rename(o->path, to) != 0) {
        bottlectl_error("cannot rotate %s: %s", o->path, strerror(errno));
        return -1;
    }

    snprintf(dir, sizeof(dir), "%s", o->path);

    fd = open(dirname(dir), O_RDONLY | O_CLOEXEC);
    if (fd != -1) {
        (void) fsync(fd);
        close(fd);
    }

    return 0;
}


/* one RFC 5424 message per line: facility local0, severity info */

static int
bottlectl_out_syslog(bottlectl_out_t *o, const char *batch, size_t len)
{
    char         *msg, now[BOTTLE_AUDIT_TIME_LEN];
    size_t        n, hlen;
    const char   *p, *nl, *end;
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    if (bottle_audit_time(now, sizeof(now), (int64_t) ts.tv_sec * 1000
                                            + ts.tv_nsec / 1000000)
        != 0)
    {
        strcpy(now, "-");
    }

    end = batch + len;

    for (p = batch; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            nl = end;
        }

        n = (size_t) (nl - p);
        msg = malloc(n + 512);
        if (msg == NULL) {
            bottlectl_error("out of memory");
            return -1;
        }

        hlen = (size_t) snprintf(msg, 512, "<134>1 %s %s bottlectl %ld audit"
                                 " - ", now, o->host[0] ? o->host : "-",
                                 (long) getpid());
        memcpy(msg + hlen, p, n);

        if (send(o->fd, msg, hlen + n, 0) != (ssize_t) (hlen + n)) {
            bottlectl_error("cannot send to syslog: %s", strerror(errno));
            free(msg);
            return -1;
        }

        free(msg);
    }

    return 0;
}


static int
bottlectl_out_http(bottlectl_out_t *o, const char *batch, size_t len)
{
    long                 status;
    CURL                *c;
    CURLcode             rc;
    struct curl_slist   *h;

    c = curl_easy_init();
    if (c == NULL) {
        bottlectl_error("out of memory");
        return -1;
    }

    h = curl_slist_append(NULL, "Content-Type: application/x-ndjson");

    curl_easy_setopt(c, CURLOPT_URL, o->url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, batch);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bottlectl_out_discard);

    rc = curl_easy_perform(c);
    status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);

    curl_slist_free_all(h);
    curl_easy_cleanup(c);

    if (rc != CURLE_OK) {
        bottlectl_error("cannot POST to %s: %s", o->url,
                        curl_easy_strerror(rc));
        return -1;
    }

    if (status < 200 || status > 299) {
        bottlectl_error("%s answered %ld: not acknowledged", o->url, status);
        return -1;
    }

    return 0;
}


static size_t
bottlectl_out_discard(char *p, size_t size, size_t n, void *data)
{
    (void) p;
    (void) data;

    return size * n;
}
