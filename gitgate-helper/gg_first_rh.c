/*
 * The first clone's transport (gg_first_int.h): git's own HTTP client,
 * `git remote-http(s) <url> <url>`, in "stateless-connect
 * git-upload-pack" mode (protocol v2: each request a POST, each answer
 * ending with a 0002 response-end), with the forge's token as gg_git()
 * hands it; and the small helpers gg_first.c shares with it.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gg_gate.h"
#include "gg_pkt.h"
#include "gg_first_int.h"


/* the forge's heads and tags (tips and peeled tags), sorted */

int
gg_allowed(gg_rh_t *rh, char **oids, size_t *n, char *err, size_t errlen)
{
    int          type, keep;
    char        *p;
    size_t       dlen, rawlen, size;
    const char  *d, *raw, *oid, *peeled;

    static const char  req[] = "0014command=ls-refs\n" "0001" "0009peel\n"
                               "001bref-prefix refs/heads/\n"
                               "001aref-prefix refs/tags/\n" "0000";

    *oids = NULL;
    *n = 0;
    size = 0;

    if (gg_rh_send(rh, req, sizeof(req) - 1) != 0) {
        snprintf(err, errlen, "failure 'ls-refs': the forge's transport "
                 "went away");
        return -1;
    }

    for ( ;; ) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            snprintf(err, errlen, "failure 'ls-refs': the forge's answer "
                     "is cut short or malformed");
            return -1;
        }

        if (type == GG_PKT_END) {
            break;
        }

        if (type != GG_PKT_DATA) {
            continue;
        }

        keep = gg_ls_refs_line(d, dlen, &oid, &peeled);
        if (keep < 0 || *n + 2 > 2 * GG_FIRST_REFS_MAX) {
            snprintf(err, errlen, "failure 'ls-refs': a malformed line "
                     "from the forge, or too many refs");
            return -1;
        }

        if (keep == 0 || oid == NULL) {
            continue;
        }

        if (*n + 2 > size) {
            size = size * 2 + 64;
            p = realloc(*oids, size * GG_PKT_OID_HEX);
            if (p == NULL) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            *oids = p;
        }

        memcpy(*oids + (*n)++ * GG_PKT_OID_HEX, oid, GG_PKT_OID_HEX);
        if (peeled) {
            memcpy(*oids + (*n)++ * GG_PKT_OID_HEX, peeled, GG_PKT_OID_HEX);
        }
    }

    if (*n) {
        qsort(*oids, *n, GG_PKT_OID_HEX, gg_first_oid_cmp);
    }

    return 0;
}


int
gg_first_oid_cmp(const void *a, const void *b)
{
    return memcmp(a, b, GG_PKT_OID_HEX);
}


/* `git remote-http(s) <url> <url>`, stateless-connect git-upload-pack */

int
gg_rh_open(gg_ctx_t *ctx, gg_rh_t *rh, char *err, size_t errlen)
{
    int          type;
    char        *nl, cmd[32];
    size_t       dlen, rawlen;
    const char  *args[4], *d, *raw;

    static const char  sc[] = "stateless-connect git-upload-pack\n";

    rh->pid = -1;
    rh->in = rh->out = -1;
    rh->pos = rh->len = 0;

    if (strncmp(ctx->url, "https://", 8) == 0) {
        snprintf(cmd, sizeof(cmd), "remote-https");
    } else if (strncmp(ctx->url, "http://", 7) == 0) {
        snprintf(cmd, sizeof(cmd), "remote-http");
    } else {
        snprintf(err, errlen, "failure '%s': not an http(s) forge", ctx->name);
        return -1;
    }

    args[0] = cmd;
    args[1] = ctx->url;
    args[2] = ctx->url;
    args[3] = NULL;

    if (gg_git_spawn(&ctx->conf, NULL, ctx->forge.token, args, &rh->in,
                     &rh->out, &rh->pid, err, errlen) != 0)
    {
        return -1;
    }

    if (gg_first_write(rh->in, sc, sizeof(sc) - 1) != 0) {
        goto failed;
    }

    /* "\n": connected; "fallback\n": not protocol v2 */
    for ( ;; ) {
        nl = memchr(rh->buf + rh->pos, '\n', rh->len - rh->pos);
        if (nl) {
            break;
        }
        if (gg_rh_fill(rh) != 0) {
            goto failed;
        }
    }

    if (nl != rh->buf + rh->pos) {
        goto failed;
    }
    rh->pos++;

    /* the capability advertisement, up to its flush */
    for ( ;; ) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            goto failed;
        }
        if (type == GG_PKT_FLUSH) {
            return 0;
        }
    }

