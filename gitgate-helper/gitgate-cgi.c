/*
 * gitgate-cgi: git-gate's smart HTTP, a CGI program behind nginx and
 * fcgiwrap (docs/gitgate.md).  nginx attributes the caller (bottle
 * module, `bottle_attribute git;`) and passes the bottle id as BOTTLE_ID;
 * the rest of the configuration is in the environment too (gg_gate.h).
 *
 * Per request: the path names a repo (gg_path.h); the bottle's policy
 * must grant it (read for a fetch, write for a push), else a refusal that
 * says what to ask for.  The gate keeps one bare repository per upstream
 * repo under GITGATE_DIR, refreshes it from the forge with the forge's
 * token before each ref advertisement (one refresh at a time per repo,
 * reused for GITGATE_REFRESH seconds), and hands the request to git's own
 * `git http-backend`: git speaks the protocol and keeps a push in a
 * quarantine.
 *
 * The same binary is the gate's pre-receive hook (run as "pre-receive",
 * a symlink in <GITGATE_DIR>/.hooks, git's core.hooksPath): it scans what
 * the push introduces, forwards it to the forge with the forge's token,
 * exactly the pushed refs old -> new (a forge that moved refuses), and
 * journals the push.  Its stderr is what the pusher sees as "remote: "
 * lines; exit 1 refuses the push and the gate's refs stay as they were.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bottle_policy.h"
#include "gg_fresh.h"
#include "gg_gate.h"
#include "gg_path.h"
#include "gg_scan.h"


static int gg_cgi(void);
static void gg_http_error(int status, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void gg_refuse(const gg_request_t *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int gg_repo_dir(gg_ctx_t *ctx, const bottle_repo_t *repo, char *err,
    size_t errlen);
static int gg_mkdirs(char *path, char *err, size_t errlen);
static int gg_repo_init(gg_ctx_t *ctx, char *err, size_t errlen);
static int gg_hooks(gg_ctx_t *ctx, char *hooks, size_t size, char *err,
    size_t errlen);
static int gg_refresh(gg_ctx_t *ctx, int fetch, char *err, size_t errlen);
static int gg_backend(gg_ctx_t *ctx, const gg_request_t *req,
    const char *hooks, int write);


int
main(int argc, char **argv)
{
    const char  *base;

    base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];

    if (strcmp(base, "pre-receive") == 0) {
        return gg_hook(NULL);
    }

    /* the resident scanner, started by the hook client (gitgate-hook) */
    if (argc == 3 && strcmp(argv[1], "--scand") == 0) {
        return gg_hook_serve(argv[2]);
    }

    if (argc > 1) {
        fprintf(stderr, "usage: gitgate-cgi (a CGI program: run by fcgiwrap "
                "behind nginx, docs/gitgate.md)\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }

    return gg_cgi();
}


/* the CGI side ----------------------------------------------------------- */

static int
gg_cgi(void)
{
    int                   rc;
    char                  err[1024], hooks[GG_PATH_LEN];
    const char           *method, *path, *query;
    gg_ctx_t              ctx;
    gg_request_t          req;
    const bottle_repo_t  *grant;

    memset(&ctx, 0, sizeof(ctx));
    rc = 0;

    method = getenv("REQUEST_METHOD");
    path = getenv("PATH_INFO");
    query = getenv("QUERY_STRING");
    ctx.bottle_id = getenv("BOTTLE_ID");

    if (gg_conf_env(&ctx.conf, err, sizeof(err)) != 0) {
        fprintf(stderr, "gitgate-cgi: %s\n", err);
        gg_http_error(500, "Internal Server Error", "git-gate is not "
                      "configured (rule: internal); ask the operator");
        goto cleanup;
    }

    if (method == NULL || path == NULL
        || gg_path_parse(&req, path, strlen(path), query,
                         query ? strlen(query) : 0, err, sizeof(err)) != 0)
    {
        gg_http_error(404, "Not Found", "git-gate: %s",
                      method && path ? err : "not a CGI request");
        goto cleanup;
    }

    if ((req.op == GG_OP_INFO_REFS && strcmp(method, "GET") != 0)
        || (req.op == GG_OP_RPC && strcmp(method, "POST") != 0))
    {
        gg_http_error(405, "Method Not Allowed", "git-gate: method not "
                      "allowed here");
        goto cleanup;
    }

    /* nginx answers 401 before a request without a bottle gets here */
    if (ctx.bottle_id == NULL || ctx.bottle_id[0] == '\0') {
        gg_refuse(&req, "git-gate: no bottle identified (rule: no_bottle); "
                  "send the bottle's identity token as the password");
        goto cleanup;
    }

    rc = gg_store_open(&ctx.store, &ctx.conf, err, sizeof(err));

    if (rc == 0) {
        gg_store_heartbeat(ctx.store);
        rc = gg_policy_load(&ctx.policy, &ctx.conf, ctx.store, ctx.bottle_id,
                            err, sizeof(err));
    }

    if (rc != 0) {
        fprintf(stderr, "gitgate-cgi: bottle \"%s\": %s\n", ctx.bottle_id,
                err);
        gg_refuse(&req, "git-gate: the bottle's policy cannot be read "
                  "(rule: internal); try again, or ask the operator");
        goto cleanup;
    }

    ctx.bottle = bottle_policy_find_id(ctx.policy, ctx.bottle_id,
                                       strlen(ctx.bottle_id));
    ctx.repo = req.repo;
    snprintf(ctx.name, sizeof(ctx.name), "%s/%s/%s", req.repo.forge,
             req.repo.owner, req.repo.repo);

    grant = bottle_find_repo(ctx.bottle, &req.repo);

    if (grant == NULL) {
        gg_refuse(&req, "git-gate: this bottle has no grant for %s "
                  "(rule: repo_not_granted); ask the operator with "
                  "add-repo %s%s", ctx.name, ctx.name,
                  req.service == GG_SVC_RECEIVE ? ":write" : "");
        goto cleanup;
    }

    if (req.service == GG_SVC_RECEIVE && !grant->write) {
        gg_refuse(&req, "git-gate: %s is granted read-only, a push is "
                  "refused (rule: repo_read_only); ask the operator with "
                  "add-repo %s:write", ctx.name, ctx.name);
        goto cleanup;
    }

    /*
     * the grant matches in any case (bottle_repo_same()); the forge is
     * asked, and the hook forwards, with the grant's spelling: the
     * operator's, the one a case-sensitive forge knows (docs/gitgate.md,
     * "Owner and repo names")
     */
    memcpy(ctx.repo.owner, grant->owner, sizeof(ctx.repo.owner));
    memcpy(ctx.repo.repo, grant->repo, sizeof(ctx.repo.repo));
    snprintf(ctx.name, sizeof(ctx.name), "%s/%s/%s", ctx.repo.forge,
             ctx.repo.owner, ctx.repo.repo);

    if (gg_repo_dir(&ctx, &ctx.repo, err, sizeof(err)) != 0
        || gg_repo_init(&ctx, err, sizeof(err)) != 0
        || gg_hooks(&ctx, hooks, sizeof(hooks), err, sizeof(err)) != 0)
    {
        fprintf(stderr, "gitgate-cgi: %s: %s\n", ctx.name, err);
        gg_refuse(&req, "git-gate: the gate's copy of %s cannot be "
                  "prepared (rule: internal); ask the operator", ctx.name);
        goto cleanup;
    }

    if (req.op == GG_OP_INFO_REFS) {
        rc = gg_forge_url(&ctx, err, sizeof(err));
        if (rc == 1) {
            gg_refuse(&req, "git-gate: the forge %s is not connected to "
                      "this gateway (rule: forge_not_connected); ask the "
                      "operator with forge-connect", req.repo.forge);
            rc = 0;
            goto cleanup;
        }

        /* a first clone in protocol v2: served while the copy fills
         * (gg_first.c); the advertisement has no refs to refresh */
        if (rc == 0 && req.service == GG_SVC_UPLOAD && gg_first_v2()
            && gg_first_empty(&ctx))
        {
            /* served below */

        } else if (rc != 0 || gg_refresh(&ctx, req.service == GG_SVC_UPLOAD,
                                         err, sizeof(err)) != 0) {
            fprintf(stderr, "gitgate-cgi: %s: %s\n", ctx.name, err);
            gg_refuse(&req, "git-gate: %s cannot be read from the forge "
                      "(rule: forge_unavailable); try again, or ask the "
                      "operator", ctx.name);
            rc = 0;
            goto cleanup;
        }
    }

    if (req.op == GG_OP_RPC && req.service == GG_SVC_UPLOAD
        && gg_first_empty(&ctx))
    {
        rc = gg_first_rpc(&ctx, gg_refresh, err, sizeof(err));
        if (rc <= 0) {
            if (rc < 0) {
                fprintf(stderr, "gitgate-cgi: %s: %s\n", ctx.name, err);
                gg_http_error(502, "Bad Gateway", "git-gate: %s cannot be "
                              "read from the forge (rule: "
                              "forge_unavailable); try again, or ask the "
                              "operator", ctx.name);
            }
            rc = 0;
            goto cleanup;
        }
        rc = 0;
    }

    /* only returns on failure */
    gg_backend(&ctx, &req, hooks, grant->write);
    gg_http_error(500, "Internal Server Error", "git-gate: cannot run git "
                  "(rule: internal)");

cleanup:

    gg_ctx_free(&ctx);
    return rc;
}


static void
gg_http_error(int status, const char *text, const char *fmt, ...)
{
    va_list  ap;

    printf("Status: %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
           "Cache-Control: no-cache\r\n\r\n", status, text);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}


/*
 * A refusal as git shows it: on the ref advertisement, a smart-protocol
 * "ERR" packet, which git prints as "fatal: remote error: <message>"; on
 * a POST (which git sends only after an advertisement, so a client that
 * got here skipped it) a plain 403.
 */

static void
gg_refuse(const gg_request_t *req, const char *fmt, ...)
{
    int      n;
    char     msg[2048];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    if (n < 0) {
        msg[0] = '\0';
    }

    if (req->op != GG_OP_INFO_REFS) {
        gg_http_error(403, "Forbidden", "%s", msg);
        return;
    }

    n = (int) strlen(msg);
    printf("Status: 200 OK\r\nContent-Type: application/x-%s-advertisement"
           "\r\nCache-Control: no-cache\r\n\r\n%04xERR %s\n",
           gg_service_name(req->service), n + 9, msg);
    fflush(stdout);
}


/* <dir>/<forge>/<owner>/<repo>.git, lowercase: one copy per upstream */

static int
gg_repo_dir(gg_ctx_t *ctx, const bottle_repo_t *repo, char *err,
    size_t errlen)
{
    int     n;
    size_t  i, len;

    n = snprintf(ctx->repo_dir, sizeof(ctx->repo_dir), "%s/%s/%s/%s.git",
                 ctx->conf.dir, repo->forge, repo->owner, repo->repo);

    if (n < 0 || (size_t) n >= sizeof(ctx->repo_dir)) {
        snprintf(err, errlen, "failure 'GITGATE_DIR': too long");
        return -1;
    }

    len = strlen(ctx->conf.dir);
    for (i = len; ctx->repo_dir[i]; i++) {
        if (ctx->repo_dir[i] >= 'A' && ctx->repo_dir[i] <= 'Z') {
            ctx->repo_dir[i] += 'a' - 'A';
        }
    }

    return 0;
}


static int
gg_mkdirs(char *path, char *err, size_t errlen)
{
    char  *p;

    for (p = path + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }

        *p = '\0';
        if (mkdir(path, 0750) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "failure '%.300s': mkdir: %s", path,
                     strerror(errno));
            *p = '/';
            return -1;
        }
        *p = '/';
    }

    if (mkdir(path, 0750) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "failure '%.300s': mkdir: %s", path,
                 strerror(errno));
        return -1;
    }

    return 0;
}


