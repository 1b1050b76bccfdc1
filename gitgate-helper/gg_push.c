/*
 * The gate's pre-receive hook (gitgate-cgi run as "pre-receive", see
 * gitgate-cgi.c and docs/gitgate.md): the scan of what the push
 * introduces, before any connection to the forge; the grant again; the
 * push forwarded to the forge with its token, exactly the pushed refs
 * old -> new (--force-with-lease, --atomic); the forge's verdict as the
 * push's; git.push in the journal.  Its stderr reaches the pusher as
 * "remote: " lines; exit 1 refuses the push and the gate's refs stay.
 */

#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "bottle_audit.h"
#include "bottle_policy.h"
#include "bottle_scan.h"
#include "gg_fresh.h"
#include "gg_gate.h"
#include "gg_hook.h"
#include "gg_scan.h"
#include "gg_scand_run.h"
#include "gg_trailer.h"
#include "gg_update.h"


/* the rule of a push refused until a gitleaks-allow is approved */
#define GG_ALLOW_RULE  "gitleaks_allow"


static void gg_hook_refuse(const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int gg_hook_child(int argc, char **argv, bottle_scan_db_t *db);
static void gg_relay(gg_ctx_t *ctx, const char *out);
static void gg_journal_push(gg_ctx_t *ctx, const gg_updates_t *u,
    const char *verdict, const char *rule, const char *reason,
    int withhold_names, int *written);


static void
gg_hook_refuse(const char *rule, const char *fmt, ...)
{
    va_list  ap;

    fprintf(stderr, "git-gate refused this push (rule: %s)\n  ", rule);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}


int
gg_hook(bottle_scan_db_t *loaded)
{
    int                     rc, written, fw, left, proposed;
    char                    err[1024], *input, *out, cache[GG_PATH_LEN + 16];
    char                    lease[GG_MAX_REFNAME + GG_OID_HEXSZ + 32];
    size_t                  len, i, nargs;
    const char             *quarantine, *forge, *owner, *repo, **args;
    const char             *rule, *lost;
    gg_ctx_t                ctx;
    gg_report_t             r;
    gg_updates_t            u;
    bottle_scan_db_t       *db;
    bottle_scan_secrets_t  *sec, *kept;
    const bottle_repo_t    *grant;
    char                  **spec;

    memset(&ctx, 0, sizeof(ctx));
    memset(&u, 0, sizeof(u));
    memset(&r, 0, sizeof(r));
    db = NULL;
    sec = NULL;
    input = NULL;
    out = NULL;
    args = NULL;
    spec = NULL;
    nargs = 0;
    written = 0;
    rc = 1;

    ctx.bottle_id = getenv("GITGATE_BOTTLE");
    forge = getenv("GITGATE_FORGE");
    owner = getenv("GITGATE_OWNER");
    repo = getenv("GITGATE_REPO");
    quarantine = getenv("GIT_QUARANTINE_PATH");

    if (gg_conf_env(&ctx.conf, err, sizeof(err)) != 0
        || ctx.bottle_id == NULL || forge == NULL || owner == NULL
        || repo == NULL)
    {
        gg_hook_refuse("internal", "the gate is not configured; ask the "
                       "operator");
        goto cleanup;
    }

    snprintf(ctx.name, sizeof(ctx.name), "%s/%s/%s", forge, owner, repo);

    if (bottle_repo_parse(&ctx.repo, ctx.name, strlen(ctx.name), 0, err,
                          sizeof(err)) != 0
        || gg_read_input(&input, &len, err, sizeof(err)) != 0
        || gg_updates_parse(&u, input, len, err, sizeof(err)) != 0)
    {
        gg_hook_refuse("internal", "%s", err);
        goto cleanup;
    }

    if (gg_store_open(&ctx.store, &ctx.conf, err, sizeof(err)) != 0
        || gg_policy_load(&ctx.policy, &ctx.conf, ctx.store, ctx.bottle_id,
                          err, sizeof(err)) != 0)
    {
        fprintf(stderr, "git-gate: %s\n", err);
        gg_hook_refuse("internal", "the bottle's policy cannot be read; "
                       "the push could not be checked, so it does not go "
                       "on");
        goto cleanup;
    }

    ctx.bottle = bottle_policy_find_id(ctx.policy, ctx.bottle_id,
                                       strlen(ctx.bottle_id));

    /*
     * GITGATE_SCAN_LOST, set by the hook client (gitgate-hook.c): the
     * resident scanner's child started this push's scan and ended
     * without a verdict (killed, or over GITGATE_SCAND_WAIT).  Refused,
     * and recorded with the updates the client kept.
     */
    lost = getenv("GITGATE_SCAN_LOST");
    if (lost != NULL) {
        gg_hook_refuse("internal", "why: %s\n  the push could not be "
                       "checked, so it does not go on; try again, or ask "
                       "the operator", lost);
        gg_journal_push(&ctx, &u, "refused", "internal", lost, 1, NULL);
        goto cleanup;
    }

    /* the new commits' Bottle-Id trailers: this bottle's (gg_trailer.h) */
    u.bottle = ctx.bottle_id;
    u.trailer_required = ctx.bottle
                         && bottle_trailer_required(ctx.bottle, &ctx.repo);

    /* 1, 2: the scan, before any connection to the forge */
    /* the compiled databases kept in the gate's own directory */
    snprintf(cache, sizeof(cache), "%s/.scan-cache", ctx.conf.dir);
    /* the resident scanner's, for a policy it has seen (borrowed) */
    kept = gg_scand_secrets(ctx.policy);

    if ((loaded == NULL
         && bottle_scan_db_create_cached(&db, gg_scan_cache(cache), err,
                                         sizeof(err)) != 0)
        || (kept == NULL
            && bottle_scan_secrets_for_git(&sec, loaded ? loaded : db,
                                           ctx.bottle, err, sizeof(err))
               != 0)
        || gg_scan_push(&r, ".", quarantine, &u, kept ? kept : sec, err,
                        sizeof(err)) != 0)
    {
        gg_hook_refuse("internal", "why: %s\n  the push could not be "
                       "checked, so it does not go on; try again, or ask "
                       "the operator", err);
        gg_journal_push(&ctx, &u, "refused", "internal", err, 1, NULL);
        goto cleanup;
    }

    /*
     * Only marked findings: each one the operator allowed passes, the
     * others are proposed (gitleaks-allow) and the push waits for that.
     * Any other finding refuses the push outright, nothing proposed.
     */

    if ((r.n || r.more) && !r.refuse && !r.more && ctx.store) {
        left = gg_allow_check(&ctx, &r, err, sizeof(err));
        proposed = left > 0 ? gg_allow_propose(&ctx, &r, err, sizeof(err))
                            : -1;

        if (proposed == 0) {
            gg_journal_push(&ctx, &u, "refused", GG_ALLOW_RULE,
                            "marked findings wait for the operator's "
                            "gitleaks-allow", 1, NULL);
            goto cleanup;
        }

        if (proposed == 1) {
            gg_journal_push(&ctx, &u, "refused", GG_PENDING_RULE,
                            "the bottle's pending proposals are at their "
                            "bound: marked findings not put to the "
                            "operator", 1, NULL);
            goto cleanup;
        }

        if (left != 0) {
            fprintf(stderr, "git-gate: %s\n", err);
            gg_hook_refuse("internal", "the operator could not be asked "
                           "about the marked findings; try again, or ask "
                           "the operator");
            gg_journal_push(&ctx, &u, "refused", "internal",
                            "gitleaks-allow could not be proposed", 1, NULL);
            goto cleanup;
        }

        fprintf(stderr, "git-gate: %zu marked finding%s allowed by the "
                "operator (gitleaks-allow)\n", r.n, r.n == 1 ? "" : "s");

    } else if (r.n || r.more) {
        gg_report_print(&r);
        rule = r.n ? r.f[0].rule : "secret";
        gg_journal_push(&ctx, &u, "refused", rule,
                        strcmp(rule, GG_TRAILER_RULE) == 0
                        ? "a commit's " GG_TRAILER_NAME " trailer does not "
                          "name the pushing bottle"
                        : "the push carries a secret", 1, NULL);
        goto cleanup;
    }

    /* the policy may have changed since the advertisement */
    grant = bottle_find_repo(ctx.bottle, &ctx.repo);
    if (grant == NULL || !grant->write) {
        gg_hook_refuse("repo_read_only", "%s is not granted for writing; "
                       "ask the operator with add-repo %s:write", ctx.name,
                       ctx.name);
        gg_journal_push(&ctx, &u, "refused", "repo_read_only",
                        "no write grant", 0, NULL);
        goto cleanup;
    }

    fw = gg_forge_url(&ctx, err, sizeof(err));
    if (fw != 0) {
        if (fw < 0) {
            fprintf(stderr, "git-gate: %s\n", err);
        }
        gg_hook_refuse("forge_not_connected", "the forge %s is not "
                       "connected to this gateway; ask the operator", forge);
        gg_journal_push(&ctx, &u, "refused", "forge_not_connected",
                        "the forge is not connected", 0, NULL);
        goto cleanup;
    }

    /* a bottle whose every record must be kept: none, no push */
    if (ctx.bottle->audit_required) {
        gg_journal_push(&ctx, &u, "forwarding", NULL, NULL, 0, &written);
        if (!written) {
            gg_hook_refuse("audit_required", "the push cannot be "
                           "journaled and this bottle requires it; try "
                           "again, or ask the operator");
            goto cleanup;
        }
    }

    /* 3: forward exactly the pushed refs, old -> new */
    args = calloc(2 * u.n + 10, sizeof(args[0]));
    spec = calloc(2 * u.n + 1, sizeof(spec[0]));
    out = malloc(GG_OUTPUT_MAX);
    if (args == NULL || spec == NULL || out == NULL) {
        gg_hook_refuse("internal", "out of memory");
        goto cleanup;
    }

    /* the pack sent compressed: receive-pack's core.compression=0 (for
     * the scan, gitgate-cgi.c) is in the hook's environment */
    args[nargs++] = "-c";
    args[nargs++] = "core.compression=-1";
    args[nargs++] = "push";
    args[nargs++] = "--porcelain";
    args[nargs++] = "--atomic";
    args[nargs++] = "--no-verify";
    args[nargs++] = ctx.url;

    for (i = 0; i < u.n; i++) {
        char  oldhex[GG_OID_HEXSZ + 1], newhex[GG_OID_HEXSZ + 1];
        int   k;

        for (k = 0; k < GG_OID_RAWSZ; k++) {
            snprintf(oldhex + 2 * k, 3, "%02x", u.u[i].old[k]);
            snprintf(newhex + 2 * k, 3, "%02x", u.u[i].new[k]);
        }

        snprintf(lease, sizeof(lease), "--force-with-lease=%s:%s",
                 u.u[i].ref, u.u[i].create ? "" : oldhex);
        spec[2 * i] = strdup(lease);

        snprintf(lease, sizeof(lease), "%s:%s",
                 u.u[i].delete ? "" : newhex, u.u[i].ref);
        spec[2 * i + 1] = strdup(lease);

        if (spec[2 * i] == NULL || spec[2 * i + 1] == NULL) {
            gg_hook_refuse("internal", "out of memory");
            goto cleanup;
        }
    }

    for (i = 0; i < u.n; i++) {
        args[nargs++] = spec[2 * i];
    }
    for (i = 0; i < u.n; i++) {
        args[nargs++] = spec[2 * i + 1];
    }
    args[nargs] = NULL;

    fw = gg_git(&ctx.conf, NULL, ctx.forge.token, args, out, GG_OUTPUT_MAX,
                err, sizeof(err));

    if (fw != 0) {
        if (fw > 0) {
            gg_relay(&ctx, out);
        } else {
            fprintf(stderr, "git-gate: %s\n", err);
        }
        /* the copy may be behind the forge: the next fetch asks it
         * (the hook runs in the gate's copy) */
        gg_fresh_expire(".");
        gg_hook_refuse("forge_refused", "the forge did not accept the "
                       "push (its answer is above); the gate's copy did not "
                       "move; fetch, then push again");
        gg_journal_push(&ctx, &u, "refused", "forge_refused",
                        fw > 0 ? "the forge refused the push"
                               : "the forge could not be reached", 0, NULL);
        goto cleanup;
    }

    gg_journal_push(&ctx, &u, "accepted", NULL, NULL, 0, NULL);
    rc = 0;

cleanup:

    if (spec) {
        for (i = 0; i < 2 * u.n; i++) {
            free(spec[i]);
        }
        free(spec);
    }
    free(args);
    free(out);
    gg_report_free(&r);
    gg_updates_free(&u);
    free(input);
    if (sec) {
        bottle_scan_secrets_free(sec);
    }
    if (db) {
        bottle_scan_db_free(db);
    }
    if (gg_scand_secrets(ctx.policy)) {
        /* the scanner's: its child exits with it */
        ctx.policy = NULL;
    }
    gg_ctx_free(&ctx);
    return rc;
}


/* the resident scanner: the rule databases read once, before any push */

int
gg_hook_serve(const char *dir)
{
    int                rc;
    char               err[512], cache[GG_PATH_LEN + 16],
                       sock[GG_PATH_LEN + 16];
    bottle_scan_db_t  *db;

    snprintf(cache, sizeof(cache), "%s/.scan-cache", dir);
    snprintf(sock, sizeof(sock), "%s/.scand", dir);

    if (bottle_scan_db_create_cached(&db, gg_scan_cache(cache), err,
                                     sizeof(err)) != 0)
    {
        fprintf(stderr, "gitgate-cgi --scand: %s\n", err);
        return 1;
    }

    rc = gg_scand_serve(dir, sock, gg_hook_child, db);

    bottle_scan_db_free(db);
    return rc;
}


static int
gg_hook_child(int argc, char **argv, bottle_scan_db_t *db)
{
    (void) argc;
    (void) argv;
    return gg_hook(db);
}


/* the forge's answer to the pusher, its address shown as the repo's name */

static void
gg_relay(gg_ctx_t *ctx, const char *out)
{
    size_t       ulen;
    const char  *p, *e, *hit;

    ulen = strlen(ctx->forge.url);

    for (p = out; *p; p = *e ? e + 1 : e) {
        e = strchr(p, '\n');
        if (e == NULL) {
            e = p + strlen(p);
        }

        if ((e - p == 4 && strncmp(p, "Done", 4) == 0) || e == p) {
            continue;
        }

        fprintf(stderr, "forge: ");
        while (p < e) {
            hit = ulen ? memmem(p, (size_t) (e - p), ctx->forge.url, ulen)
                       : NULL;
            if (hit == NULL) {
                fwrite(p, 1, (size_t) (e - p), stderr);
                break;
            }
            fwrite(p, 1, (size_t) (hit - p), stderr);
            fprintf(stderr, "https://%s", ctx->repo.forge);
            p = hit + ulen;
        }
        fprintf(stderr, "\n");
    }
}


/* git.push in the journal, when there is a store; *written 1 if it is */

static void
gg_journal_push(gg_ctx_t *ctx, const gg_updates_t *u, const char *verdict,
    const char *rule, const char *reason, int withhold_names, int *written)
{
    int                    k;
    char                   host[128], gw[192], id[256], err[512], *json,
                          (*hex)[2][GG_OID_HEXSZ + 1];
    size_t                 i, len;
    struct timeval         tv;
    bottle_audit_ref_t    *refs;
    bottle_audit_event_t   e;

    static uint64_t        counter;

    if (written) {
        *written = 0;
    }

    if (ctx->store == NULL) {
        return;
    }

    refs = calloc(u->n + 1, sizeof(refs[0]));
    hex = calloc(u->n + 1, sizeof(hex[0]));
    if (refs == NULL || hex == NULL) {
        free(refs);
        free(hex);
        return;
    }

    for (i = 0; i < u->n; i++) {
        for (k = 0; k < GG_OID_RAWSZ; k++) {
            snprintf(hex[i][0] + 2 * k, 3, "%02x", u->u[i].old[k]);
            snprintf(hex[i][1] + 2 * k, 3, "%02x", u->u[i].new[k]);
        }
        if (!withhold_names) {
            refs[i].name.data = u->u[i].ref;
            refs[i].name.len = u->u[i].ref_len;
        }
        refs[i].old_id.data = hex[i][0];
        refs[i].old_id.len = GG_OID_HEXSZ;
        refs[i].new_id.data = hex[i][1];
        refs[i].new_id.len = GG_OID_HEXSZ;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "git-gate");
    }
    host[sizeof(host) - 1] = '\0';
    snprintf(gw, sizeof(gw), "%s:%ld", host, (long) getpid());

    gettimeofday(&tv, NULL);

    memset(&e, 0, sizeof(e));
    e.type = BOTTLE_AUDIT_GIT_PUSH;
    e.producer = "git-gate";
    e.time_ms = (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
    e.gateway.data = gw;
    e.gateway.len = strlen(gw);
    e.id.data = id;
    e.id.len = bottle_audit_id(id, sizeof(id), gw, strlen(gw), e.time_ms,
                               ++counter);
    e.bottle.data = ctx->bottle_id;
    e.bottle.len = strlen(ctx->bottle_id);
    e.host.data = ctx->repo.forge;
    e.host.len = strlen(ctx->repo.forge);
    e.repo.data = ctx->name;
    e.repo.len = strlen(ctx->name);
    e.refs = refs;
    e.nrefs = u->n;
    e.verdict.data = verdict;
    e.verdict.len = strlen(verdict);
    if (rule) {
        e.rule.data = rule;
        e.rule.len = strlen(rule);
    }
    if (reason) {
        e.reason.data = reason;
        e.reason.len = strlen(reason);
    }

    json = bottle_audit_json(&e, &len);

    if (json == NULL) {
        fprintf(stderr, "git-gate: the push's journal record cannot be "
                "built\n");
    } else if (gg_journal(ctx->store, json, len, err, sizeof(err)) != 0) {
        fprintf(stderr, "git-gate: the push is not in the journal\n");
    } else if (written) {
        *written = 1;
    }

    free(json);
    free(refs);
    free(hex);
}
