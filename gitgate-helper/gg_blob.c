/*
 * git-gate's blob reader (gg_blob.h): `git cat-file --batch` as a child,
 * "<oid>\n" on its stdin, "<oid> blob <size>\n<bytes>\n" back.  Its
 * answers are read as untrusted: bounded, checked against the request,
 * never waited on for more than its timeout (GG_BLOB_TIMEOUT_MS).
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gg_blob.h"


extern char **environ;


int
gg_blob_header(uint64_t *size, const char *line, size_t len,
    const char *hex, uint64_t max)
{
    size_t       i, tlen;
    uint64_t     n;
    const char  *p, *end, *type;

    end = line + len;

    if (len < GG_BLOB_HEXSZ + 1
        || memcmp(line, hex, GG_BLOB_HEXSZ) != 0
        || line[GG_BLOB_HEXSZ] != ' ')
    {
        return -1;
    }

    p = line + GG_BLOB_HEXSZ + 1;
    if ((size_t) (end - p) == 7 && memcmp(p, "missing", 7) == 0) {
        return 1;
    }

    type = p;
    while (p < end && *p != ' ') {
        p++;
    }
    tlen = (size_t) (p - type);
    if (p == end || tlen == 0) {
        return -1;
    }
    p++;

    if (p == end) {
        return -1;
    }
    n = 0;
    for (i = 0; p + i < end; i++) {
        if (p[i] < '0' || p[i] > '9' || i >= 19) {
            return -1;
        }
        n = n * 10 + (uint64_t) (p[i] - '0');
    }

    if (tlen != 4 || memcmp(type, "blob", 4) != 0) {
        return 2;
    }
    if (n > max) {
        return 3;
    }
    *size = n;
    return 0;
}


void
gg_blob_reader_init(gg_blob_reader_t *br, const char *repo,
    const char *quarantine)
{
    memset(br, 0, sizeof(*br));
    br->repo = repo;
    br->quarantine = quarantine;
    br->fd = -1;
    br->timeout_ms = GG_BLOB_TIMEOUT_MS;
}


void
gg_blob_reader_close(gg_blob_reader_t *br)
{
    if (br->fd >= 0) {
        close(br->fd);
        br->fd = -1;
    }
    if (br->pid > 0) {
        /* its stdin is closed; a child that would not end is killed */
        kill(br->pid, SIGKILL);
        while (waitpid(br->pid, NULL, 0) < 0 && errno == EINTR) {
            /* again */
        }
        br->pid = 0;
    }
    br->rpos = 0;
    br->rlen = 0;
}


/*
 * The child's environment: the caller's without git's repository
 * variables, then the objects as receive-pack's hook sees them (the
 * quarantine as the object directory, the repository's as an alternate),
 * and no replace refs (libgit2's walk does not follow them either).
 */
static int
gg_blob_env(char ***out, char **vars, const gg_blob_reader_t *br)
{
    size_t        n, i, k;
    char        **env;
    static const char *drop[] = { "GIT_DIR=", "GIT_OBJECT_DIRECTORY=",
                                  "GIT_ALTERNATE_OBJECT_DIRECTORIES=",
                                  "GIT_NO_REPLACE_OBJECTS=",
                                  "GIT_WORK_TREE=", "GIT_INDEX_FILE=",
                                  "GIT_COMMON_DIR=", "GIT_NAMESPACE=" };

    for (n = 0; environ[n] != NULL; n++) {
        /* count */
    }

    env = calloc(n + 5, sizeof(char *));
    if (env == NULL) {
        return -1;
    }

    k = 0;
    for (i = 0; i < n; i++) {
        size_t  d;
        int     skip;

        skip = 0;
        for (d = 0; d < sizeof(drop) / sizeof(drop[0]); d++) {
            if (strncmp(environ[i], drop[d], strlen(drop[d])) == 0) {
                skip = 1;
                break;
            }
        }
        if (!skip) {
            env[k++] = environ[i];
        }
    }

    vars[0] = NULL;
    vars[1] = NULL;
    vars[2] = NULL;

    if (asprintf(&vars[0], "GIT_DIR=%s", br->repo) < 0) {
        vars[0] = NULL;
        goto fail;
    }
    env[k++] = vars[0];

    if (br->quarantine != NULL && *br->quarantine != '\0') {
        if (asprintf(&vars[1], "GIT_OBJECT_DIRECTORY=%s", br->quarantine)
            < 0)
        {
            vars[1] = NULL;
            goto fail;
        }
        if (asprintf(&vars[2], "GIT_ALTERNATE_OBJECT_DIRECTORIES=%s/objects",
                     br->repo)
            < 0)
        {
            vars[2] = NULL;
            goto fail;
        }
        env[k++] = vars[1];
        env[k++] = vars[2];
    }
    env[k++] = "GIT_NO_REPLACE_OBJECTS=1";
    env[k] = NULL;

    *out = env;
    return 0;

fail:

    free(vars[0]);
    free(vars[1]);
    free(vars[2]);
    free(env);
    return -1;
}