/* the gate's bare repository, created on first use (git init is
 * idempotent: two first requests at once both succeed) */

static int
gg_repo_init(gg_ctx_t *ctx, char *err, size_t errlen)
{
    int          rc, i;
    char         head[GG_PATH_LEN + 8], out[1024];
    struct stat  st;
    const char  *args[5];

    snprintf(head, sizeof(head), "%s/HEAD", ctx->repo_dir);
    if (stat(head, &st) == 0) {
        return 0;
    }

    if (gg_mkdirs(ctx->repo_dir, err, errlen) != 0) {
        return -1;
    }

    args[0] = "init";
    args[1] = "-q";
    args[2] = "--bare";
    args[3] = ctx->repo_dir;
    args[4] = NULL;

    /* two first requests at once: git init fails on the other's config
     * lock; again once it is done */
    for (i = 0; i < 5; i++) {
        rc = gg_git(&ctx->conf, NULL, NULL, args, out, sizeof(out), err,
                    errlen);
        if (rc <= 0) {
            break;
        }
        usleep(100000);
    }

    if (rc > 0) {
        snprintf(err, errlen, "failure '%.300s': git init: %.200s",
                 ctx->repo_dir, out);
    }

    return rc == 0 ? 0 : -1;
}


/*
 * <dir>/.hooks/pre-receive: a symlink to the hook client gitgate-hook
 * next to this program (it hands the push to the resident scanner), or,
 * without one, to this program, which runs as the hook under that name.
 * Replaced atomically when it points elsewhere (a new install).
 */

