/*
 * The bottle policy model: JSON parsing and validation (schema in
 * docs/policy.md), the compiled immutable form, and the lookups the
 * gateway makes per request.
 *
 * Parsing is strict: an unknown field, a wrong type or a bad value is an
 * error naming the file, the bottle and the field path, because a typo in
 * a security policy that is silently ignored widens what an agent may do.
 * Secret values (identity tokens, egress tokens, held secrets, canaries)
 * never appear in an error message.
 *
 * This file holds the entry points: documents ({"bottles": [...]} or one
 * bottle), files and directories, building the policy (unique ids, the
 * token index) and freeing it.  The rest is split by what it parses:
 * bottle_policy_json.c (arena, messages, JSON and string helpers),
 * bottle_policy_bottle.c (one bottle), bottle_policy_route.c (one route)
 * and bottle_policy_lookup.c (the per-request lookups).
 */

#define _POSIX_C_SOURCE  200809L

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "bottle_policy_int.h"
#include "bottle_util.h"


typedef struct {
    json_t             *root;       /* new reference, owned */
    const char         *source;
} bottle_doc_t;


/* documents: {"bottles": [...]} or one bottle */

static int
bottle_doc_bottles(json_t **out, bottle_ctx_t *ctx, json_t *root)
{
    char         q[BOTTLE_QUOTE_LEN];
    void        *it;
    json_t      *v;
    const char  *key;

    *out = NULL;

    if (!json_is_object(root)) {
        return bottle_fail(ctx, "must be an object");
    }

    v = json_object_get(root, "bottles");      /* borrowed */
    if (v == NULL) {
        return 0;
    }

    if (json_object_size(root) != 1) {
        for (it = json_object_iter(root); it;
             it = json_object_iter_next(root, it))
        {
            key = json_object_iter_key(it);    /* borrowed */
            if (strcmp(key, "bottles") != 0) {
                return bottle_fail(ctx, "unknown field %s next to "
                                   "\"bottles\"",
                                   bottle_quote(q, sizeof(q), key,
                                                strlen(key)));
            }
        }
    }

    if (!json_is_array(v)) {
        bottle_path_key(ctx, "bottles");
        return bottle_fail(ctx, "must be an array");
    }

    *out = v;

    return 0;
}


static void
bottle_ctx_reset(bottle_ctx_t *ctx, const char *source)
{
    ctx->source = source;
    ctx->who[0] = '\0';
    ctx->path[0] = '\0';
    ctx->pathlen = 0;
}


static int
bottle_count_bottles(size_t *out, bottle_ctx_t *ctx, bottle_doc_t *docs,
    size_t ndocs)
{
    size_t   i, n;
    json_t  *list;

    n = 0;

    for (i = 0; i < ndocs; i++) {
        bottle_ctx_reset(ctx, docs[i].source);

        if (bottle_doc_bottles(&list, ctx, docs[i].root) != 0) {
            return -1;
        }

        n += list ? json_array_size(list) : 1;
    }

    *out = n;

    return 0;
}