failed:

    snprintf(err, errlen, "failure '%s': the forge does not answer "
             "protocol v2", ctx->name);
    gg_rh_close(rh);
    return -1;
}


void
gg_rh_close(gg_rh_t *rh)
{
    int  status;

    if (rh->in >= 0) {
        close(rh->in);
        rh->in = -1;
    }
    if (rh->out >= 0) {
        close(rh->out);
        rh->out = -1;
    }
    if (rh->pid > 0) {
        while (waitpid(rh->pid, &status, 0) < 0 && errno == EINTR) {
            /* again */
        }
        rh->pid = -1;
    }
}


int
gg_rh_fill(gg_rh_t *rh)
{
    ssize_t  r;

    if (rh->pos && rh->pos == rh->len) {
        rh->pos = rh->len = 0;

    } else if (rh->pos > GG_FIRST_BUF / 2) {
        memmove(rh->buf, rh->buf + rh->pos, rh->len - rh->pos);
        rh->len -= rh->pos;
        rh->pos = 0;
    }

    if (rh->len == GG_FIRST_BUF) {
        return -1;
    }

    for ( ;; ) {
        r = read(rh->out, rh->buf + rh->len, GG_FIRST_BUF - rh->len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        rh->len += (size_t) r;
        return 0;
    }
}


/* the next pkt-line; its bytes valid until the next call */

int
gg_rh_pkt(gg_rh_t *rh, int *type, const char **d, size_t *dlen,
    const char **raw, size_t *rawlen)
{
    long  n;

    for ( ;; ) {
        n = gg_pkt_next(rh->buf + rh->pos, rh->len - rh->pos, type, d, dlen);
        if (n < 0) {
            return -1;
        }
        if (n > 0) {
            *raw = rh->buf + rh->pos;
            *rawlen = (size_t) n;
            rh->pos += (size_t) n;
            return 0;
        }
        if (gg_rh_fill(rh) != 0) {
            return -1;
        }
    }
}


int
gg_rh_send(gg_rh_t *rh, const char *req, size_t len)
{
    return gg_first_write(rh->in, req, len);
}


/* a pkt-line of s[0, slen); s NULL: 0000 (slen 0) or 0001 (slen 1) */

int
gg_pkt_add(char *buf, size_t size, size_t *len, const char *s, size_t slen)
{
    if (s == NULL) {
        if (size - *len < 4) {
            return -1;
        }
        memcpy(buf + *len, slen ? "0001" : "0000", 4);
        *len += 4;
        return 0;
    }

    if (slen + 4 > GG_PKT_MAX || size - *len < slen + 5) {
        return -1;
    }

    snprintf(buf + *len, 5, "%04zx", slen + 4);
    memcpy(buf + *len + 4, s, slen);
    *len += slen + 4;
    return 0;
}


void
gg_out(gg_out_t *o, const char *p, size_t len)
{
    if (o->len + len > sizeof(o->buf)) {
        gg_out_flush(o);
    }

    if (len > sizeof(o->buf)) {
        if (!o->gone && gg_first_write(o->fd, p, len) != 0) {
            o->gone = 1;
        }
        return;
    }

    memcpy(o->buf + o->len, p, len);
    o->len += len;
}


void
gg_out_flush(gg_out_t *o)
{
    if (o->len && !o->gone && gg_first_write(o->fd, o->buf, o->len) != 0) {
        o->gone = 1;
    }
    o->len = 0;
}


int
gg_first_write(int fd, const char *p, size_t len)
{
    ssize_t  w;

    while (len) {
        w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        len -= (size_t) w;
    }

    return 0;
}


/* the objects of the refs an ls-refs answer listed: gitgate-first.refs */

void
gg_seen_add(gg_seen_t *c, const char *oid)
{
    char  *p;

    if (oid == NULL || c->failed) {
        return;
    }

    if (c->n == c->size) {
        c->size = c->size * 2 + 64;
        p = realloc(c->oids, c->size * GG_PKT_OID_HEX);
        if (p == NULL) {
            c->failed = 1;
            return;
        }
        c->oids = p;
    }

    memcpy(c->oids + c->n++ * GG_PKT_OID_HEX, oid, GG_PKT_OID_HEX);
}


void
gg_seen_write(const gg_ctx_t *ctx, gg_seen_t *c)
{
    int   fd;
    char  path[GG_PATH_LEN + 32], tmp[GG_PATH_LEN + 64];

    if (c->failed || c->n == 0) {
        return;
    }

    qsort(c->oids, c->n, GG_PKT_OID_HEX, gg_first_oid_cmp);

    snprintf(path, sizeof(path), "%s/gitgate-first.refs", ctx->repo_dir);
    snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long) getpid());

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) {
        return;
    }

    if (gg_first_write(fd, c->oids, c->n * GG_PKT_OID_HEX) != 0
        || rename(tmp, path) != 0)
    {
        unlink(tmp);
    }

    close(fd);
}


