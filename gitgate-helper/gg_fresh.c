/*
 * The gate's copy compared with the forge (gg_fresh.h).
 *
 * A refresh of a copy that the forge has not moved is one ls-refs of
 * the forge's branches and tags (protocol v2 through the gate's own
 * HTTP client, gg_forge_refs(); `git ls-remote` where the forge does not
 * answer it) and one `git for-each-ref` on the copy, instead of a `git fetch`
 * (which also negotiates, updates refs and may start an automatic
 * maintenance).  Peeled tag lines ("^{}") are left out: the copy's refs
 * name the same tags.  Order is not relied on: both sides are sorted.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gg_fresh.h"
#include "gg_first_int.h"


static size_t gg_fresh_lines(char *buf, char ***out);
static int gg_fresh_cmp(const void *a, const void *b);


int
gg_fresh_same(gg_ctx_t *ctx, char *err, size_t errlen)
{
    int          rc, same;
    char        *forge, *copy, **fl, **cl;
    size_t       nf, nc, i;
    const char  *args[8];

    forge = malloc(GG_FRESH_REFS_MAX);
    copy = malloc(GG_FRESH_REFS_MAX);
    fl = cl = NULL;
    same = -1;

    if (forge == NULL || copy == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }

    args[0] = "ls-remote";
    args[1] = "--heads";
    args[2] = "--tags";
    args[3] = ctx->url;
    args[4] = NULL;

    rc = gg_forge_refs(ctx, forge, GG_FRESH_REFS_MAX, err, errlen);
    if (rc != 0) {
        rc = gg_git(&ctx->conf, ctx->repo_dir, ctx->forge.token, args, forge,
                    GG_FRESH_REFS_MAX, err, errlen);
    }
    if (rc != 0) {
        if (rc > 0) {
            snprintf(err, errlen, "failure '%s': git ls-remote: %.300s",
                     ctx->name, forge);
        }
        goto done;
    }

    args[0] = "for-each-ref";
    args[1] = "--format=%(objectname)\t%(refname)";
    args[2] = "refs/heads/";
    args[3] = "refs/tags/";
    args[4] = NULL;

    rc = gg_git(&ctx->conf, ctx->repo_dir, NULL, args, copy,
                GG_FRESH_REFS_MAX, err, errlen);
    if (rc != 0) {
        if (rc > 0) {
            snprintf(err, errlen, "failure '%s': git for-each-ref: %.300s",
                     ctx->name, copy);
        }
        goto done;
    }

    same = 0;

    /* a full buffer may have lost lines: not the same, fetch */
    if (strlen(forge) + 1 >= GG_FRESH_REFS_MAX
        || strlen(copy) + 1 >= GG_FRESH_REFS_MAX)
    {
        goto done;
    }

    nf = gg_fresh_lines(forge, &fl);
    nc = gg_fresh_lines(copy, &cl);

    if (fl == NULL || cl == NULL || nf != nc) {
        goto done;
    }

    qsort(fl, nf, sizeof(fl[0]), gg_fresh_cmp);
    qsort(cl, nc, sizeof(cl[0]), gg_fresh_cmp);

    for (i = 0; i < nf; i++) {
        if (strcmp(fl[i], cl[i]) != 0) {
            goto done;
        }
    }

    same = 1;

done:

    free(fl);
    free(cl);
    free(forge);
    free(copy);

    return same;
}


/* buf's "<oid>\t<ref>" lines, NUL-terminated in place, peeled ones out;
 * *out NULL if out of memory */

static size_t
gg_fresh_lines(char *buf, char ***out)
{
    char    *p, *e, **l;
    size_t   n, max, len;

    max = 1;
    for (p = buf; *p; p++) {
        max += *p == '\n';
    }

    l = malloc(max * sizeof(l[0]));
    *out = l;
    if (l == NULL) {
        return 0;
    }

    n = 0;

    for (p = buf; *p; p = e) {
        e = strchr(p, '\n');
        if (e) {
            *e++ = '\0';
        } else {
            e = p + strlen(p);
        }

        len = strlen(p);
        if (len && p[len - 1] == '\r') {
            p[--len] = '\0';
        }

        if (len == 0 || strchr(p, '\t') == NULL
            || (len > 3 && strcmp(p + len - 3, "^{}") == 0))
        {
            continue;
        }

        l[n++] = p;
    }

    return n;
}


static int
gg_fresh_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}


void
gg_fresh_expire(const char *dir)
{
    char             stamp[GG_PATH_LEN + 32];
    struct timespec  ts[2];

    snprintf(stamp, sizeof(stamp), "%s/gitgate-refreshed", dir);

    /* 1970: older than any window, and still there (not a first fetch) */
    ts[0].tv_sec = ts[1].tv_sec = 1;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;

    utimensat(AT_FDCWD, stamp, ts, 0);
}