static int
bottle_parse_docs(bottle_ctx_t *ctx, bottle_doc_t *docs, size_t ndocs)
{
    size_t            i, j, n;
    json_t           *list;
    bottle_policy_t  *p;

    p = ctx->policy;
    n = 0;

    for (i = 0; i < ndocs; i++) {
        bottle_ctx_reset(ctx, docs[i].source);

        if (bottle_doc_bottles(&list, ctx, docs[i].root) != 0) {
            return -1;
        }

        if (list == NULL) {
            snprintf(ctx->who, sizeof(ctx->who), "bottle");
            if (bottle_parse_bottle(ctx, docs[i].root, &p->bottles[n++]) != 0)
            {
                return -1;
            }

            continue;
        }

        for (j = 0; j < json_array_size(list); j++) {
            bottle_ctx_reset(ctx, docs[i].source);
            snprintf(ctx->who, sizeof(ctx->who), "bottles[%zu]", j);

            if (bottle_parse_bottle(ctx, json_array_get(list, j),
                                    &p->bottles[n++]) != 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


static int
bottle_cmp_id(const void *a, const void *b)
{
    const bottle_t  *x, *y;
    int              rc;

    x = *(const bottle_t *const *) a;
    y = *(const bottle_t *const *) b;

    rc = strcmp(x->id.data, y->id.data);
    if (rc != 0) {
        return rc;
    }

    /* ties in policy order, so the later duplicate is reported */
    return (x > y) - (x < y);
}


static int
bottle_check_ids(bottle_ctx_t *ctx)
{
    int                rc;
    size_t             i;
    const bottle_t   **sorted, *dup, *first;
    bottle_policy_t   *p;

    p = ctx->policy;

    if (p->nbottles < 2) {
        return 0;
    }

    sorted = malloc(p->nbottles * sizeof(bottle_t *));
    if (sorted == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < p->nbottles; i++) {
        sorted[i] = &p->bottles[i];
    }

    qsort(sorted, p->nbottles, sizeof(bottle_t *), bottle_cmp_id);

    rc = 0;

    for (i = 1; i < p->nbottles; i++) {
        if (strcmp(sorted[i - 1]->id.data, sorted[i]->id.data) == 0) {
            first = sorted[i - 1];
            dup = sorted[i];

            bottle_ctx_reset(ctx, dup->source.data);
            snprintf(ctx->who, sizeof(ctx->who), "bottle \"%s\"",
                     dup->id.data);
            bottle_path_key(ctx, "id");
            rc = bottle_fail(ctx, "duplicate: also defined in %s",
                             first->source.data);
            goto cleanup;
        }
    }

cleanup:

    free(sorted);

    return rc;
}


/* token digests -> bottles; the same token twice could not be told apart */

static int
bottle_index_tokens(bottle_ctx_t *ctx)
{
    size_t            i, h, size;
    bottle_t         *b, *other;
    bottle_policy_t  *p;

    p = ctx->policy;
    size = bottle_table_size(p->nbottles);

    p->token_slots = bottle_alloc_array(p, size, sizeof(size_t));
    if (p->token_slots == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    p->token_mask = size - 1;

    for (i = 0; i < p->nbottles; i++) {
        b = &p->bottles[i];
        memcpy(&h, b->token_sha256, sizeof(h));

        for (h &= p->token_mask; p->token_slots[h];
             h = (h + 1) & p->token_mask)
        {
            other = &p->bottles[p->token_slots[h] - 1];

            if (memcmp(other->token_sha256, b->token_sha256, 32) == 0) {
                bottle_ctx_reset(ctx, b->source.data);
                snprintf(ctx->who, sizeof(ctx->who), "bottle \"%s\"",
                         b->id.data);
                bottle_path_key(ctx, "token");
                return bottle_fail(ctx, "same token as bottle \"%s\" in %s",
                                   other->id.data, other->source.data);
            }
        }

        p->token_slots[h] = i + 1;
    }

    return 0;
}


/*
 * need_parent: every child's parent in the policy (a file or directory);
 * else a parent elsewhere is the caller's to check (a store's one key)
 */

static int
bottle_policy_build(bottle_policy_t **out, bottle_doc_t *docs, size_t ndocs,
    size_t len, int need_parent, char *err, size_t errlen)
{
    size_t            n;
    bottle_ctx_t      ctx;
    bottle_policy_t  *p;

    memset(&ctx, 0, sizeof(ctx));
    ctx.err = err;
    ctx.errlen = errlen;
    ctx.source = ndocs ? docs[0].source : "policy";

    p = calloc(1, sizeof(bottle_policy_t));
    if (p == NULL) {
        return bottle_fail(&ctx, "out of memory");
    }

    ctx.policy = p;

    /* what a document of len bytes needs, about: its strings and a little
       more (0: a file or directory, whole blocks) */
    if (len) {
        p->block_next = len < 1024 ? 1024 : (len + 255) & ~(size_t) 255;
    }

    if (bottle_count_bottles(&n, &ctx, docs, ndocs) != 0) {
        goto failed;
    }

    if (n > 0) {
        p->bottles = bottle_alloc_array(p, n, sizeof(bottle_t));
        if (p->bottles == NULL) {
            bottle_fail(&ctx, "out of memory");
            goto failed;
        }
    }

    p->nbottles = n;

    if (bottle_parse_docs(&ctx, docs, ndocs) != 0
        || bottle_check_ids(&ctx) != 0
        || bottle_index_tokens(&ctx) != 0
        || bottle_policy_check_family(p, need_parent, err, errlen) != 0)
    {
        goto failed;
    }

    *out = p;

    return 0;

failed:

    bottle_policy_free(p);

    return -1;
}


/* a JSON syntax error; jansson's "near '...'" could quote a secret */

static int
bottle_json_error(char *err, size_t errlen, const char *source,
    const json_error_t *jerr)
{
    char  text[JSON_ERROR_TEXT_LENGTH], *near;

    memcpy(text, jerr->text, sizeof(text));
    text[sizeof(text) - 1] = '\0';

    near = strstr(text, " near ");
    if (near != NULL) {
        *near = '\0';
    }

    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s: line %d column %d: invalid JSON: %s",
                 source, jerr->line, jerr->column, text);
    }

    return -1;
}


static int
bottle_doc_load(bottle_doc_t *out, const char *json, size_t len,
    const char *source, char *err, size_t errlen)
{
    json_error_t  jerr;

    /* new reference, released by the caller */
    out->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    out->source = source;

    if (out->root == NULL) {
        return bottle_json_error(err, errlen, source, &jerr);
    }

    return 0;
}


int
bottle_policy_parse(bottle_policy_t **out, const char *json, size_t len,
    const char *source_name, char *err, size_t errlen)
{
    int           rc;
    bottle_doc_t  doc;

    *out = NULL;

    if (source_name == NULL) {
        source_name = "policy";
    }

    if (bottle_doc_load(&doc, json, len, source_name, err, errlen) != 0) {
        return -1;
    }

    rc = bottle_policy_build(out, &doc, 1, len, 0, err, errlen);

    json_decref(doc.root);

    return rc;
}


/* files and directories */

static int
bottle_read_file(char **out, size_t *outlen, const char *path, char *err,
    size_t errlen)
{
    int     rc;
    char   *buf, *nbuf;
    FILE   *f;
    size_t  len, cap, n;

    f = fopen(path, "rb");
    if (f == NULL) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", path,
                           strerror(errno));
    }

    rc = -1;
    buf = NULL;
    len = 0;
    cap = 0;

    for ( ;; ) {
        if (len == cap) {
            if (cap >= BOTTLE_FILE_MAX) {
                bottle_errf(err, errlen, "%s: larger than %d bytes", path,
                            BOTTLE_FILE_MAX);
                goto cleanup;
            }

            cap = cap ? cap * 2 : 65536;
            nbuf = realloc(buf, cap);
            if (nbuf == NULL) {
                bottle_errf(err, errlen, "%s: out of memory", path);
                goto cleanup;
            }

            buf = nbuf;
        }

        n = fread(buf + len, 1, cap - len, f);
        len += n;

        if (n == 0) {
            break;
        }
    }

    if (ferror(f)) {
        bottle_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }

    *out = buf;
    *outlen = len;
    buf = NULL;
    rc = 0;

cleanup:

    free(buf);
    fclose(f);

    return rc;
}


static int
bottle_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}


