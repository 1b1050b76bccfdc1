/*
 * The first clone of a repo through the gate (docs/gitgate.md, "First
 * clone").  While the gate's copy was never filled (no
 * gitgate-refreshed stamp) and the agent speaks protocol v2, the gate
 * does not fill the copy and then serve it: it passes the agent's
 * requests on to the forge with its own token, through its own HTTP
 * client (libcurl, gg_first_rh.c), and
 *
 *   ls-refs   answers with the forge's refs, only HEAD, refs/heads/... and
 *             refs/tags/... (what the copy would advertise);
 *   fetch     of a whole clone ("want" lines, "done", no have, shallow,
 *             filter, ...), each want one of those refs' objects: streams
 *             the forge's answer to the agent and, at the same time, the
 *             pack (sideband band 1) into `git index-pack --stdin` in the
 *             copy; once the pack is indexed, the usual refresh finds
 *             every object there and only sets the refs.
 *
 * The request the forge sees is the gate's own (never the agent's bytes
 * or headers): ofs-delta, include-tag, no-progress as the agent asked,
 * never thin-pack, packfile-uris or a server-option.  One first fill at
 * a time per repo (flock on gitgate-first.lock): concurrent first
 * clones wait for it and are then served from the filled copy.  Any
 * other fetch while the copy is empty fills it first (as before) and is
 * served from it.  A fill cut short leaves no pack (index-pack keeps a
 * pack only once it is whole) and no stamp: the next request fills again.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gg_gate.h"
#include "gg_pkt.h"
#include "gg_first_int.h"





static int gg_body_read(char **body, size_t *len, int *spill);
static int gg_body_restore(const gg_ctx_t *ctx, const char *body, size_t len,
    char *err, size_t errlen);
static int gg_ls_refs(gg_ctx_t *ctx, const gg_v2_request_t *r, char *err,
    size_t errlen);
static int gg_fetch(gg_ctx_t *ctx, const gg_v2_request_t *r,
    gg_refresh_pt refresh, char *err, size_t errlen);


int
gg_first_empty(const gg_ctx_t *ctx)
{
    char         stamp[GG_PATH_LEN + 32];
    struct stat  st;

    snprintf(stamp, sizeof(stamp), "%s/gitgate-refreshed", ctx->repo_dir);
    return stat(stamp, &st) != 0;
}


int
gg_first_v2(void)
{
    const char  *p;

    p = getenv("HTTP_GIT_PROTOCOL");
    return p != NULL && strstr(p, "version=2") != NULL;
}


/*
 * An upload-pack request while the copy is empty: 0 answered, 1 to be
 * served from the copy (filled now; the request body on stdin again),
 * -1 and err (nothing sent yet)
 */

int
gg_first_rpc(gg_ctx_t *ctx, gg_refresh_pt refresh, char *err, size_t errlen)
{
    int              fd, rc, spill;
    char             lock[GG_PATH_LEN + 32], *body;
    size_t           len;
    const char      *enc;
    gg_v2_request_t  r;

    body = NULL;
    len = 0;
    spill = 0;
    memset(&r, 0, sizeof(r));

    if (gg_forge_url(ctx, err, errlen) != 0) {
        return -1;
    }

    if (!gg_first_v2()) {
        return refresh(ctx, 1, err, errlen) == 0 ? 1 : -1;
    }

    if (gg_body_read(&body, &len, &spill) != 0) {
        snprintf(err, errlen, "failure 'request': cannot read the body");
        return -1;
    }

    enc = getenv("HTTP_CONTENT_ENCODING");

    /* a compressed body (git's are only past 1 MiB) is passed on as is */
    if (!spill && (enc == NULL || enc[0] == '\0')
        && gg_v2_request_parse(&r, body, len, err, errlen) == 0
        && r.command == GG_CMD_LS_REFS)
    {
        rc = gg_ls_refs(ctx, &r, err, errlen);
        if (rc == 0) {
            goto done;
        }

        /* nothing sent yet: served from the copy, filled first */
        fprintf(stderr, "gitgate-cgi: %s: %s; the copy is filled first\n",
                ctx->name, err);
    }

    snprintf(lock, sizeof(lock), "%s/gitgate-first.lock", ctx->repo_dir);

    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        snprintf(err, errlen, "failure '%.300s': %s", lock, strerror(errno));
        rc = -1;
        goto done;
    }

    /* held until exit: waiters go on once the copy is filled */
    if (gg_first_empty(ctx) && r.simple) {
        rc = gg_fetch(ctx, &r, refresh, err, errlen);
        if (rc == 0) {
            goto done;
        }

        if (rc < 0) {
            fprintf(stderr, "gitgate-cgi: %s: %s; the copy is filled "
                    "first\n", ctx->name, err);
        }
    }

    rc = 1;
    if (gg_first_empty(ctx) && refresh(ctx, 1, err, errlen) != 0) {
        rc = -1;
    }

    if (rc == 1 && gg_body_restore(ctx, body, len, err, errlen) != 0) {
        rc = -1;
    }

