/*
 * gitgate-hook: git-gate's pre-receive hook as a small client of the
 * resident scanner (gg_scand.h, docs/gitgate.md "The resident scanner").
 * libc only, so that git starts it in well under a millisecond.
 *
 *   pre-receive (a symlink in <GITGATE_DIR>/.hooks)      the gate's hook
 *   gitgate-hook --policy FILE --bottle ID [--repo DIR]  gitgate-scan's,
 *       with GITGATE_SCAND_DIR=DIR (without it: gitgate-scan itself)
 *
 * It connects to <GITGATE_DIR>/.scand/sock (GITGATE_SCAND_DIR/sock),
 * passes its directory, its arguments, the variables the hook reads and
 * its stdin, stdout and stderr; the scanner's child runs the hook there
 * and writes to git itself; the child's exit status is this program's.
 *
 * Never open on a failure: no scanner (it is started for the next push),
 * a scanner that closes without starting the scan, GITGATE_SCAND=off: the
 * hook program itself runs, exec'd here (gitgate-cgi as "pre-receive", or
 * gitgate-scan).  A scan that started and ends without a verdict (its
 * child killed), or runs over GITGATE_SCAND_WAIT seconds, or a scanner
 * that says nothing for 30 s: refused, rule "internal"; the gate's hook
 * then runs gitgate-cgi with GITGATE_SCAN_LOST saying why, which refuses
 * and writes the push's journal record.  For that the gate's client
 * keeps its stdin (the ref updates, which the child reads) in a memfd,
 * passed as the child's stdin and read again from its start.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "gg_scand.h"


extern char  **environ;


static int hook_connect(const char *dir, const char *name);
static int hook_send(int s, const char *mode, int argc, char **argv);
static int hook_wait(int s, const char **lost);
static int hook_keep_stdin(void);
static ssize_t hook_recv(int s, char *buf, size_t size, int ms);
static void hook_start(const char *dir, const char *prog, const char *arg);
static void hook_closefrom(int lowfd);
static void hook_refuse(const char *why);
static void hook_report(long long utime_us, long long stime_us);
static void hook_clock(struct timespec *ts);


/* the scanner's directory and its NUL: short enough for <dir>/sock to
 * fit a socket's address (sun_path, 108 bytes with its NUL) */
#define GG_HOOK_DIR_MAX  \
    (sizeof(((struct sockaddr_un *) NULL)->sun_path) - sizeof("/sock") + 1)
/*
 * The request, built here rather than in malloc()'s memory: a page or two
 * of .bss touched, not malloc()'s own pages and mappings (each first
 * touch a page fault, 10-25 us on a VM: this process is a push's every
 * time)
 */
static char  hook_msg[GG_SCAND_MSG_MAX];