static int
bottle_is_json_name(const char *name)
{
    size_t  len;

    /* dot files are editor and rsync temporaries, never policy */
    len = strlen(name);

    return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") == 0;
}


/* *out: malloc'd sorted paths of dir's *.json files */

static int
bottle_list_dir(char ***out, size_t *nout, const char *dir, char *err,
    size_t errlen)
{
    int             rc;
    DIR            *d;
    char          **files, **nfiles, *path;
    size_t          n, cap, len;
    const char     *sep;
    struct dirent  *de;

    d = opendir(dir);
    if (d == NULL) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", dir,
                           strerror(errno));
    }

    rc = -1;
    files = NULL;
    n = 0;
    cap = 0;
    len = strlen(dir);
    sep = (len > 0 && dir[len - 1] == '/') ? "" : "/";

    while ((de = readdir(d)) != NULL) {
        if (!bottle_is_json_name(de->d_name)) {
            continue;
        }

        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            nfiles = realloc(files, cap * sizeof(char *));
            if (nfiles == NULL) {
                goto oom;
            }

            files = nfiles;
        }

        path = malloc(len + strlen(sep) + strlen(de->d_name) + 1);
        if (path == NULL) {
            goto oom;
        }

        sprintf(path, "%s%s%s", dir, sep, de->d_name);
        files[n++] = path;
    }

    if (n == 0) {
        bottle_errf(err, errlen, "%s: no *.json files", dir);
        goto cleanup;
    }

    qsort(files, n, sizeof(char *), bottle_cmp_str);

    *out = files;
    *nout = n;
    files = NULL;
    rc = 0;
    goto cleanup;

oom:

    bottle_errf(err, errlen, "%s: out of memory", dir);

cleanup:

    while (files != NULL && n > 0) {
        free(files[--n]);
    }

    free(files);
    closedir(d);

    return rc;
}


