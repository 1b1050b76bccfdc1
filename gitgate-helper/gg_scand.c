/*
 * git-gate's resident push scanner (gg_scand.h, docs/gitgate.md "The
 * resident scanner"): gitgate-cgi --scand GITGATE_DIR for the gate's
 * hook, gitgate-scan --scand DIR for gitgate-scan's.  Started by the hook
 * client when its socket is absent; one per directory (a lock held for
 * its life); exits after GITGATE_SCAND_IDLE seconds (GG_SCAND_IDLE)
 * without a request, or at the first request after its program file
 * changed (a new install).
 *
 * It loads the libraries and reads the rule databases once; per request
 * it checks the peer (same uid), forks, and the child reads the request
 * (bounded, gg_scand_msg_parse()), checks its paths, takes the client's
 * stdin, stdout and stderr, environment and directory, and runs the
 * hook's own code.  The child answers the client itself: the scanner
 * never waits for a scan, and a scan that crashes or grows takes only
 * its child with it.  The bottles' policies and compiled secrets a child
 * offers are kept for the next pushes (gg_scand_cache.c).
 *
 * A child stays, warm, for its bottle's next pushes (gg_scand_warm()):
 * it listens on <dir>/w-ID while it waits for one, and runs them one
 * after another in its own process, its pages mapped and its caches
 * filled.  Only the same bottle's (one adversary): every request's bottle
 * is checked.  It leaves after the idle time, a push that grew its peak
 * RSS by GG_SCAND_WARM_RSS_KB, GG_SCAND_WARM_PUSHES pushes, or a new
 * install; a push that finds it busy (not listening) goes to the scanner.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <git2.h>

#include "gg_scan.h"
#include "gg_scand.h"
#include "gg_scand_run.h"


/* scans at once (warm children included); a request over it is closed
 * (the client scans itself); a child stays warm only while fewer than
 * half of them run */
#define GG_SCAND_CHILDREN  64
/* seconds a child waits for its request */
#define GG_SCAND_RECV_TIMEOUT  10
/*
 * A warm child leaves after a push that grew its peak RSS by more than
 * this (KB) or a quarter of the push's memory budget: a next push may
 * use what malloc() keeps of it before its budget (the growth of the
 * peak) counts.  And after this many pushes.
 */
#define GG_SCAND_WARM_RSS_KB   (256 * 1024)
#define GG_SCAND_WARM_PUSHES   1000


typedef struct {
    const char         *root;
    const char         *dir;
    gg_scand_run_pt     run;
    bottle_scan_db_t   *db;
    int                 idle;
    uid_t               uid;
    struct stat         exe0;
} gg_scand_conf_t;


static int gg_scand_listen(const char *dir, int *lock);
static int gg_scand_bind(const char *path);
static int gg_scand_changed(const struct stat *exe0);
static int gg_scand_peer(int c, uid_t uid);
static void gg_scand_child(int c, const gg_scand_conf_t *cf, int warm);
static int gg_scand_push(int c, const gg_scand_conf_t *cf, char *bottle,
    long *keep_kb);
static int gg_scand_warm(const gg_scand_conf_t *cf, const char *bottle,
    int *lock, pid_t scanner);
static long gg_scand_peak(void);
static long long gg_scand_us(const struct timeval *a,
    const struct timeval *b);
static int gg_scand_recv(int c, char *buf, size_t *len, int fd[3]);
static int gg_scand_paths(const gg_scand_msg_t *m, const char *root,
    char *cwd, char *err, size_t errlen);