done:

    gg_v2_request_free(&r);
    free(body);
    return rc;
}


/*
 * The body, up to GG_FIRST_BODY_MAX bytes; *spill when there is more
 * (left on stdin, then passed on unread)
 */

static int
gg_body_read(char **body, size_t *len, int *spill)
{
    char     *b;
    size_t    n;
    ssize_t   r;

    b = malloc(GG_FIRST_BODY_MAX + 1);
    if (b == NULL) {
        return -1;
    }

    n = 0;
    while (n < GG_FIRST_BODY_MAX + 1) {
        r = read(0, b + n, GG_FIRST_BODY_MAX + 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            free(b);
            return -1;
        }
        if (r == 0) {
            break;
        }
        n += (size_t) r;
    }

    *spill = n > GG_FIRST_BODY_MAX;
    *body = b;
    *len = n;
    return 0;
}


/* stdin again: what was read, then the rest of the agent's body */

static int
gg_body_restore(const gg_ctx_t *ctx, const char *body, size_t len, char *err,
    size_t errlen)
{
    int      fd;
    char     buf[65536];
    ssize_t  r;

    fd = open(ctx->conf.dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || gg_first_write(fd, body, len) != 0) {
        goto failed;
    }

    for ( ;; ) {
        r = read(0, buf, sizeof(buf));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            goto failed;
        }
        if (r == 0) {
            break;
        }
        if (gg_first_write(fd, buf, (size_t) r) != 0) {
            goto failed;
        }
    }

    if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) != 0) {
        goto failed;
    }

    close(fd);
    return 0;

failed:

    snprintf(err, errlen, "failure 'request body': %s", strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}


/* ls-refs: the forge's answer, only the refs the copy would have */

