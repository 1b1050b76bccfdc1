/*
 * Blob tails of the blobs the gate fetched (docs/gitgate.md, "Appended
 * files"): the record (gg_tail.c) of each file at the tip of each of the
 * copy's branches, so that the first push appending to a file the agent
 * cloned is scanned from its delta alone, as a later one is.  Those
 * versions came from the forge: no push scan has read them.
 *
 * gitgate-cgi starts a pass (gg_tail_fill_spawn()) once a fill or a
 * refresh has fetched: a detached process at nice 19 and the lowest I/O
 * priority, so that the clone it follows keeps the CPU (a nice-0 process
 * weighs 68 times more), yet a pass on a busy machine still ends.  A
 * pass reads only the blobs that have no record, GG_TAIL_FILL_BLOB bytes
 * or fewer each, GG_TAIL_FILL_MAX bytes, GG_TAIL_FILL_RECS records and
 * GG_TAIL_FILL_SECS seconds at most; HEAD's branch first.  One pass runs per copy and at most one more waits
 * (F_OFD locks on bytes 0 and 1 of gitgate-tails.lock): a pass that
 * finds one waiting leaves, as that one reads the refs after the running
 * one.  A record is what the scan would have written reading that blob
 * (gg_tail_of()), so a push that comes before the pass has ended only
 * reads the old versions, as before.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gg_scan_int.h"


#define GG_TAIL_FILL_MAX    (512ULL << 20)  /* bytes read by a pass */
#define GG_TAIL_FILL_BLOB   (64ULL << 20)   /* a larger blob: none */
#define GG_TAIL_FILL_RECS   (GG_TAIL_SLOTS / 2)
#define GG_TAIL_FILL_SECS   120

/* linux/ioprio.h: best effort, its lowest level */
#define GG_IOPRIO_WHO_PROCESS  1
#define GG_IOPRIO_LOWEST       ((2 << 13) | 7)


typedef struct {
    gg_ctx_t            c;          /* gg_tail_of()'s scratch */
    git_odb            *odb;
    int                 fd;
    uint64_t            read;
    time_t              end;
    gg_tail_fill_t     *st;
} gg_fill_t;


static int gg_fill_lock(const char *repo, char *err, size_t errlen);
static int gg_fill_tree(const char *root, const git_tree_entry *e,
    void *data);


/* byte `at` of the lock file set to type (F_WRLCK, F_UNLCK) with cmd
 * (F_OFD_SETLK, F_OFD_SETLKW: until it is): 0, else -1 */
static int
gg_fill_setlk(int fd, off_t at, short type, int cmd)
{
    struct flock  l;

    memset(&l, 0, sizeof(l));
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = at;
    l.l_len = 1;
    return fcntl(fd, cmd, &l);
}


/*
 * The pass's turn: its descriptor once no pass runs, or -2 when another
 * pass already waits for its turn (it will read what this one would),
 * or -1
 */
static int
gg_fill_lock(const char *repo, char *err, size_t errlen)
{
    int    fd;
    char   path[4096];

    if ((size_t) snprintf(path, sizeof(path), "%s/gitgate-tails.lock", repo)
        >= sizeof(path))
    {
        snprintf(err, errlen, "the repository's path is too long");
        return -1;
    }
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }

    /* byte 0: the one waiting; byte 1: the one running */
    if (gg_fill_setlk(fd, 0, F_WRLCK, F_OFD_SETLK) != 0) {
        close(fd);
        return -2;
    }
    if (gg_fill_setlk(fd, 1, F_WRLCK, F_OFD_SETLKW) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    (void) gg_fill_setlk(fd, 0, F_UNLCK, F_OFD_SETLK);
    return fd;
}


/* one tree entry of a branch's tip: a file's record, unless it has one */
static int
gg_fill_tree(const char *root, const git_tree_entry *e, void *data)
{
    int              dec;
    size_t           len;
    gg_tail_t        t;
    gg_fill_t       *f;
    git_odb_object  *o;
    git_object_t     type;
    const git_oid   *id;
    const char      *d;

    (void) root;
    f = data;

    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB) {
        return 0;
    }
    id = git_tree_entry_id(e);
    if (gg_tail_get(f->fd, id->id, &t) != 0
        || git_odb_read_header(&len, &type, f->odb, id) != 0
        || type != GIT_OBJECT_BLOB || len < GG_TAIL_MIN
        || len > GG_TAIL_FILL_BLOB)
    {
        return 0;
    }
    if (f->read + len > GG_TAIL_FILL_MAX
        || f->st->records >= GG_TAIL_FILL_RECS || time(NULL) >= f->end)
    {
        f->st->more = 1;
        return -1;
    }
    if (git_odb_read(&o, f->odb, id) != 0) {
        return 0;
    }
    d = git_odb_object_data(o);
    len = git_odb_object_size(o);
    f->read += len;
    dec = gg_dec_wanted(d, len);
    gg_tail_of(&f->c, &t, d, len, dec);
    gg_tail_put(f->fd, id->id, &t);
    git_odb_object_free(o);
    f->st->records++;
    f->st->bytes += len;
    return 0;
}