static int gg_scand_under(const char *path, const char *dir, int equal);
static const char *gg_scand_env(const gg_scand_msg_t *m, const char *name);
static int gg_scand_say(int c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


int
gg_scand_serve(const char *root, const char *dir, gg_scand_run_pt run,
    bottle_scan_db_t *db)
{
    int                 l, c, lock, n, idle, alive;
    char               *v;
    pid_t               pid;
    time_t              last;
    uid_t               uid;
    socklen_t           sl;
    struct pollfd       pfd[2];
    gg_scand_conf_t     cf;
    struct sockaddr_un  sa;

    idle = GG_SCAND_IDLE;
    v = getenv("GITGATE_SCAND_IDLE");
    if (v && atoi(v) >= 1 && atoi(v) <= 3600) {
        idle = atoi(v);
    }

    if (stat("/proc/self/exe", &cf.exe0) != 0) {
        return 1;
    }

    umask(077);
    signal(SIGPIPE, SIG_IGN);

    l = gg_scand_listen(dir, &lock);
    if (l < 0 || gg_scand_cache_init() != 0) {
        return 1;
    }

    /* loaded once, inherited by every child (the matcher: a child that
     * finds none compiles its own) */
    git_libgit2_init();
    (void) gg_scan_preload(NULL, 0);

    /*
     * The start-up's freed memory given back: a child's malloc() would
     * reuse it, each page a copy of the scanner's (copy on write) where a
     * fresh one is only zeroed
     */
    malloc_trim(0);

    uid = geteuid();
    alive = 0;
    last = time(NULL);

    cf.root = root;
    cf.dir = dir;
    cf.run = run;
    cf.db = db;
    cf.idle = idle;
    cf.uid = uid;

    for ( ;; ) {
        while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
            alive--;
        }

        pfd[0].fd = l;
        pfd[0].events = POLLIN;
        pfd[1].fd = gg_scand_cache_fd();
        pfd[1].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].revents = 0;
        n = poll(pfd, 2, 1000);

        if (n <= 0) {
            if (time(NULL) - last >= idle && alive == 0) {
                break;
            }
            continue;
        }

        /* a child's policy, parsed and compiled for the next pushes */
        if (pfd[1].revents & POLLIN) {
            gg_scand_cache_offer(db);
        }
        if (!(pfd[0].revents & POLLIN)) {
            continue;
        }

        sl = sizeof(sa);
        c = accept4(l, (struct sockaddr *) &sa, &sl, SOCK_CLOEXEC);
        if (c < 0) {
            continue;
        }
        last = time(NULL);

        if (!gg_scand_peer(c, uid)) {
            close(c);
            continue;
        }

        /* a new install: this program is not the one the client expects;
         * the client, answered nothing, scans itself */
        if (gg_scand_changed(&cf.exe0)) {
            close(c);
            break;
        }

        if (alive >= GG_SCAND_CHILDREN) {
            close(c);
            continue;
        }

        pid = fork();
        if (pid == 0) {
            close(l);
            close(lock);
            gg_scand_cache_child(db);
            gg_scand_child(c, &cf, alive < GG_SCAND_CHILDREN / 2);
            _exit(1);
        }
        if (pid > 0) {
            alive++;
        }
        close(c);
    }

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
    unlink(sa.sun_path);
    close(l);
    close(lock);
    return 0;
}


/* <dir>/sock, listening; the life lock in *lock; -1 when another
 * scanner holds the directory, or on any failure */

static int
gg_scand_listen(const char *dir, int *lock)
{
    int                 l;
    char                path[PATH_MAX];
    struct stat         st;
    struct sockaddr_un  sa;

    if ((mkdir(dir, 0700) != 0 && errno != EEXIST)
        || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || st.st_uid != geteuid() || (st.st_mode & 077))
    {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/lock", dir);
    *lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (*lock < 0) {
        return -1;
    }
    if (flock(*lock, LOCK_EX | LOCK_NB) != 0) {
        close(*lock);
        return -1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir)
        >= sizeof(sa.sun_path))
    {
        close(*lock);
        return -1;
    }

    l = gg_scand_bind(sa.sun_path);
    if (l < 0) {
        close(*lock);
        return -1;
    }

    return l;
}


/* path listened on (its lock the caller's: any socket there is a dead
 * one's), or -1 */