int
gg_seen_read(const gg_ctx_t *ctx, char **oids, size_t *n)
{
    int          fd;
    char         path[GG_PATH_LEN + 32];
    size_t       i;
    time_t       now;
    ssize_t      r;
    struct stat  st;

    *oids = NULL;
    *n = 0;

    snprintf(path, sizeof(path), "%s/gitgate-first.refs", ctx->repo_dir);

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }

    now = time(NULL);

    if (fstat(fd, &st) != 0 || st.st_size <= 0
        || st.st_size % GG_PKT_OID_HEX != 0
        || st.st_size > 2 * GG_FIRST_REFS_MAX * GG_PKT_OID_HEX
        || st.st_mtime > now || now - st.st_mtime > GG_FIRST_CACHE_AGE)
    {
        close(fd);
        return -1;
    }

    *oids = malloc((size_t) st.st_size);
    if (*oids == NULL) {
        close(fd);
        return -1;
    }

    for (i = 0; i < (size_t) st.st_size; i += (size_t) r) {
        r = read(fd, *oids + i, (size_t) st.st_size - i);
        if (r <= 0) {
            close(fd);
            free(*oids);
            *oids = NULL;
            return -1;
        }
    }

    close(fd);

    /* sorted hex ids: anything else, and it is not used */
    for (i = 0; i < (size_t) st.st_size; i += GG_PKT_OID_HEX) {
        if (!gg_pkt_oid(*oids + i, GG_PKT_OID_HEX)
            || (i && memcmp(*oids + i - GG_PKT_OID_HEX, *oids + i,
                            GG_PKT_OID_HEX) > 0))
        {
            free(*oids);
            *oids = NULL;
            return -1;
        }
    }

    *n = (size_t) st.st_size / GG_PKT_OID_HEX;
    return 0;
}


int
gg_wants_in(const gg_v2_request_t *r, const char *oids, size_t n)
{
    size_t  i;

    for (i = 0; i < r->nwants; i++) {
        if (n == 0 || bsearch(r->wants[i], oids, n, GG_PKT_OID_HEX,
                              gg_first_oid_cmp) == NULL)
        {
            return 0;
        }
    }

    return 1;
}