int
main(int argc, char **argv)
{
    int                 s, rc, gate, kept, scand;
    char                full[PATH_MAX], dir[GG_HOOK_DIR_MAX],
                        warm[GG_SCAND_WARM_ID_MAX + 8];
    char               *slash, *off;
    const char         *root, *name, *bottle, *lost, **fargv, *sd;
    ssize_t             n;

    n = readlink("/proc/self/exe", full, sizeof(full) - 1);
    if (n <= 0) {
        hook_refuse("the hook cannot find its programs");
        return 1;
    }
    full[n] = '\0';

    gate = argc == 1;
    name = gate ? "gitgate-cgi" : "gitgate-scan";
    root = gate ? getenv("GITGATE_DIR") : NULL;

    /* the program beside this one */
    slash = strrchr(full, '/');
    if (slash == NULL
        || (size_t) (slash + 1 - full) + strlen(name) >= sizeof(full))
    {
        hook_refuse("the hook's directory is too long");
        return 1;
    }
    memcpy(slash + 1, name, strlen(name) + 1);

    /* the scanner's directory; one whose sockets' paths would not fit a
     * socket address is none (the hook program runs itself) */
    n = 0;
    sd = gate ? NULL : getenv("GITGATE_SCAND_DIR");
    if (gate && root && root[0] == '/') {
        n = snprintf(dir, sizeof(dir), "%s/.scand", root);
    } else if (sd != NULL) {
        n = snprintf(dir, sizeof(dir), "%s", sd);
    }
    if (n <= 0 || (size_t) n >= sizeof(dir)) {
        dir[0] = '\0';
    }

    off = getenv("GITGATE_SCAND");
    scand = dir[0] && !(off && strcmp(off, "off") == 0);
    s = -1;
    lost = NULL;

    /* the gate's: its ref updates kept for a scan that dies */
    kept = 0;
    if (gate && scand) {
        kept = hook_keep_stdin();
        if (kept == -2) {
            /* part of them read and not kept: a hook that read the rest
             * would check some updates and git would make them all */
            hook_refuse("the ref updates could not be kept");
            return 1;
        }
        kept = kept == 0;
    }

    if (scand) {
        /* this bottle's warm child first: none, busy, or one that ran
         * nothing leaves the push to the scanner */
        bottle = gg_scand_bottle(gate ? "gate" : "scan", argc - 1,
                                 (const char *const *) argv + 1,
                                 getenv("GITGATE_BOTTLE"));
        if (gg_scand_warm_name(warm, sizeof(warm), bottle) == 0) {
            s = hook_connect(dir, warm);
            if (s >= 0 && hook_send(s, gate ? "gate" : "scan", argc, argv)
                          == 0)
            {
                rc = hook_wait(s, &lost);
                if (rc >= 0 || lost) {
                    goto done;
                }
            }
            if (s >= 0) {
                close(s);
            }
        }

        s = hook_connect(dir, "sock");
        if (s < 0) {
            hook_start(dir, full, gate ? root : dir);
        }
    }

    if (s >= 0 && hook_send(s, gate ? "gate" : "scan", argc, argv) == 0) {
        rc = hook_wait(s, &lost);
        if (rc >= 0 || lost) {
            goto done;
        }
    }

    if (s >= 0) {
        close(s);
    }

run:

    /* the hook itself, in this process (the ref updates read from their
     * start again) */
    if (kept) {
        (void) lseek(0, 0, SEEK_SET);
    }
    fargv = (const char **) argv;
    fargv[0] = gate ? "pre-receive" : "gitgate-scan";
    execv(full, (char *const *) fargv);
    if (!gate) {
        execvp("gitgate-scan", (char *const *) fargv);
    }

    hook_refuse(lost ? lost : "the hook program cannot run");
    return 1;

done:

    if (lost == NULL) {
        return rc;
    }

    /* a lost scan: the gate's hook refuses and records it */
    if (kept && setenv("GITGATE_SCAN_LOST", lost, 1) == 0) {
        close(s);
        goto run;
    }
    hook_refuse(lost);
    return 1;
}


/*
 * stdin (git's ref updates) copied into a memfd, which becomes stdin: 0;
 * -1, no memfd, stdin as it was; -2, stdin read in part and not kept.
 * GG_MAX_INPUT and a read more at most: the hook refuses longer updates
 * anyway.
 */

static int
hook_keep_stdin(void)
{
    int      m;
    /* (4 KB a read: the updates are mostly a line or two, and each 4 KB
     * of this process's stack first touched is a page fault) */
    char     buf[4096];
    size_t   total;
    ssize_t  n, w, off;

    m = (int) syscall(SYS_memfd_create, "gitgate-hook-stdin", 1U);
    if (m < 0) {
        return -1;
    }
    total = 0;
    while (total <= GG_MAX_INPUT) {
        n = read(0, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            goto failed;
        }
        if (n == 0) {
            break;
        }
        for (off = 0; off < n; off += w) {
            w = write(m, buf + off, (size_t) (n - off));
            if (w < 0 && errno == EINTR) {
                w = 0;
            } else if (w <= 0) {
                goto failed;
            }
        }
        total += (size_t) n;
    }
    if (lseek(m, 0, SEEK_SET) != 0 || dup2(m, 0) != 0) {
        goto failed;
    }
    close(m);
    return 0;

failed:

    close(m);
    return -2;
}