static int
gg_hooks(gg_ctx_t *ctx, char *hooks, size_t size, char *err, size_t errlen)
{
    char     self[GG_PATH_LEN], link[GG_PATH_LEN + 16], cur[GG_PATH_LEN],
             tmp[GG_PATH_LEN + 32], client[GG_PATH_LEN], *slash;
    ssize_t  n;

    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(err, errlen, "failure '/proc/self/exe': %s",
                 strerror(errno));
        return -1;
    }
    self[n] = '\0';

    /* the client next to this program, when installed */
    slash = strrchr(self, '/');
    if (slash && (size_t) (slash - self) + sizeof("/gitgate-hook")
                 <= sizeof(client))
    {
        memcpy(client, self, (size_t) (slash - self));
        strcpy(client + (slash - self), "/gitgate-hook");
        if (access(client, X_OK) == 0) {
            strcpy(self, client);
        }
    }

    snprintf(hooks, size, "%s/.hooks", ctx->conf.dir);
    snprintf(link, sizeof(link), "%s/pre-receive", hooks);

    n = readlink(link, cur, sizeof(cur) - 1);
    if (n > 0) {
        cur[n] = '\0';
        if (strcmp(cur, self) == 0) {
            return 0;
        }
    }

    if (mkdir(hooks, 0750) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "failure '%.300s': mkdir: %s", hooks,
                 strerror(errno));
        return -1;
    }

    snprintf(tmp, sizeof(tmp), "%s.%ld", link, (long) getpid());
    unlink(tmp);

    if (symlink(self, tmp) != 0 || rename(tmp, link) != 0) {
        snprintf(err, errlen, "failure '%.300s': %s", link, strerror(errno));
        unlink(tmp);
        return -1;
    }

    return 0;
}