static int
gg_scand_bind(const char *path)
{
    int                 l;
    struct sockaddr_un  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path)
        >= sizeof(sa.sun_path))
    {
        return -1;
    }

    unlink(sa.sun_path);

    l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (l < 0
        || bind(l, (struct sockaddr *) &sa, sizeof(sa)) != 0
        || listen(l, 64) != 0)
    {
        if (l >= 0) {
            close(l);
        }
        return -1;
    }

    return l;
}


/* c's peer runs as uid */

static int
gg_scand_peer(int c, uid_t uid)
{
    socklen_t     sl;
    struct ucred  cred;

    sl = sizeof(cred);
    return getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &sl) == 0
           && cred.uid == uid;
}


/* this program's file is not the one started (a new install) */

static int
gg_scand_changed(const struct stat *exe0)
{
    struct stat  exe;

    return stat("/proc/self/exe", &exe) != 0 || exe.st_ino != exe0->st_ino
           || exe.st_dev != exe0->st_dev
           || exe.st_mtim.tv_sec != exe0->st_mtim.tv_sec
           || exe.st_mtim.tv_nsec != exe0->st_mtim.tv_nsec;
}


/*
 * A child: its first push, then, warm, its bottle's next ones (the file's
 * comment), each with the client's descriptors, environment and directory
 * let go after it
 */

static void
gg_scand_child(int c, const gg_scand_conf_t *cf, int warm)
{
    int     n, lock, nul;
    long    peak0, keep;
    char    bottle[GG_SCAND_WARM_ID_MAX + 1];
    pid_t   scanner;

    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    scanner = getppid();

    bottle[0] = '\0';
    lock = -1;
    peak0 = gg_scand_peak();
    if (warm) {
        gg_scan_keep(1);
    }

    for (n = 1; /* void */; n++) {
        keep = GG_SCAND_WARM_RSS_KB;
        if (gg_scand_push(c, cf, bottle, &keep) < 0 && n == 1) {
            _exit(1);
        }
        close(c);

        nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nul < 0 || dup2(nul, 0) != 0 || dup2(nul, 1) != 1
            || dup2(nul, 2) != 2 || chdir("/") != 0)
        {
            _exit(1);
        }
        close(nul);
        __fpurge(stdin);
        clearerr(stdin);

        if (!warm || bottle[0] == '\0' || n >= GG_SCAND_WARM_PUSHES
            || gg_scand_peak() - peak0 > keep)
        {
            _exit(0);
        }

        c = gg_scand_warm(cf, bottle, &lock, scanner);
        if (c < 0) {
            _exit(0);
        }
    }
}


/* a child's CPU at its last report (zero: since it was forked) */
static struct rusage  gg_self0, gg_kids0;


/*
 * One push on c: its exit status; -1 when nothing ran (a bad request, or
 * another bottle's than a warm child's).  bottle: the warm child's, or
 * "" before its first push, set then when the bottle can have one.
 * *keep_kb lowered to a quarter of the push's memory budget.
 */