static int
gg_ls_refs(gg_ctx_t *ctx, const gg_v2_request_t *r, char *err,
    size_t errlen)
{
    int          type, rc, keep;
    char        *req, *ans, *line, *p;
    size_t       len, size, i, dlen, rawlen, alen, asize;
    gg_rh_t     *rh;
    gg_seen_t   cache;
    const char  *d, *raw, *oid, *peeled;

    memset(&cache, 0, sizeof(cache));
    size = GG_FIRST_BODY_MAX + 64;
    req = malloc(size);
    rh = malloc(sizeof(*rh));
    ans = NULL;
    alen = 0;
    asize = 0;

    if (req == NULL || rh == NULL) {
        free(req);
        free(rh);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    len = 0;
    rc = gg_pkt_add(req, size, &len, "command=ls-refs\n", 16);
    rc |= gg_pkt_add(req, size, &len, NULL, 1);
    if (r->symrefs) {
        rc |= gg_pkt_add(req, size, &len, "symrefs\n", 8);
    }
    if (r->peel) {
        rc |= gg_pkt_add(req, size, &len, "peel\n", 5);
    }
    if (r->unborn) {
        rc |= gg_pkt_add(req, size, &len, "unborn\n", 7);
    }
    for (i = 0; i < r->nprefixes && rc == 0; i++) {
        line = malloc(r->prefix_lens[i] + 16);
        if (line == NULL) {
            rc = -1;
            break;
        }
        memcpy(line, "ref-prefix ", 11);
        memcpy(line + 11, r->prefixes[i], r->prefix_lens[i]);
        line[11 + r->prefix_lens[i]] = '\n';
        rc |= gg_pkt_add(req, size, &len, line, r->prefix_lens[i] + 12);
        free(line);
    }
    rc |= gg_pkt_add(req, size, &len, NULL, 0);

    if (rc != 0) {
        snprintf(err, errlen, "failure 'ls-refs': request too large");
        free(req);
        free(rh);
        return -1;
    }

    if (gg_rh_open(ctx, rh, err, errlen) != 0) {
        free(req);
        free(rh);
        return -1;
    }

    rc = -1;

    if (gg_rh_send(rh, req, len) != 0) {
        snprintf(err, errlen, "failure 'ls-refs': the forge's transport "
                 "went away");
        goto done;
    }

    /* the whole answer before a byte goes out: a refusal stays possible */
    for (i = 0; ; i++) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            snprintf(err, errlen, "failure 'ls-refs': the forge's answer "
                     "is cut short or malformed");
            goto done;
        }

        if (type == GG_PKT_END) {
            break;
        }

        if (type == GG_PKT_DATA) {
            keep = gg_ls_refs_line(d, dlen, &oid, &peeled);
            if (keep < 0 || i >= GG_FIRST_REFS_MAX) {
                snprintf(err, errlen, "failure 'ls-refs': a malformed "
                         "line from the forge, or too many refs");
                goto done;
            }
            if (keep == 0) {
                continue;
            }
            gg_seen_add(&cache, oid);
            gg_seen_add(&cache, peeled);
        }

        if (alen + rawlen > asize) {
            asize = (alen + rawlen) * 2 + 4096;
            p = realloc(ans, asize);
            if (p == NULL) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            ans = p;
        }
        memcpy(ans + alen, raw, rawlen);
        alen += rawlen;
    }

    gg_seen_write(ctx, &cache);

    printf("Status: 200 OK\r\nContent-Type: application/"
           "x-git-upload-pack-result\r\nCache-Control: no-cache\r\n\r\n");
    fflush(stdout);
    gg_first_write(1, ans, alen);
    rc = 0;

done:

    gg_rh_close(rh);
    free(rh);
    free(req);
    free(ans);
    free(cache.oids);
    return rc;
}


/*
 * fetch: 0 answered (the copy filled, or a failure logged), 1 not for
 * this path (a want outside heads and tags: served from the copy, which
 * refuses it), -1 and err before anything was sent
 */