/*
 * The gate's copy refreshed from the forge: one refresh at a time per
 * repo (flock).  A copy that matched the forge less than GITGATE_REFRESH
 * seconds ago (the freshness window) is served as it is, and so is one
 * whose refresh ended while this request waited for the lock: concurrent
 * fetches share one refresh.  After the window, the forge's refs are
 * compared with the copy's (gg_fresh_same()) and only a difference is
 * fetched.  The first refresh also takes the forge's HEAD (what a clone
 * checks out).  A push through the gate moves the copy's refs itself; a
 * push the forge refused expires the window (gg_fresh_expire()).  What
 * a fetch brought is then read by a pass of its own, at nice 19, for
 * the blob tails of the branches' files (gg_tail_fill.c).
 */

static int
gg_refresh(gg_ctx_t *ctx, int fetch, char *err, size_t errlen)
{
    int              fd, rc, first;
    char             lock[GG_PATH_LEN + 32], stamp[GG_PATH_LEN + 32],
                     out[4096], *p, *e;
    time_t           now;
    struct stat      st;
    const char      *args[12];
    struct timespec  arrived;

    snprintf(lock, sizeof(lock), "%s/gitgate-refresh.lock", ctx->repo_dir);
    snprintf(stamp, sizeof(stamp), "%s/gitgate-refreshed", ctx->repo_dir);

    clock_gettime(CLOCK_REALTIME, &arrived);

    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        snprintf(err, errlen, "failure '%.300s': %s", lock, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }

    rc = -1;
    now = time(NULL);
    first = stat(stamp, &st) != 0;

    /*
     * before a push only a copy never refreshed is: the scan of a push
     * comes before any contact with the forge, and a stale copy is safe
     * (the forge refuses the lease; a fetch refreshes it); a refresh
     * that ended after this request came, while it waited for the lock,
     * is this request's too
     */
    if (!first
        && (!fetch
            || (now >= st.st_mtime
                && now - st.st_mtime < (time_t) ctx->conf.refresh)
            || st.st_mtim.tv_sec > arrived.tv_sec
            || (st.st_mtim.tv_sec == arrived.tv_sec
                && st.st_mtim.tv_nsec >= arrived.tv_nsec)))
    {
        rc = 0;
        goto cleanup;
    }

    /* after the window: the forge's refs alone, the copy's if the same */
    if (!first) {
        rc = gg_fresh_same(ctx, err, errlen);
        if (rc < 0) {
            goto cleanup;
        }

        if (rc == 1) {
            goto stamp;
        }
    }

    if (first) {
        args[0] = "ls-remote";
        args[1] = "--symref";
        args[2] = ctx->url;
        args[3] = "HEAD";
        args[4] = NULL;

        rc = gg_git(&ctx->conf, ctx->repo_dir, ctx->forge.token, args, out,
                    sizeof(out), err, errlen);
        if (rc != 0) {
            if (rc > 0) {
                snprintf(err, errlen, "failure '%s': git ls-remote: "
                         "%.300s", ctx->name, out);
            }
            rc = -1;
            goto cleanup;
        }

        /* "ref: refs/heads/main\tHEAD" */
        p = strstr(out, "ref: refs/heads/");
        e = p ? strchr(p, '\t') : NULL;

        if (p && e) {
            *e = '\0';
            args[0] = "symbolic-ref";
            args[1] = "HEAD";
            args[2] = p + 5;
            args[3] = NULL;

            if (gg_git(&ctx->conf, ctx->repo_dir, NULL, args, NULL, 0, err,
                       errlen) != 0)
            {
                snprintf(err, errlen, "failure '%s': git symbolic-ref",
                         ctx->name);
                rc = -1;
                goto cleanup;
            }
        }
    }

    /* the forge's pack kept as it came (never exploded into loose
     * objects): fetches are served from it as it is */
    args[0] = "-c";
    args[1] = "fetch.unpackLimit=1";
    args[2] = "fetch";
    args[3] = "-q";
    args[4] = "--prune";
    args[5] = "--no-tags";
    args[6] = "--no-write-fetch-head";
    args[7] = ctx->url;
    args[8] = "+refs/heads/*:refs/heads/*";
    args[9] = "+refs/tags/*:refs/tags/*";
    args[10] = NULL;

    rc = gg_git(&ctx->conf, ctx->repo_dir, ctx->forge.token, args, out,
                sizeof(out), err, errlen);
    if (rc != 0) {
        if (rc > 0) {
            snprintf(err, errlen, "failure '%s': git fetch: %.300s",
                     ctx->name, out);
        }
        rc = -1;
        goto cleanup;
    }

    /* the fetched files' blob tails, for the first push that appends to
     * one: a pass at nice 19, not waited for (gg_tail_fill.c) */
    gg_tail_fill_spawn(ctx->repo_dir);

stamp:

    /* the stamp's mtime is the refresh's time */
    close(open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0640));
    if (utimensat(AT_FDCWD, stamp, NULL, 0) != 0) {
        snprintf(err, errlen, "failure '%.300s': %s", stamp, strerror(errno));
        rc = -1;
        goto cleanup;
    }

    rc = 0;