/* <dir>/<name> connected to, or -1 */

static int
hook_connect(const char *dir, const char *name)
{
    int                 s;
    struct sockaddr_un  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir,
                          name)
        >= sizeof(sa.sun_path))
    {
        return -1;
    }

    s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        close(s);
        s = -1;
    }
    return s;
}


/* the request and the three descriptors: 0, or -1 (nothing started) */

static int
hook_send(int s, const char *mode, int argc, char **argv)
{
    int             i, fd[3] = { 0, 1, 2 };
    char            cwd[PATH_MAX];
    char          **e;
    mode_t          um;
    ssize_t         len;
    struct iovec    iov;
    struct msghdr   mh;
    struct cmsghdr *cm;
    gg_scand_msg_t  m;
    union {
        char            b[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr  align;
    } ctl;

    if (getcwd(cwd, sizeof(cwd)) == NULL || argc - 1 > GG_SCAND_ARGS_MAX) {
        return -1;
    }

    memset(&m, 0, sizeof(m));
    m.mode = mode;
    m.cwd = cwd;
    um = umask(022);
    umask(um);
    m.umask = (unsigned) um;
    for (i = 1; i < argc; i++) {
        m.args[m.nargs++] = argv[i];
    }
    for (e = environ; *e; e++) {
        if (!gg_scand_env_passed(*e) || strchr(*e, '=') == NULL) {
            continue;
        }
        if (m.nenv == GG_SCAND_ENV_MAX) {
            return -1;
        }
        m.env[m.nenv++] = *e;
    }

    len = gg_scand_msg_build(hook_msg, sizeof(hook_msg), &m);
    if (len < 0) {
        return -1;
    }

    iov.iov_base = hook_msg;
    iov.iov_len = (size_t) len;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);
    cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
    memcpy(CMSG_DATA(cm), fd, sizeof(fd));

    return sendmsg(s, &mh, MSG_NOSIGNAL) == len ? 0 : -1;
}


/*
 * The child's answers: its exit status; -1 when it never started (the
 * caller runs the hook itself); -1 and *lost, why, when it started and
 * ended without a verdict or ran over the wait, or the scanner said
 * nothing for 30 s (the push refused).
 */

static int
hook_wait(int s, const char **lost)
{
    int        status, wait_s;
    char       buf[GG_SCAND_REPLY_MAX], *v;
    long       pid;
    ssize_t    n;
    long long  ut, st;
    struct timespec  t0, t1;

    wait_s = GG_SCAND_WAIT;
    v = getenv("GITGATE_SCAND_WAIT");
    if (v && atoi(v) >= 1 && atoi(v) <= 86400) {
        wait_s = atoi(v);
    }

    hook_clock(&t0);

    /* closed unanswered: the child ran nothing (it says "started" before
     * anything); no answer in time: it may still start, so this process
     * must not scan too (lost: refused, and the gate's hook records it;
     * a child that starts after this process left runs nothing, its
     * "started" undelivered) */
    n = hook_recv(s, buf, sizeof(buf), 30000);
    if (n == -2) {
        *lost = "the scanner did not start the scan in time";
        return -1;
    }
    if (n <= 0 || gg_scand_reply_started(buf, (size_t) n, &pid) != 0) {
        return -1;
    }

    hook_clock(&t1);

    n = hook_recv(s, buf, sizeof(buf),
                  wait_s * 1000 - (int) ((t1.tv_sec - t0.tv_sec) * 1000));

    if (n == -2) {
        kill((pid_t) pid, SIGKILL);
        *lost = "the scan ran over its time (GITGATE_SCAND_WAIT)";
        return -1;
    }

    if (n <= 0 || gg_scand_reply_done(buf, (size_t) n, &status, &ut, &st)
                  != 0)
    {
        *lost = "the scan ended without a verdict";
        return -1;
    }

    hook_report(ut, st);
    return status;
}