static int
bottle_list_path(char ***out, size_t *nout, const char *path, char *err,
    size_t errlen)
{
    struct stat  st;

    if (stat(path, &st) != 0) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", path,
                           strerror(errno));
    }

    if (S_ISDIR(st.st_mode)) {
        return bottle_list_dir(out, nout, path, err, errlen);
    }

    *out = malloc(sizeof(char *));
    if (*out == NULL || ((*out)[0] = strdup(path)) == NULL) {
        free(*out);
        return bottle_errf(err, errlen, "%s: out of memory", path);
    }

    *nout = 1;

    return 0;
}


int
bottle_policy_files(char ***out, size_t *n, const char *path, char *err,
    size_t errlen)
{
    return bottle_list_path(out, n, path, err, errlen);
}


void
bottle_policy_files_free(char **files, size_t n)
{
    while (files != NULL && n > 0) {
        free(files[--n]);
    }

    free(files);
}


int
bottle_policy_load(bottle_policy_t **out, const char *path, char *err,
    size_t errlen)
{
    int            rc;
    char         **files, *json;
    size_t         i, nfiles, ndocs, len;
    bottle_doc_t  *docs;

    *out = NULL;
    rc = -1;
    files = NULL;
    docs = NULL;
    json = NULL;
    len = 0;
    ndocs = 0;
    nfiles = 0;

    if (bottle_list_path(&files, &nfiles, path, err, errlen) != 0) {
        return -1;
    }

    docs = calloc(nfiles, sizeof(bottle_doc_t));
    if (docs == NULL) {
        bottle_errf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }

    for (i = 0; i < nfiles; i++) {
        if (bottle_read_file(&json, &len, files[i], err, errlen) != 0) {
            goto cleanup;
        }

        rc = bottle_doc_load(&docs[i], json, len, files[i], err, errlen);
        free(json);

        if (rc != 0) {
            goto cleanup;
        }

        ndocs++;
    }

    rc = bottle_policy_build(out, docs, ndocs, 0, 1, err, errlen);

cleanup:

    for (i = 0; i < ndocs; i++) {
        json_decref(docs[i].root);
    }

    for (i = 0; i < nfiles; i++) {
        free(files[i]);
    }

    free(docs);
    free(files);

    return rc;
}


int
bottle_policy_unsupported(const bottle_policy_t *p, char *err, size_t errlen)
{
    /*
     * Every field is acted on now: held_secrets and repos by git-gate
     * (docs/gitgate.md), audit.firehose by the firehose
     * (docs/firehose.md), a route's log: "full" by the full log
     * (docs/full-log.md).  The next field parsed before it works is
     * refused here, in bottle_policy_load's form.
     */

    (void) p;
    (void) err;
    (void) errlen;

    return 0;
}


int
bottle_policy_needs_journal(const bottle_policy_t *p, char *err,
    size_t errlen)
{
    size_t           i;
    const bottle_t  *b;

    for (i = 0; i < bottle_policy_count(p); i++) {
        b = bottle_policy_at(p, i);

        if (b->audit_required) {
            snprintf(err, errlen, "%s: bottle \"%s\": audit.delivery: "
                     "\"required\" needs the audit journal, which is off "
                     "on this gateway (bottle_audit)", b->source.data,
                     b->id.data);
            return -1;
        }
    }

    return 0;
}


int
bottle_policy_needs_full_log(const bottle_policy_t *p, char *err,
    size_t errlen)
{
    size_t           i, j;
    const bottle_t  *b;

    for (i = 0; i < bottle_policy_count(p); i++) {
        b = bottle_policy_at(p, i);

        for (j = 0; j < b->nroutes; j++) {
            if (b->routes[j].log_full) {
                snprintf(err, errlen, "%s: bottle \"%s\": routes[%zu] "
                         "(%s): log: \"full\" needs the full log, which is "
                         "off on this gateway (bottle_full_log_dir)",
                         b->source.data, b->id.data, j,
                         b->routes[j].host.data);
                return -1;
            }
        }
    }

    return 0;
}


void
bottle_policy_free(bottle_policy_t *p)
{
    bottle_block_t  *b, *next;

    if (p == NULL) {
        return;
    }

    /* the arena holds egress tokens and held secrets */
    for (b = p->blocks; b != NULL; b = next) {
        next = b->next;
        OPENSSL_cleanse(b, sizeof(bottle_block_t) + b->size);
        free(b);
    }

    free(p);
}