/* one branch: 0, or 1 when the pass's budget is spent */
static int
gg_fill_ref(gg_fill_t *f, git_reference *ref)
{
    int          rc;
    git_object  *tree;

    if (git_reference_peel(&tree, ref, GIT_OBJECT_TREE) != 0) {
        return 0;
    }
    rc = git_tree_walk((git_tree *) tree, GIT_TREEWALK_PRE, gg_fill_tree, f);
    git_object_free(tree);
    return rc != 0 && f->st->more;
}


int
gg_tail_fill(const char *repo, gg_tail_fill_t *st, char *err, size_t errlen)
{
    int                       lk, rc;
    const char               *head;
    gg_fill_t                 f;
    git_reference            *ref, *h;
    git_repository           *r;
    git_reference_iterator   *it;

    memset(st, 0, sizeof(*st));
    memset(&f, 0, sizeof(f));
    f.st = st;
    f.fd = -1;
    f.end = time(NULL) + GG_TAIL_FILL_SECS;
    r = NULL;
    it = NULL;
    h = NULL;
    head = NULL;
    rc = -1;

    /* a repository first: no lock file is left in a directory that is
     * none */
    gg_git_init();
    lk = -1;
    if (git_repository_open_ext(&r, repo, GIT_REPOSITORY_OPEN_NO_SEARCH,
                                NULL) != 0
        || git_repository_odb(&f.odb, r) != 0)
    {
        snprintf(err, errlen, "cannot open the repository");
        goto cleanup;
    }

    lk = gg_fill_lock(repo, err, errlen);
    if (lk < 0) {
        st->skipped = lk == -2;
        rc = lk == -2 ? 0 : -1;
        goto cleanup;
    }
    f.fd = gg_tail_open(repo);
    if (f.fd < 0) {
        snprintf(err, errlen, "%s/gitgate-tails: %s", repo, strerror(errno));
        goto cleanup;
    }

    /* HEAD's branch first: what a clone checks out, where a push goes */
    if (git_reference_lookup(&h, r, "HEAD") == 0
        && git_reference_type(h) == GIT_REFERENCE_SYMBOLIC)
    {
        head = git_reference_symbolic_target(h);
        if (git_reference_lookup(&ref, r, head) == 0) {
            rc = gg_fill_ref(&f, ref);
            git_reference_free(ref);
            if (rc == 1) {
                rc = 0;
                goto cleanup;
            }
        }
    }

    if (git_reference_iterator_glob_new(&it, r, "refs/heads/*") != 0) {
        snprintf(err, errlen, "cannot list the branches");
        rc = -1;
        goto cleanup;
    }
    while (git_reference_next(&ref, it) == 0) {
        rc = head != NULL && strcmp(git_reference_name(ref), head) == 0
             ? 0 : gg_fill_ref(&f, ref);
        git_reference_free(ref);
        if (rc == 1) {
            break;
        }
    }
    rc = 0;

cleanup:

    git_reference_iterator_free(it);
    git_reference_free(h);
    git_odb_free(f.odb);
    git_repository_free(r);
    git_libgit2_shutdown();
    free(f.c.tmp.data);
    if (f.fd >= 0) {
        close(f.fd);
    }
    if (lk >= 0) {
        close(lk);
    }
    return rc;
}


/*
 * A pass started for repo, detached (its own session, no descriptor of
 * the caller's, standard streams on /dev/null), at nice 19 and the lowest
 * I/O priority; the caller waits only for the first fork's child
 */
void
gg_tail_fill_spawn(const char *repo)
{
    int             fd, status;
    char            err[256];
    pid_t           pid;
    gg_tail_fill_t  st;

    pid = fork();
    if (pid < 0) {
        return;
    }
    if (pid > 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            /* again */
        }
        return;
    }

    /* the first child: leaves at once, its child orphaned */
    if (setsid() < 0 || fork() != 0) {
        _exit(0);
    }

    fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        _exit(1);
    }
    (void) dup2(fd, 0);
    (void) dup2(fd, 1);
    (void) dup2(fd, 2);
    (void) syscall(SYS_close_range, 3U, ~0U, 0U);

    (void) setpriority(PRIO_PROCESS, 0, 19);
    (void) syscall(SYS_ioprio_set, GG_IOPRIO_WHO_PROCESS, 0,
                   GG_IOPRIO_LOWEST);

    _exit(gg_tail_fill(repo, &st, err, sizeof(err)) == 0 ? 0 : 1);
}