/*
 * CLOCK_MONOTONIC by the system call itself: the vDSO's clock_gettime()
 * would first fault in the vDSO's pages and libc's lookup of its symbol,
 * three page faults for two readings
 */
static void
hook_clock(struct timespec *ts)
{
    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts) != 0) {
        ts->tv_sec = 0;
        ts->tv_nsec = 0;
    }
}


/* one answer: its length, 0 at the end, -1 on an error, -2 on time out */

static ssize_t
hook_recv(int s, char *buf, size_t size, int ms)
{
    int            n;
    ssize_t        k;
    struct pollfd  pfd;

    pfd.fd = s;
    pfd.events = POLLIN;

    do {
        n = poll(&pfd, 1, ms > 0 ? ms : 0);
    } while (n < 0 && errno == EINTR);

    if (n == 0) {
        return -2;
    }
    if (n < 0) {
        return -1;
    }

    k = recv(s, buf, size, 0);
    return k < 0 ? -1 : k;
}


/*
 * The scanner started, detached (double fork, setsid), its descriptors
 * /dev/null: git waits for the hook's output to close.  One at a time:
 * a scanner holds <dir>/lock for its life, and a busy lock means one runs
 * or starts.
 */

static void
hook_start(const char *dir, const char *prog, const char *arg)
{
    int          fd, nul;
    char         path[PATH_MAX + 8];
    pid_t        pid;
    struct stat  st;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || st.st_uid != geteuid() || (st.st_mode & 077))
    {
        return;
    }

    snprintf(path, sizeof(path), "%s/lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return;
    }
    flock(fd, LOCK_UN);
    close(fd);

    pid = fork();
    if (pid < 0) {
        return;
    }

    if (pid == 0) {
        setsid();
        if (fork() != 0) {
            _exit(0);
        }
        nul = open("/dev/null", O_RDWR);
        if (nul < 0) {
            _exit(127);
        }
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        hook_closefrom(3);
        if (chdir("/") != 0) {
            _exit(127);
        }
        /* every symbol bound once in the scanner, not in each child */
        setenv("LD_BIND_NOW", "1", 1);
        execl(prog, prog, "--scand", arg, (char *) NULL);
        _exit(127);
    }

    waitpid(pid, NULL, 0);
}


/*
 * every descriptor from lowfd up closed: close_range(2) (Linux 5.9 on),
 * else one by one up to the limit (closefrom() is glibc's, and the hook
 * may be built with musl: Makefile, GG_HOOK_CC)
 */
static void
hook_closefrom(int lowfd)
{
    long  fd, max;

#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned int) lowfd, ~0U, 0) == 0) {
        return;
    }
#endif
    max = sysconf(_SC_OPEN_MAX);
    for (fd = lowfd; fd < max; fd++) {
        (void) close((int) fd);
    }
}


static void
hook_refuse(const char *why)
{
    fprintf(stderr, "git-gate refused this push (rule: internal)\n"
            "  why: %s\n"
            "  the push could not be checked, so it does not go on; "
            "try again, or ask the operator\n", why);
}


/* GITGATE_SCAND_REPORT=FILE: the scanner child's CPU for this push (all
 * it spent since its last report) appended there (the bench's measure:
 * this process's own is its caller's to count) */

static void
hook_report(long long utime_us, long long stime_us)
{
    int          fd;
    char         line[64];
    size_t       n;
    const char  *path;

    path = getenv("GITGATE_SCAND_REPORT");
    if (path == NULL || path[0] == '\0') {
        return;
    }
    /* (no stdio: its buffer is malloc()'s, pages this process need not
     * touch) */
    n = (size_t) snprintf(line, sizeof(line), "%lld %lld\n", utime_us,
                          stime_us);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0) {
        if (write(fd, line, n < sizeof(line) ? n : sizeof(line) - 1) < 0) {
            /* (the bench's figure lost, nothing else) */
        }
        close(fd);
    }
}