static int
gg_scand_push(int c, const gg_scand_conf_t *cf, char *bottle,
    long *keep_kb)
{
    int             fd[3], i, rc, delay;
    char            buf[GG_SCAND_MSG_MAX + 1], cwd[PATH_MAX], err[512],
                    name[GG_SCAND_WARM_ID_MAX + 8];
    char           *argv[GG_SCAND_ARGS_MAX + 2];
    size_t          len;
    const char     *v, *b;
    struct rusage   self, kids;
    gg_scand_msg_t  m;

    if (gg_scand_recv(c, buf, &len, fd) != 0) {
        return -1;
    }

    b = NULL;
    if (gg_scand_msg_parse(&m, buf, len, err, sizeof(err)) != 0
        || gg_scand_paths(&m, cf->root, cwd, err, sizeof(err)) != 0
        || ((b = gg_scand_bottle(m.mode, (int) m.nargs, m.args,
                                 gg_scand_env(&m, "GITGATE_BOTTLE")))
            == NULL && bottle[0] != '\0')
        || (bottle[0] != '\0' && strcmp(b, bottle) != 0))
    {
        /* nothing ran: the client scans itself, or asks the scanner */
        for (i = 0; i < 3; i++) {
            close(fd[i]);
        }
        return -1;
    }

    if (bottle[0] == '\0' && gg_scand_warm_name(name, sizeof(name), b) == 0) {
        memcpy(bottle, b, strlen(b) + 1);
    }

    /*
     * "started" not delivered: the client is gone (it gave up waiting,
     * 30 s, and refused the push; or it never waited).  Nothing runs: the
     * gate's hook would go on to forward a push git already refused.
     */
    if (gg_scand_say(c, "started %ld", (long) getpid()) != 0) {
        for (i = 0; i < 3; i++) {
            close(fd[i]);
        }
        return -1;
    }

    /* past "started", a failure ends the process: the client refuses */
    for (i = 0; i < 3; i++) {
        if (dup2(fd[i], i) != i) {
            _exit(1);
        }
        if (fd[i] > 2) {
            close(fd[i]);
        }
    }
    clearerr(stdin);

    umask(m.umask);
    if (chdir(cwd) != 0 || clearenv() != 0) {
        _exit(1);
    }
    for (i = 0; i < (int) m.nenv; i++) {
        if (putenv((char *) m.env[i]) != 0) {
            _exit(1);
        }
    }
    if (cf->root && setenv("GITGATE_DIR", cf->root, 1) != 0) {
        _exit(1);
    }

    /* tests only: time to kill the scanner or this child mid-push */
    v = getenv("GITGATE_SCAND_TEST_DELAY");
    delay = v ? atoi(v) : 0;
    if (delay > 0 && delay <= 60) {
        sleep((unsigned) delay);
    }

    argv[0] = (char *) (cf->root ? "pre-receive" : "gitgate-scan");
    for (i = 0; i < (int) m.nargs; i++) {
        argv[i + 1] = (char *) m.args[i];
    }
    argv[m.nargs + 1] = NULL;

    rc = cf->run((int) m.nargs + 1, argv, cf->db);

    fflush(stdout);
    fflush(stderr);

    if (gg_scan_memory_kb() / 4 < (uint64_t) *keep_kb) {
        *keep_kb = (long) (gg_scan_memory_kb() / 4);
    }

    /* the variables point into buf: gone with this push */
    clearenv();

    /* the CPU since the last push's report (this child's start for its
     * first): the scan and all it costs around it, the wait for this
     * push (a new socket, the request read) included */
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);

    (void) gg_scand_say(c, "done %d %lld %lld", rc & 0xff,
                        gg_scand_us(&self.ru_utime, &gg_self0.ru_utime)
                        + gg_scand_us(&kids.ru_utime, &gg_kids0.ru_utime),
                        gg_scand_us(&self.ru_stime, &gg_self0.ru_stime)
                        + gg_scand_us(&kids.ru_stime, &gg_kids0.ru_stime));
    gg_self0 = self;
    gg_kids0 = kids;

    return rc & 0xff;
}


/*
 * A warm child's wait for its bottle's next push on <dir>/w-ID (its lock
 * <dir>/w-ID.lock held for the child's life): the connection, from this
 * user, or -1 (the idle time over, another child holds the bottle's
 * lock, a new install, the scanner gone: a warm child lives no longer
 * than its scanner).  Not listening while a push runs: the pushes that
 * come meanwhile go to the scanner.
 */