static int
gg_blob_start(gg_blob_reader_t *br, char *err, size_t errlen)
{
    int                          rc, sv[2];
    char                       **env, *vars[3];
    posix_spawn_file_actions_t   fa;
    static char                 *argv[] = { "git", "cat-file", "--batch",
                                            NULL };

    if (gg_blob_env(&env, vars, br) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errlen, "failure 'git cat-file': %s", strerror(errno));
        free(vars[0]);
        free(vars[1]);
        free(vars[2]);
        free(env);
        return -1;
    }

    rc = -1;
    if (posix_spawn_file_actions_init(&fa) == 0) {
        if (posix_spawn_file_actions_adddup2(&fa, sv[1], 0) == 0
            && posix_spawn_file_actions_adddup2(&fa, sv[1], 1) == 0
            /* its complaints would reach the pusher through the hook */
            && posix_spawn_file_actions_addopen(&fa, 2, "/dev/null",
                                                O_WRONLY, 0)
               == 0)
        {
            rc = posix_spawnp(&br->pid, "git", &fa, NULL, argv, env);
        }
        posix_spawn_file_actions_destroy(&fa);
    }

    close(sv[1]);
    free(vars[0]);
    free(vars[1]);
    free(vars[2]);
    free(env);

    if (rc != 0) {
        br->pid = 0;
        close(sv[0]);
        snprintf(err, errlen, "failure 'git cat-file': cannot start it");
        return -1;
    }

    br->fd = sv[0];
    br->rpos = 0;
    br->rlen = 0;
    return 0;
}


static int64_t
gg_blob_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* waits for the child to be readable or writable, until the deadline */
static int
gg_blob_wait(gg_blob_reader_t *br, short ev, char *err, size_t errlen)
{
    int            n;
    int64_t        left;
    struct pollfd  p;

    p.fd = br->fd;
    p.events = ev;

    do {
        left = br->deadline - gg_blob_now();
        n = left > 0 ? poll(&p, 1, (int) left) : 0;
    } while (n < 0 && errno == EINTR);

    if (n == 0) {
        snprintf(err, errlen, "failure 'git cat-file': a file not read "
                 "in %d s", (br->timeout_ms + 999) / 1000);
        return -1;
    }
    if (n < 0) {
        snprintf(err, errlen, "failure 'git cat-file': %s", strerror(errno));
        return -1;
    }
    return 0;
}