cleanup:

    close(fd);
    return rc;
}


/* git http-backend on the gate's copy, in a clean environment */

static int
gg_backend(gg_ctx_t *ctx, const gg_request_t *req, const char *hooks,
    int write)
{
    size_t        n, i;
    char          path_info[GG_PATH_LEN], *rel, var[13][GG_PATH_LEN + 64];
    const char   *env[64], *v, *argv[3];

    static const char  *pass[] = {
        "PATH", "REQUEST_METHOD", "QUERY_STRING", "CONTENT_TYPE",
        "CONTENT_LENGTH", "HTTP_CONTENT_ENCODING", "HTTP_GIT_PROTOCOL",
        "REMOTE_ADDR", "SERVER_PROTOCOL", "GITGATE_STORE", "GITGATE_POLICY",
        "GITGATE_FORGES", "GITGATE_GIT", "GITGATE_REFRESH",
        "GITGATE_PACK_CACHE_MB", "GITGATE_BLOB_TIMEOUT", "GITGATE_FILEMODES",
        "GITGATE_SCAN_TIMEOUT", "GITGATE_SCAN_MEMORY_MB",
        "GITGATE_DECODED_MAX_MB", "GITGATE_DECODED_RATIO", "GITGATE_SCAND",
        "GITGATE_SCAND_IDLE", "GITGATE_SCAND_WAIT",
        "GITGATE_SCAND_TEST_DELAY", NULL
    };

    rel = ctx->repo_dir + strlen(ctx->conf.dir);
    snprintf(path_info, sizeof(path_info), "%s/%s", rel,
             req->op == GG_OP_INFO_REFS ? "info/refs"
                                        : gg_service_name(req->service));

    n = 0;

    for (i = 0; pass[i]; i++) {
        v = getenv(pass[i]);
        if (v == NULL) {
            continue;
        }
        /* leaked: exec follows */
        if (asprintf((char **) &env[n], "%s=%s", pass[i], v) < 0) {
            return -1;
        }
        n++;
    }

    i = 0;
    snprintf(var[i], sizeof(var[i]), "GIT_PROJECT_ROOT=%s", ctx->conf.dir);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "PATH_INFO=%s", path_info);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "REMOTE_USER=%s", ctx->bottle_id);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "HOME=%s", ctx->conf.dir);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GITGATE_DIR=%s", ctx->conf.dir);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GITGATE_BOTTLE=%s", ctx->bottle_id);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GITGATE_FORGE=%s", ctx->repo.forge);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GITGATE_OWNER=%s", ctx->repo.owner);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GITGATE_REPO=%s", ctx->repo.repo);
    env[n++] = var[i++];
    snprintf(var[i], sizeof(var[i]), "GIT_CONFIG_VALUE_0=%s", hooks);
    env[n++] = var[i++];

    env[n++] = "GATEWAY_INTERFACE=CGI/1.1";
    env[n++] = "GIT_HTTP_EXPORT_ALL=1";
    env[n++] = "GIT_CONFIG_NOSYSTEM=1";
    env[n++] = "GIT_CONFIG_GLOBAL=/dev/null";
    env[n++] = "GIT_CONFIG_COUNT=7";
    env[n++] = "GIT_CONFIG_KEY_0=core.hooksPath";
    env[n++] = "GIT_CONFIG_KEY_1=http.receivepack";
    env[n++] = write ? "GIT_CONFIG_VALUE_1=true" : "GIT_CONFIG_VALUE_1=false";
    /* the agent's objects stay unreachable from the advertisement: a
     * refused push's objects are gone with its quarantine anyway */
    env[n++] = "GIT_CONFIG_KEY_2=receive.fsckObjects";
    env[n++] = "GIT_CONFIG_VALUE_2=true";
    /* every push stays a pack (receive-pack explodes one of fewer than
     * 100 objects into loose ones), which the scan reads itself
     * (gg_pack.h) instead of asking git cat-file for each object */
    env[n++] = "GIT_CONFIG_KEY_3=receive.unpackLimit";
    env[n++] = "GIT_CONFIG_VALUE_3=1";
    /* a fetch is served from the copy's packs as the forge made them:
     * no new search for deltas (CPU for each clone, seconds for a big
     * repo of blobs that do not delta; docs/gitgate.md, "Speed") */
    env[n++] = "GIT_CONFIG_KEY_4=pack.window";
    env[n++] = "GIT_CONFIG_VALUE_4=0";
    /* the bases index-pack --fix-thin appends to a thin push's pack (the
     * old versions of the files it changes, already in the copy) written
     * as stored deflate blocks: the scan reads them as they lie, never
     * inflating them (docs/gitgate.md, "Appended files"); and no gc of
     * receive-pack's, which would repack the copy so too (the next
     * refresh's fetch runs it, without this) */
    env[n++] = "GIT_CONFIG_KEY_5=core.compression";
    env[n++] = "GIT_CONFIG_VALUE_5=0";
    env[n++] = "GIT_CONFIG_KEY_6=receive.autogc";
    env[n++] = "GIT_CONFIG_VALUE_6=false";
    env[n] = NULL;

    argv[0] = ctx->conf.git;
    argv[1] = "http-backend";
    argv[2] = NULL;

    fflush(stdout);
    execvpe(ctx->conf.git, (char *const *) argv, (char *const *) env);

    fprintf(stderr, "gitgate-cgi: failure '%s': exec: %s\n", ctx->conf.git,
            strerror(errno));
    return -1;
}