static int
gg_scand_warm(const gg_scand_conf_t *cf, const char *bottle, int *lock,
    pid_t scanner)
{
    int            l, c, n, waited;
    char           name[GG_SCAND_WARM_ID_MAX + 8], path[PATH_MAX];
    struct pollfd  pfd;

    if (gg_scand_warm_name(name, sizeof(name), bottle) != 0
        || (size_t) snprintf(path, sizeof(path), "%s/%s.lock", cf->dir, name)
           >= sizeof(path))
    {
        return -1;
    }

    if (*lock < 0) {
        *lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (*lock < 0) {
            return -1;
        }
        if (flock(*lock, LOCK_EX | LOCK_NB) != 0) {
            return -1;
        }
    }

    path[strlen(path) - (sizeof(".lock") - 1)] = '\0';
    if (getppid() != scanner) {
        return -1;
    }
    l = gg_scand_bind(path);
    if (l < 0) {
        return -1;
    }

    c = -1;
    waited = 0;
    for ( ;; ) {
        pfd.fd = l;
        pfd.events = POLLIN;
        pfd.revents = 0;
        n = poll(&pfd, 1, 1000);
        if (n == 0) {
            if (++waited >= cf->idle || getppid() != scanner) {
                break;
            }
            continue;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }

        c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            continue;
        }
        if (!gg_scand_peer(c, cf->uid)) {
            close(c);
            c = -1;
            continue;
        }
        break;
    }

    /* busy or gone: the connections still waiting are reset (their
     * clients ask the scanner) */
    unlink(path);
    close(l);

    if (c >= 0 && gg_scand_changed(&cf->exe0)) {
        close(c);
        c = -1;
    }
    return c;
}


/* the peak RSS, KB */

static long
gg_scand_peak(void)
{
    struct rusage  ru;

    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}


static long long
gg_scand_us(const struct timeval *a, const struct timeval *b)
{
    return (long long) (a->tv_sec - b->tv_sec) * 1000000
           + (a->tv_usec - b->tv_usec);
}


/* one request and exactly three descriptors, within the bounds */

static int
gg_scand_recv(int c, char *buf, size_t *len, int fd[3])
{
    int              i, n;
    ssize_t          k;
    struct iovec     iov;
    struct msghdr    mh;
    struct cmsghdr  *cm;
    struct timeval   tv;
    union {
        char            b[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr  align;
    } ctl;

    tv.tv_sec = GG_SCAND_RECV_TIMEOUT;
    tv.tv_usec = 0;
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

    iov.iov_base = buf;
    iov.iov_len = GG_SCAND_MSG_MAX;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);

    k = recvmsg(c, &mh, MSG_CMSG_CLOEXEC);
    if (k <= 0) {
        return -1;
    }

    n = 0;
    for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS
            && cm->cmsg_len == CMSG_LEN(3 * sizeof(int)) && n == 0)
        {
            memcpy(fd, CMSG_DATA(cm), 3 * sizeof(int));
            n = 3;
        } else if (cm->cmsg_level == SOL_SOCKET
                   && cm->cmsg_type == SCM_RIGHTS)
        {
            /* not ours to keep: the child exits with them closed */
            n = -1;
        }
    }

    if (n != 3 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (n == 3) {
            for (i = 0; i < 3; i++) {
                close(fd[i]);
            }
        }
        return -1;
    }

    buf[k] = '\0';
    *len = (size_t) k;
    return 0;
}


/*
 * The gate's hook runs in the repo's copy, <root>/FORGE/OWNER/REPO.git as
 * GITGATE_FORGE, _OWNER, _REPO name it; the new objects are in its
 * objects/ (the quarantine).  Resolved, every path must be there.
 */