static int
gg_blob_send(gg_blob_reader_t *br, const char *p, size_t len, char *err,
    size_t errlen)
{
    ssize_t  n;

    while (len > 0) {
        if (gg_blob_wait(br, POLLOUT, err, errlen) != 0) {
            return -1;
        }
        n = send(br->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            snprintf(err, errlen, "failure 'git cat-file': it ended");
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


/* up to len bytes into p (the buffered ones first); 0 or -1 */
static int
gg_blob_recv(gg_blob_reader_t *br, char *p, size_t len, char *err,
    size_t errlen)
{
    size_t   k;
    ssize_t  n;

    while (len > 0) {
        if (br->rpos < br->rlen) {
            k = br->rlen - br->rpos;
            k = k < len ? k : len;
            memcpy(p, br->rbuf + br->rpos, k);
            br->rpos += k;
            p += k;
            len -= k;
            continue;
        }

        if (gg_blob_wait(br, POLLIN, err, errlen) != 0) {
            return -1;
        }

        /* a large remainder goes straight to its place */
        if (len >= sizeof(br->rbuf)) {
            n = recv(br->fd, p, len, MSG_DONTWAIT);
        } else {
            n = recv(br->fd, br->rbuf, sizeof(br->rbuf), MSG_DONTWAIT);
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            snprintf(err, errlen, "failure 'git cat-file': it ended");
            return -1;
        }
        if (len >= sizeof(br->rbuf)) {
            p += n;
            len -= (size_t) n;
        } else {
            br->rpos = 0;
            br->rlen = (size_t) n;
        }
    }
    return 0;
}


/* the header line, without its '\n', into line (at most max bytes) */
static int
gg_blob_line(gg_blob_reader_t *br, char *line, size_t max, size_t *len,
    char *err, size_t errlen)
{
    size_t  n;

    for (n = 0; n < max; n++) {
        if (gg_blob_recv(br, line + n, 1, err, errlen) != 0) {
            return -1;
        }
        if (line[n] == '\n') {
            *len = n;
            return 0;
        }
    }
    snprintf(err, errlen, "failure 'git cat-file': an answer's line is "
             "too long");
    return -1;
}


int
gg_blob_read(gg_blob_t *out, gg_blob_reader_t *br, const char *hex,
    char *err, size_t errlen)
{
    int        rc;
    char       req[GG_BLOB_HEXSZ + 1], line[128], *d, nl;
    size_t     len, cap;
    uint64_t   size;

    /* started on the first blob (a fuzz target hands its own fd) */
    if (br->fd < 0 && gg_blob_start(br, err, errlen) != 0) {
        return -1;
    }

    memcpy(req, hex, GG_BLOB_HEXSZ);
    req[GG_BLOB_HEXSZ] = '\n';
    br->deadline = gg_blob_now() + br->timeout_ms;

    if (gg_blob_send(br, req, sizeof(req), err, errlen) != 0
        || gg_blob_line(br, line, sizeof(line), &len, err, errlen) != 0)
    {
        goto fail;
    }

    size = 0;
    rc = gg_blob_header(&size, line, len, hex, GG_BLOB_MAX);
    switch (rc) {
    case 0:
        break;
    case 1:
        snprintf(err, errlen, "object %.12s is missing", hex);
        goto fail;
    case 2:
        snprintf(err, errlen, "object %.12s is not a file", hex);
        goto fail;
    case 3:
        snprintf(err, errlen, "a file (object %.12s) is over %llu MB, the "
                 "most git-gate scans", hex,
                 (unsigned long long) (GG_BLOB_MAX >> 20));
        goto fail;
    default:
        snprintf(err, errlen, "failure 'git cat-file': an answer that is "
                 "not one");
        goto fail;
    }

    /* one byte more, never a zero-sized malloc */
    if (out->cap < size + 1) {
        cap = (size_t) size + 1;
        d = realloc(out->data, cap);
        if (d == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        out->data = d;
        out->cap = cap;
    }

    if (gg_blob_recv(br, out->data, (size_t) size, err, errlen) != 0
        || gg_blob_recv(br, &nl, 1, err, errlen) != 0)
    {
        goto fail;
    }
    if (nl != '\n') {
        snprintf(err, errlen, "failure 'git cat-file': an answer that is "
                 "not one");
        goto fail;
    }

    out->len = (size_t) size;
    return 0;

fail:

    gg_blob_reader_close(br);
    return -1;
}