static int
gg_fetch(gg_ctx_t *ctx, const gg_v2_request_t *r, gg_refresh_pt refresh,
    char *err, size_t errlen)
{
    int           type, rc, ip_in, ip_out, status, inpack, broken, logfd,
                  packfd;
    char         *req, *oids, line[64], gdir[GG_PATH_LEN + 32],
                  pack[GG_PATH_LEN + 32];
    size_t        n, i, len, size, dlen, rawlen;
    pid_t         ip_pid, pid;
    size_t        got;
    ssize_t       nr;
    gg_rh_t      *rh;
    gg_out_t     *o;
    const char   *d, *raw, *args[4];

    rh = malloc(sizeof(*rh));
    o = malloc(sizeof(*o));
    size = r->nwants * (GG_PKT_OID_HEX + 10) + 256;
    req = malloc(size);
    oids = NULL;
    ip_pid = -1;
    ip_in = ip_out = -1;
    logfd = packfd = -1;

    if (rh == NULL || o == NULL || req == NULL) {
        free(rh);
        free(o);
        free(req);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (gg_rh_open(ctx, rh, err, errlen) != 0) {
        free(rh);
        free(o);
        free(req);
        return -1;
    }

    rc = -1;

    /*
     * nothing beyond the grant: each want one of the served refs'
     * objects, as the agent's ls-refs just listed them (the gate's own
     * record of the forge's answer, GG_FIRST_CACHE_AGE seconds at most),
     * or as the forge lists them now
     */
    n = 0;
    if (gg_seen_read(ctx, &oids, &n) != 0 || !gg_wants_in(r, oids, n)) {
        free(oids);
        oids = NULL;

        if (gg_allowed(rh, &oids, &n, err, errlen) != 0) {
            goto done;
        }

        if (!gg_wants_in(r, oids, n)) {
            rc = 1;
            goto done;
        }
    }

    len = 0;
    rc = gg_pkt_add(req, size, &len, "command=fetch\n", 14);
    rc |= gg_pkt_add(req, size, &len, NULL, 1);
    if (r->ofs_delta) {
        rc |= gg_pkt_add(req, size, &len, "ofs-delta\n", 10);
    }
    if (r->include_tag) {
        rc |= gg_pkt_add(req, size, &len, "include-tag\n", 12);
    }
    if (r->no_progress) {
        rc |= gg_pkt_add(req, size, &len, "no-progress\n", 12);
    }
    for (i = 0; i < r->nwants; i++) {
        memcpy(line, "want ", 5);
        memcpy(line + 5, r->wants[i], GG_PKT_OID_HEX);
        line[5 + GG_PKT_OID_HEX] = '\n';
        rc |= gg_pkt_add(req, size, &len, line, 6 + GG_PKT_OID_HEX);
    }
    rc |= gg_pkt_add(req, size, &len, "done\n", 5);
    rc |= gg_pkt_add(req, size, &len, NULL, 0);

    if (rc != 0) {
        snprintf(err, errlen, "failure 'fetch': request too large");
        rc = -1;
        goto done;
    }

    rc = -1;

    /*
     * the pack goes to <copy>/gitgate-first.pack as it streams, and is
     * indexed once the agent is answered (two cores are not shared with
     * the copy's index-pack while the agent waits); index-pack's stderr,
     * and the gate's own once the agent is answered, go to
     * <copy>/gitgate-first.log: fcgiwrap ends the response only when
     * stdout and stderr are both closed
     */
    snprintf(gdir, sizeof(gdir), "%s/gitgate-first.log", ctx->repo_dir);
    logfd = open(gdir, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    snprintf(pack, sizeof(pack), "%s/gitgate-first.pack", ctx->repo_dir);
    packfd = open(pack, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (logfd < 0 || packfd < 0) {
        snprintf(err, errlen, "failure '%.300s': %s",
                 logfd < 0 ? gdir : pack, strerror(errno));
        rc = -1;
        goto done;
    }

    if (gg_rh_send(rh, req, len) != 0) {
        snprintf(err, errlen, "failure 'fetch': the forge's transport "
                 "went away");
        goto done;
    }

    /* a roomy pipe: the agent reads at its pace */
    fcntl(1, F_SETPIPE_SZ, GG_FIRST_PIPE);

    /* from here on the agent has an answer: failures are only logged */
    signal(SIGPIPE, SIG_IGN);
    rc = 0;
    o->fd = 1;
    o->gone = 0;
    o->len = 0;
    inpack = 0;
    broken = 0;

    printf("Status: 200 OK\r\nContent-Type: application/"
           "x-git-upload-pack-result\r\nCache-Control: no-cache\r\n\r\n");
    fflush(stdout);

    for ( ;; ) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            snprintf(err, errlen, "failure 'fetch': the forge's answer is "
                     "cut short or malformed");
            broken = 1;
            break;
        }

        if (type == GG_PKT_END) {
            break;
        }

        gg_out(o, raw, rawlen);

        if (type != GG_PKT_DATA) {
            if (type == GG_PKT_FLUSH) {
                gg_out_flush(o);
            }
            inpack = 0;
            continue;
        }

        if (!inpack) {
            if (dlen >= 8 && memcmp(d, "packfile", 8) == 0
                && (dlen == 8 || (dlen == 9 && d[8] == '\n')))
            {
                inpack = 1;
            } else {
                /* a section the gate did not ask for */
                broken = 1;
            }
            continue;
        }

        if (dlen == 0 || d[0] == 3) {
            broken = 1;
        } else if (d[0] == 1 && packfd >= 0
                   && gg_first_write(packfd, d + 1, dlen - 1) != 0)
        {
            broken = 1;
        }
    }

    /* the agent is answered; the copy's pack is finished after it */
    gg_out_flush(o);
    close(1);
    dup2(logfd, 2);
    gg_rh_close(rh);

    /*
     * fcgiwrap ends the agent's response once this process is gone:
     * the pack's indexing and the refresh go on in a child, which keeps
     * the first-fill lock (an flock stays with the open file)
     */
    pid = fork();
    if (pid > 0) {
        _exit(0);
    }
    if (pid == 0) {
        setsid();
    }

    if (!broken) {
        err[0] = '\0';
        args[0] = "index-pack";
        args[1] = "--stdin";
        args[2] = NULL;
        snprintf(gdir, sizeof(gdir), "%s", ctx->repo_dir);

        if (gg_git_spawn(&ctx->conf, gdir, NULL, args, &ip_in, &ip_out,
                         &ip_pid, err, errlen) != 0
            || gg_first_copy(packfd, ip_in) != 0)
        {
            if (err[0] == '\0') {
                snprintf(err, errlen, "failure 'index-pack': %s",
                         strerror(errno));
            }
            broken = 1;
        }
    }

    if (ip_in >= 0) {
        close(ip_in);
        ip_in = -1;
    }

    /* "pack\t<hash>\n" once the pack and its index are kept, nothing
     * on a failure */
    got = 0;
    for ( ;; ) {
        if (ip_out < 0) {
            break;
        }
        nr = read(ip_out, line + got, sizeof(line) - 1 - got);
        if (nr < 0 && errno == EINTR) {
            continue;
        }
        if (nr <= 0) {
            break;
        }
        got += (size_t) nr;
        if (got == sizeof(line) - 1) {
            break;
        }
    }
    line[got] = '\0';
    if (ip_out >= 0) {
        close(ip_out);
        ip_out = -1;
    }

    if (ip_pid > 0) {
        while (waitpid(ip_pid, &status, 0) < 0 && errno == EINTR) {
            /* again */
        }
    }
    ip_pid = -1;

    close(packfd);
    packfd = -1;
    unlink(pack);

    if (broken) {
        fprintf(stderr, "gitgate-cgi: %s: %s\n", ctx->name, err);
        goto done;
    }

    if (got < 5 + GG_PKT_OID_HEX || memcmp(line, "pack\t", 5) != 0
        || !gg_pkt_oid(line + 5, got - 5))
    {
        fprintf(stderr, "gitgate-cgi: %s: failure 'index-pack': the "
                "forge's pack was not kept\n", ctx->name);
        goto done;
    }

    if (refresh(ctx, 1, err, errlen) != 0) {
        fprintf(stderr, "gitgate-cgi: %s: %s\n", ctx->name, err);
    }

done:

    if (ip_in >= 0) {
        close(ip_in);
    }
    if (ip_out >= 0) {
        close(ip_out);
    }
    if (ip_pid > 0) {
        kill(ip_pid, SIGTERM);
        waitpid(ip_pid, &status, 0);
    }
    gg_rh_close(rh);
    if (logfd >= 0) {
        close(logfd);
    }
    if (packfd >= 0) {
        close(packfd);
        unlink(pack);
    }
    free(rh);
    free(o);
    free(req);
    free(oids);
    return rc;
}