static int
gg_scand_paths(const gg_scand_msg_t *m, const char *root, char *cwd,
    char *err, size_t errlen)
{
    char         want[PATH_MAX], rroot[PATH_MAX], objs[PATH_MAX + 16],
                 path[PATH_MAX], one[PATH_MAX];
    size_t       i, n;
    const char  *forge, *owner, *repo, *v, *p, *e;

    static const char  *under[] = { "GIT_QUARANTINE_PATH",
        "GIT_OBJECT_DIRECTORY", NULL };

    if (realpath(m->cwd, cwd) == NULL) {
        snprintf(err, errlen, "no such directory");
        return -1;
    }

    if (root == NULL) {
        /* gitgate-scan's: any repository of this user's */
        return strcmp(m->mode, "scan") == 0 ? 0 : -1;
    }

    if (strcmp(m->mode, "gate") != 0 || m->nargs != 0) {
        snprintf(err, errlen, "not the gate's hook");
        return -1;
    }

    forge = gg_scand_env(m, "GITGATE_FORGE");
    owner = gg_scand_env(m, "GITGATE_OWNER");
    repo = gg_scand_env(m, "GITGATE_REPO");

    if (forge == NULL || owner == NULL || repo == NULL
        || realpath(root, rroot) == NULL
        || forge[0] == '.' || owner[0] == '.' || repo[0] == '.'
        || strchr(forge, '/') || strchr(owner, '/') || strchr(repo, '/'))
    {
        snprintf(err, errlen, "not a repo of the gate");
        return -1;
    }

    n = (size_t) snprintf(want, sizeof(want), "%s/%s/%s/%s.git", rroot,
                          forge, owner, repo);
    if (n >= sizeof(want) || strcmp(want, cwd) != 0) {
        snprintf(err, errlen, "not the repo's directory");
        return -1;
    }

    /* git's paths may be relative to the repo */
    if (chdir(cwd) != 0) {
        snprintf(err, errlen, "cannot enter the repo");
        return -1;
    }

    snprintf(objs, sizeof(objs), "%s/objects", cwd);

    for (i = 0; under[i]; i++) {
        v = gg_scand_env(m, under[i]);
        if (v && (realpath(v, path) == NULL
                  || !gg_scand_under(path, objs, 0)))
        {
            snprintf(err, errlen, "%s outside the repo", under[i]);
            return -1;
        }
    }

    v = gg_scand_env(m, "GIT_DIR");
    if (v && (realpath(v, path) == NULL || strcmp(path, cwd) != 0)) {
        snprintf(err, errlen, "GIT_DIR not the repo");
        return -1;
    }

    v = gg_scand_env(m, "GIT_ALTERNATE_OBJECT_DIRECTORIES");
    for (p = v; p && *p; p = *e ? e + 1 : e) {
        e = strchr(p, ':');
        e = e ? e : p + strlen(p);
        n = (size_t) (e - p);
        if (n == 0) {
            continue;
        }
        if (n >= sizeof(one)) {
            return -1;
        }
        memcpy(one, p, n);
        one[n] = '\0';
        if (realpath(one, path) == NULL || !gg_scand_under(path, objs, 1)) {
            snprintf(err, errlen, "an alternate outside the repo");
            return -1;
        }
    }

    return 0;
}


/* path is dir/... (or dir itself when equal) */

static int
gg_scand_under(const char *path, const char *dir, int equal)
{
    size_t  n;

    n = strlen(dir);
    if (strncmp(path, dir, n) != 0) {
        return 0;
    }
    return path[n] == '/' || (equal && path[n] == '\0');
}


static const char *
gg_scand_env(const gg_scand_msg_t *m, const char *name)
{
    size_t  i, n;

    n = strlen(name);
    for (i = 0; i < m->nenv; i++) {
        if (strncmp(m->env[i], name, n) == 0 && m->env[i][n] == '=') {
            return m->env[i] + n + 1;
        }
    }
    return NULL;
}


/* an answer to the client: 0, or -1 when it was not sent whole (the
 * client gone) */
static int
gg_scand_say(int c, const char *fmt, ...)
{
    int      n;
    char     buf[GG_SCAND_REPLY_MAX];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);

    if (n <= 0 || (size_t) n >= sizeof(buf)) {
        return -1;
    }
    return send(c, buf, (size_t) n, MSG_NOSIGNAL) == n ? 0 : -1;
}
