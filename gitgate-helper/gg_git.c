/*
 * git as a child of the gate, with the forge token (gg_gate.h).
 *
 * The token reaches git through a credential helper reading a pipe the
 * child inherits: "!f() { test \"$1\" = get && cat <&FD; }; f".  Only
 * the descriptor's number is in argv; the token is written into the pipe
 * before git starts (a pipe holds 64 KiB; a token is at most 4 KiB) and
 * the write end is closed, so the helper reads it once and then EOF.
 * Other credential helpers are reset, redirects are not followed (a
 * redirect would take the token to another host) and git never prompts.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gg_gate.h"


/*
 * argv for git with the token's pipe (tp[0] for the child, the token
 * already written and tp[1] closed); *argvp to free, tp[0] to close
 */

static int
gg_git_prepare(const gg_conf_t *c, const char *git_dir, const char *token,
    const char *const *args, const char ***argvp, int tp[2], char *helper,
    size_t hlen, char *gd, size_t gdlen, char *err, size_t errlen)
{
    int           i, n;
    char          cred[GG_TOKEN_MAX + 64];
    size_t        len;
    ssize_t       r;
    const char  **argv;

    i = 0;
    while (args[i]) {
        i++;
    }

    argv = malloc((i + 16) * sizeof(argv[0]));
    if (argv == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    tp[0] = tp[1] = -1;

    n = 0;
    argv[n++] = c->git;

    if (git_dir) {
        snprintf(gd, gdlen, "--git-dir=%s", git_dir);
        argv[n++] = gd;
    }

    argv[n++] = "-c";
    argv[n++] = "credential.helper=";
    argv[n++] = "-c";
    argv[n++] = "http.followRedirects=false";
    argv[n++] = "-c";
    argv[n++] = "http.lowSpeedLimit=1";
    argv[n++] = "-c";
    argv[n++] = "http.lowSpeedTime=60";

    if (token) {
        if (pipe2(tp, O_CLOEXEC) != 0) {
            snprintf(err, errlen, "failure 'git': pipe: %s", strerror(errno));
            free(argv);
            return -1;
        }

        snprintf(helper, hlen, "credential.helper=!f() { test "
                 "\"$1\" = get && cat <&%d; }; f", tp[0]);
        argv[n++] = "-c";
        argv[n++] = helper;

        len = (size_t) snprintf(cred, sizeof(cred),
                                "username=x-access-token\npassword=%s\n",
                                token);
        r = write(tp[1], cred, len);
        explicit_bzero(cred, sizeof(cred));
        close(tp[1]);
        tp[1] = -1;

        if (r < 0 || (size_t) r != len) {
            snprintf(err, errlen, "failure 'git': cannot hand over the "
                     "token");
            close(tp[0]);
            tp[0] = -1;
            free(argv);
            return -1;
        }
    }

    for (i = 0; args[i]; i++) {
        argv[n++] = args[i];
    }

    argv[n] = NULL;
    *argvp = argv;
    return 0;
}


/* the child's side: the token's descriptor inherited, git's environment */

static void
gg_git_exec(const gg_conf_t *c, const char **argv, int tfd)
{
    if (tfd >= 0) {
        /* the one descriptor git's helper reads: inherited */
        fcntl(tfd, F_SETFD, 0);
    }

    setenv("GIT_TERMINAL_PROMPT", "0", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    unsetenv("GIT_ASKPASS");
    unsetenv("SSH_ASKPASS");

    execvp(c->git, (char *const *) argv);
    _exit(127);
}


/*
 * git with its stdin and stdout as pipes (*in to write, *out to read),
 * stderr the caller's; the caller waits for *pid
 */

int
gg_git_spawn(const gg_conf_t *c, const char *git_dir, const char *token,
    const char *const *args, int *in, int *out, pid_t *pid, char *err,
    size_t errlen)
{
    int           tp[2], ip[2], op[2];
    char          helper[128], gd[4096 + 16];
    const char  **argv;

    if (gg_git_prepare(c, git_dir, token, args, &argv, tp, helper,
                       sizeof(helper), gd, sizeof(gd), err, errlen) != 0)
    {
        return -1;
    }

    ip[0] = ip[1] = op[0] = op[1] = -1;

    if (pipe2(ip, O_CLOEXEC) != 0 || pipe2(op, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "failure 'git': pipe: %s", strerror(errno));
        goto failed;
    }

    *pid = fork();
    if (*pid < 0) {
        snprintf(err, errlen, "failure 'git': fork: %s", strerror(errno));
        goto failed;
    }

    if (*pid == 0) {
        if (dup2(ip[0], 0) < 0 || dup2(op[1], 1) < 0) {
            _exit(127);
        }
        gg_git_exec(c, argv, tp[0]);
    }

    free(argv);
    if (tp[0] >= 0) {
        close(tp[0]);
    }
    close(ip[0]);
    close(op[1]);
    *in = ip[1];
    *out = op[0];
    return 0;

failed:

    free(argv);
    if (tp[0] >= 0) {
        close(tp[0]);
    }
    if (ip[0] >= 0) {
        close(ip[0]);
        close(ip[1]);
    }
    if (op[0] >= 0) {
        close(op[0]);
        close(op[1]);
    }
    return -1;
}


int
gg_git(const gg_conf_t *c, const char *git_dir, const char *token,
    const char *const *args, char *out, size_t outlen, char *err,
    size_t errlen)
{
    int          tp[2], op[2], status, i;
    char         helper[128], gd[4096 + 16], buf[4096];
    size_t       len, used;
    pid_t        pid;
    ssize_t      r;
    const char **argv;

    if (gg_git_prepare(c, git_dir, token, args, &argv, tp, helper,
                       sizeof(helper), gd, sizeof(gd), err, errlen) != 0)
    {
        return -1;
    }

    op[0] = op[1] = -1;
    used = 0;
    if (out && outlen) {
        out[0] = '\0';
    }

    if (pipe2(op, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "failure 'git': pipe: %s", strerror(errno));
        goto failed;
    }

    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "failure 'git': fork: %s", strerror(errno));
        goto failed;
    }

    if (pid == 0) {
        if (dup2(op[1], 1) < 0 || dup2(op[1], 2) < 0) {
            _exit(127);
        }

        i = open("/dev/null", O_RDONLY);
        if (i >= 0) {
            dup2(i, 0);
        }

        gg_git_exec(c, argv, tp[0]);
    }

    free(argv);
    close(op[1]);
    op[1] = -1;
    if (tp[0] >= 0) {
        close(tp[0]);
        tp[0] = -1;
    }

    for ( ;; ) {
        r = read(op[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        if (out && outlen && used + 1 < outlen) {
            len = (size_t) r < outlen - 1 - used ? (size_t) r
                                                  : outlen - 1 - used;
            memcpy(out + used, buf, len);
            used += len;
            out[used] = '\0';
        }
    }

    close(op[0]);

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "failure 'git': waitpid: %s",
                     strerror(errno));
            return -1;
        }
    }

    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 127) {
            snprintf(err, errlen, "failure 'git': cannot run '%s'", c->git);
            return -1;
        }
        return WEXITSTATUS(status);
    }

    snprintf(err, errlen, "failure 'git': killed by signal %d",
             WTERMSIG(status));
    return -1;

failed:

    free(argv);

    for (i = 0; i < 2; i++) {
        if (tp[i] >= 0) {
            close(tp[i]);
        }
        if (op[i] >= 0) {
            close(op[i]);
        }
    }

    return -1;
}
