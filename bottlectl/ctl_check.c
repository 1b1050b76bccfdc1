/*
 * bottlectl policy check FILE|DIR|- and policy diff FILE|DIR|-: a dry
 * run of policy put.  check runs the gateway's parser and the limits put
 * enforces (--limits) and writes nothing, without a store; diff shows
 * what a put would change in the store, bottle by bottle, as unified
 * diffs of the redacted JSON that show renders.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "bottlectl.h"
#include "bottle_diff.h"


/* exit statuses of diff, as diff(1)'s */
#define BOTTLECTL_DIFF_SAME     0
#define BOTTLECTL_DIFF_CHANGES  1
#define BOTTLECTL_DIFF_ERROR    2


static int bottlectl_check_one(bottlectl_t *ctl, const char *path);
static int bottlectl_diff_bottle(bottlectl_t *ctl, const bottlectl_put_t *put,
    int *changes);
static int bottlectl_diff_print(const json_t *before, const json_t *after,
    const char *id, const char *version);
static int bottlectl_diff_kept(bottlectl_t *ctl, bottlectl_put_t *items,
    size_t n, const char *name);


int
bottlectl_policy_check(bottlectl_t *ctl, const char *path)
{
    int                  rc;
    char                 err[1024], **files;
    size_t               i, n;
    struct stat          st;
    bottlectl_source_t   src;

    if (strcmp(path, "-") == 0 || stat(path, &st) != 0
        || !S_ISDIR(st.st_mode))
    {
        return bottlectl_check_one(ctl, path);
    }

    /* a directory: each file on its own, so that every error is named */

    if (bottle_policy_files(&files, &n, path, err, sizeof(err)) != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    rc = BOTTLECTL_OK;

    for (i = 0; i < n; i++) {
        if (bottlectl_check_one(ctl, files[i]) != BOTTLECTL_OK) {
            rc = BOTTLECTL_REFUSED;
        }
    }

    bottle_policy_files_free(files, n);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    /* then all of them as the gateway loads them: ids and tokens unique */

    rc = bottlectl_source_load(&src, path);
    bottlectl_source_free(&src);

    if (rc == BOTTLECTL_OK) {
        printf("%s: OK\n", path);
    }

    return rc;
}


/* one document: each bottle "OK", or its line on stderr */

static int
bottlectl_check_one(bottlectl_t *ctl, const char *path)
{
    int                  rc;
    size_t               i;
    const bottle_t      *b;
    bottlectl_put_t      put;
    bottlectl_source_t   src;

    rc = bottlectl_source_load(&src, path);

    for (i = 0; rc == BOTTLECTL_OK && i < json_array_size(src.bottles); i++)
    {
        memset(&put, 0, sizeof(put));

        b = bottle_policy_at(src.policy, i);

        if (bottlectl_put_prepare(ctl, src.name, &put,
                                  json_array_get(src.bottles, i), b,
                                  src.policy)
            != 0)
        {
            rc = BOTTLECTL_REFUSED;

        } else {
            printf("%s: bottle \"%s\": OK\n", src.name, put.id);
        }

        free(put.json);
    }

    bottlectl_source_free(&src);

    return rc;
}


int
bottlectl_policy_diff(bottlectl_t *ctl, const char *path)
{
    int                  rc, changes;
    size_t               i, n;
    bottlectl_put_t     *items;
    bottlectl_source_t   src;

    items = NULL;
    n = 0;
    changes = 0;

    rc = bottlectl_source_load(&src, path);
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    if (bottlectl_put_items(ctl, &src, &items, &n) != 0) {
        rc = BOTTLECTL_REFUSED;
        goto cleanup;
    }

    for (i = 0; i < n; i++) {
        rc = bottlectl_diff_bottle(ctl, &items[i], &changes);
        if (rc != BOTTLECTL_OK) {
            goto cleanup;
        }
    }

    rc = bottlectl_diff_kept(ctl, items, n, src.name);

cleanup:

    bottlectl_put_items_free(items, n);
    bottlectl_source_free(&src);

    if (rc == BOTTLECTL_UNREACHABLE) {
        return rc;
    }

    if (rc != BOTTLECTL_OK) {
        return BOTTLECTL_DIFF_ERROR;
    }

    return changes ? BOTTLECTL_DIFF_CHANGES : BOTTLECTL_DIFF_SAME;
}


static int
bottlectl_diff_bottle(bottlectl_t *ctl, const bottlectl_put_t *put,
    int *changes)
{
    int                   rc;
    char                  version[32];
    json_t               *before, *after;
    bottlectl_summary_t   sum;

    rc = bottlectl_stored(ctl, put->id, &before, version, sizeof(version));
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    after = json_loads(put->json, 0, NULL);
    if (after == NULL) {
        json_decref(before);
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    rc = BOTTLECTL_OK;

    if (version[0] == '\0') {
        snprintf(version, sizeof(version), "none");
    }

    if (before == NULL) {
        printf("bottle \"%s\": added (routes: %zu)\n", put->id,
               json_array_size(json_object_get(after, "routes")));
        rc = bottlectl_diff_print(NULL, after, put->id, NULL);
        *changes = 1;

    } else if (json_equal(before, after)) {
        printf("bottle \"%s\": unchanged (version %s)\n", put->id, version);

    } else if (bottlectl_summarize(&sum, before, after) != 0) {
        bottlectl_error("out of memory");
        rc = BOTTLECTL_REFUSED;

    } else {
        printf("bottle \"%s\": changed (version %s): %s\n", put->id,
               version, sum.summary);
        bottlectl_summary_free(&sum);
        rc = bottlectl_diff_print(before, after, put->id, version);
        *changes = 1;
    }

    json_decref(before);
    json_decref(after);

    return rc;
}


/* the diff show prints: the pretty JSON, secrets redacted */

static int
bottlectl_diff_print(const json_t *before, const json_t *after,
    const char *id, const char *version)
{
    int      rc;
    char    *a, *b, *diff, *la, *lb;
    size_t   len, size;

    size = sizeof(BOTTLE_STORE_POLICY_PREFIX) + strlen(id) + 64;
    la = malloc(size);
    lb = malloc(size);
    a = before ? bottle_proposal_pretty(before) : strdup("");
    b = bottle_proposal_pretty(after);
    diff = NULL;
    rc = BOTTLECTL_REFUSED;

    if (la == NULL || lb == NULL || a == NULL || b == NULL) {
        goto failed;
    }

    if (version) {
        snprintf(la, size, "a/%s%s (version %s)", BOTTLE_STORE_POLICY_PREFIX,
                 id, version);
    } else {
        snprintf(la, size, "/dev/null");
    }

    snprintf(lb, size, "b/%s%s", BOTTLE_STORE_POLICY_PREFIX, id);

    if (bottle_diff(&diff, &len, a, strlen(a), b, strlen(b), la, lb) != 0) {
        goto failed;
    }

    fwrite(diff, 1, len, stdout);
    rc = BOTTLECTL_OK;

failed:

    if (rc != BOTTLECTL_OK) {
        bottlectl_error("out of memory");
    }

    free(diff);
    free(a);
    free(b);
    free(la);
    free(lb);

    return rc;
}


/* the store's bottles the document does not name: put leaves them */

static int
bottlectl_diff_kept(bottlectl_t *ctl, bottlectl_put_t *items, size_t n,
    const char *name)
{
    int          rc;
    size_t       i, k;
    const char  *argv[2], *id;
    redisReply  *r;

    argv[0] = "HKEYS";
    argv[1] = BOTTLE_STORE_BOTTLES;

    rc = bottlectl_command(ctl, &r, 2, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("cannot read %s: %s", BOTTLE_STORE_BOTTLES,
                        r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "not a hash");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < r->elements; i++) {
        id = r->element[i]->str;

        for (k = 0; k < n; k++) {
            if (strcmp(items[k].id, id) == 0) {
                break;
            }
        }

        if (k == n) {
            printf("bottle \"%s\": not in %s, kept (policy put removes no "
                   "bottle; policy rm does)\n", id, name);
        }
    }

    freeReplyObject(r);

    return BOTTLECTL_OK;
}
