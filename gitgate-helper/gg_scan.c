/*
 * git-gate's push scanner (gg_scan.h): the walk over what a push
 * introduces (commits, trees, tags, refs); each piece is scanned by
 * gg_field.c, a changed file by gg_change.c (its added lines found by
 * gg_lines.c); the trees, commits and tags themselves are read by
 * gg_raw.c.
 */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gg_scan_int.h"


/* hides every commit an existing ref reaches: they are on the forge */
static int
gg_hide_existing(gg_ctx_t *c, git_revwalk *walk)
{
    int                       rc;
    git_object               *obj;
    git_reference            *ref;
    git_reference_iterator   *it;

    if (git_reference_iterator_new(&it, c->repo) != 0) {
        snprintf(c->err, c->errlen, "cannot list the repository's refs");
        return -1;
    }

    while ((rc = git_reference_next(&ref, it)) == 0) {
        /* a ref to a tree or a blob hides no commit */
        if (git_reference_peel(&obj, ref, GIT_OBJECT_COMMIT) == 0) {
            rc = git_revwalk_hide(walk, git_object_id(obj));
            git_object_free(obj);
        }
        git_reference_free(ref);
        if (rc < 0) {
            break;
        }
    }

    git_reference_iterator_free(it);

    if (rc != GIT_ITEROVER) {
        snprintf(c->err, c->errlen, "cannot read the repository's refs");
        return -1;
    }
    return 0;
}


/* tags and refs to trees or blobs */

/*
 * What one ref update points to: a commit is pushed onto the walk; a tag
 * is scanned and followed; a tree or a blob (a ref may name one) is
 * scanned whole, as nothing hides it.
 */
static int
gg_target(gg_ctx_t *c, git_revwalk *walk, const git_oid *oid, size_t index,
    int withheld)
{
    int          rc, depth;
    size_t       blen;
    git_oid      id;
    gg_pobj_t   *po;
    git_object  *obj;
    const char  *bd;

    id = *oid;

    for (depth = 0; depth < 16; depth++) {
        if (git_object_lookup(&obj, c->repo, &id, GIT_OBJECT_ANY) != 0) {
            git_oid_tostr(c->obj, GG_SHORT + 1, &id);
            snprintf(c->err, c->errlen, "cannot read object %s", c->obj);
            return -1;
        }

        bottle_scan_reset(c->s, GG_DETECTORS);
        c->field = 0;
        git_oid_tostr(c->obj, GG_SHORT + 1, &id);
        rc = 0;

        switch (git_object_type(obj)) {

        case GIT_OBJECT_COMMIT:
            if (git_revwalk_push(walk, &id) != 0) {
                snprintf(c->err, c->errlen, "cannot walk from commit %s",
                         c->obj);
                rc = -1;
            }
            git_object_free(obj);
            return rc;

        case GIT_OBJECT_TAG:
            c->obj_kind = "tag object";
            rc = gg_tag(c, (git_tag *) obj, &id, index, withheld);
            id = *git_tag_target_id((git_tag *) obj);
            git_object_free(obj);
            if (rc != 0) {
                return rc;
            }
            continue;

        case GIT_OBJECT_TREE:
            c->obj_kind = "tree";
            rc = gg_tree(c, NULL, &id);
            break;

        case GIT_OBJECT_BLOB:
            c->obj_kind = "blob";
            rc = gg_read(&bd, &blen, &po, &c->new, c, &id);
            if (rc == 0) {
                rc = gg_file(c, "(the blob itself)", 1, NULL, 0, bd, blen,
                             NULL, NULL, 0);
                if (rc == 0) {
                    rc = gg_decoded(c, "(the blob itself)", 1, NULL, 0, bd,
                                    blen);
                }
                gg_pack_put(c->pack, po);
            }
            break;

        default:
            snprintf(c->err, c->errlen, "unknown object type");
            rc = -1;
        }

        git_object_free(obj);
        return rc;
    }

    snprintf(c->err, c->errlen, "tags nested deeper than 16");
    return -1;
}


static int
gg_open(git_repository **out, const char *path, const char *quarantine,
    char *err, size_t errlen)
{
    int              rc;
    git_odb         *odb;
    git_repository  *repo;

    if (git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH,
                                NULL)
        != 0)
    {
        snprintf(err, errlen, "cannot open the repository");
        return -1;
    }

    /* the pushed objects: receive-pack keeps them apart until accepted */
    rc = gg_odb_open(repo, quarantine);
    if (rc < 0) {
        git_repository_free(repo);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rc == 1 && quarantine != NULL && *quarantine != '\0') {
        if (git_repository_odb(&odb, repo) != 0
            || git_odb_add_disk_alternate(odb, quarantine) != 0)
        {
            git_repository_free(repo);
            snprintf(err, errlen, "cannot open the quarantine");
            return -1;
        }
        git_odb_free(odb);
    }

    *out = repo;
    return 0;
}


/* gg_scan_preload()'s: a scan's own copy in a forked child (its scratch
 * written there only) */
static bottle_generic_t  *gg_generic;


int
gg_scan_preload(char *err, size_t errlen)
{
    if (gg_generic != NULL) {
        return 0;
    }
    return bottle_generic_create(&gg_generic, err, errlen);
}


/*
 * on: the repository's packs kept mapped between pushes (gg_pack_keep()).
 * libgit2's own are not held: its reads go through the pack reader
 * (gg_odb.c), so it maps them only for an object the reader leaves to it.
 */
void
gg_scan_keep(int on)
{
    gg_pack_keep(on);
}


/*
 * libgit2 as the scans use it (gg_scan_push(), gg_tail_fill()), each call
 * with its git_libgit2_shutdown().  Objects are not hashed again: the
 * push's index-pack or unpack-objects, or the fetch's index-pack, hashed
 * every one as it wrote it (hashing again on read would be most of a
 * scan's cost).  Only the repository is read: not the machine's or the
 * user's git configuration (/etc/gitconfig, ~/.gitconfig, read and
 * stat'ed again at every open, 3-5% of a 1 MB push), so not their
 * safe.directory either; the owner check it answers guards against
 * running a repository's configured programs, and a scan runs none (git
 * checked the repository before it ran its hook).
 */
void
gg_git_init(void)
{
    git_libgit2_init();
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_SYSTEM, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_GLOBAL, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_PROGRAMDATA,
                     "");
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
}


uint64_t
gg_scan_memory_kb(void)
{
    char                *end;
    const char          *env;
    unsigned long long   mb;

    env = getenv("GITGATE_SCAN_MEMORY_MB");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= (1ULL << 20)) {
            return mb << 10;
        }
    }
    return (uint64_t) GG_SCAN_MEMORY_MB << 10;
}


int
gg_scan_push(gg_report_t *out, const char *repo, const char *quarantine,
    const gg_updates_t *updates, bottle_scan_secrets_t *sec, char *err,
    size_t errlen)
{
    int                 rc, n;
    char               *withheld, *end;
    uint64_t            cache;
    const char         *env;
    double              secs;
    unsigned long long  mb;
    size_t              i;
    git_oid             oid;
    gg_ctx_t            c;
    gg_field_t          fd;
    git_revwalk        *walk;
    const gg_update_t  *u;

    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    c.tails = -1;
    gg_budget_start(&c);
    c.r = out;
    c.updates = updates;
    c.err = err;
    c.errlen = errlen;
    c.obj_kind = "push";
    walk = NULL;
    rc = -1;

    withheld = calloc(updates->n + 1, 1);
    if (withheld == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    /*
     * The pack reader's objects (a push's newest versions, several MB
     * each) and the scan's buffers come and go: from the heap, kept by
     * malloc once freed, rather than each a fresh mmap whose pages the
     * kernel zeroes again (a quarter of an append push's CPU; README
     * "Speed").  Process-wide: the scan runs in a hook process that
     * exits after it.
     */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);

    gg_git_init();

    /*
     * Blob contents come from git cat-file (gg_blob.h), whose delta base
     * cache keeps the bases libgit2 1.5 would resolve again for every blob
     * over 1 MB; libgit2 walks the commits and trees.
     */
    c.br = malloc(sizeof(*c.br));
    if (c.br == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    gg_blob_reader_init(c.br, repo, quarantine);

    /* GITGATE_BLOB_TIMEOUT: seconds git cat-file may take over one file
     * (1 to 3600; else the default, 60) */
    env = getenv("GITGATE_BLOB_TIMEOUT");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= 3600) {
            c.br->timeout_ms = (int) mb * 1000;
        }
    }

    /*
     * The push's budget (GITGATE_SCAN_TIMEOUT, seconds, fractions
     * allowed, 0.001 to 86400, default 300; GITGATE_SCAN_MEMORY_MB, 1 to
     * 1048576, default 2048: the growth of the process's peak RSS), and
     * the decoded views' caps (GITGATE_DECODED_MAX_MB, 1 to 4096,
     * default 64; GITGATE_DECODED_RATIO, 1 to 100000, default 100)
     */
    c.time_ms = GG_SCAN_TIMEOUT_MS;
    env = getenv("GITGATE_SCAN_TIMEOUT");
    if (env != NULL && ((*env >= '0' && *env <= '9') || *env == '.')) {
        secs = strtod(env, &end);
        if (*end == '\0' && secs >= 0.001 && secs <= 86400) {
            c.time_ms = (uint64_t) (secs * 1000 + 0.5);
        }
    }
    c.mem_kb = gg_scan_memory_kb();
    c.dec_max = GG_DEC_MAX;
    env = getenv("GITGATE_DECODED_MAX_MB");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= 4096) {
            c.dec_max = mb << 20;
        }
    }
    c.dec_ratio = GG_DEC_RATIO;
    env = getenv("GITGATE_DECODED_RATIO");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= 100000) {
            c.dec_ratio = mb;
        }
    }

    c.cache = calloc(GG_CACHE, sizeof(gg_cached_t));
    if (c.cache == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    if (gg_open(&c.repo, repo, quarantine, err, errlen) != 0) {
        goto cleanup;
    }

    if (git_repository_odb(&c.odb, c.repo) != 0) {
        snprintf(err, errlen, "cannot open the repository's objects");
        goto cleanup;
    }

    /*
     * GITGATE_FILEMODES: a tree entry of a mode git does not write
     * (100664, 100600, 644, ...: fsck's badFilemode) is refused ("refuse",
     * the default) or read as a file like any other ("scan")
     */
    env = getenv("GITGATE_FILEMODES");
    if (env != NULL && strcmp(env, "scan") == 0) {
        c.filemodes = 1;
    } else if (env != NULL && *env != '\0' && strcmp(env, "refuse") != 0) {
        snprintf(err, errlen, "GITGATE_FILEMODES is neither refuse nor scan");
        goto cleanup;
    }

    /* the resolved objects' budget: GITGATE_PACK_CACHE_MB, else 256 MB */
    cache = 0;
    env = getenv("GITGATE_PACK_CACHE_MB");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= (1ULL << 20)) {
            cache = mb << 20;
        }
    }
    if (gg_pack_open(&c.pack, repo, quarantine, cache, err, errlen) != 0) {
        goto cleanup;
    }
    if (gg_odb_add(c.odb, c.pack) != 0) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    c.tails = gg_tail_open(repo);

    if (bottle_scan_acquire(&c.s, sec, GG_DETECTORS) != 0) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    if (gg_generic != NULL) {
        c.gen = gg_generic;
    } else if (bottle_generic_create(&c.gen, err, errlen) != 0) {
        goto cleanup;
    }

    /* the ref names */
    for (i = 0; i < updates->n; i++) {
        u = &updates->u[i];
        if (u->delete) {
            continue;
        }
        memset(&fd, 0, sizeof(fd));
        fd.kind = GG_F_REF;
        fd.index = i + 1;
        fd.data = u->ref;
        fd.len = u->ref_len;
        n = gg_field(&c, &fd);
        if (n < 0) {
            goto cleanup;
        }
        withheld[i] = n > 0;
    }

    if (git_revwalk_new(&walk, c.repo) != 0) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    /* parents before children: see the cache above */
    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);

    if (gg_hide_existing(&c, walk) != 0) {
        goto cleanup;
    }

    /* tags, trees and blobs are scanned here; commits go on the walk */
    for (i = 0; i < updates->n; i++) {
        u = &updates->u[i];
        if (u->delete) {
            continue;
        }
        git_oid_fromraw(&oid, u->new);
        if (gg_target(&c, walk, &oid, i + 1, withheld[i]) != 0) {
            goto cleanup;
        }
    }

    while ((n = git_revwalk_next(&oid, walk)) == 0) {
        if (gg_commit(&c, &oid) != 0) {
            goto cleanup;
        }
    }

    if (n != GIT_ITEROVER) {
        snprintf(err, errlen, "cannot walk the pushed commits");
        goto cleanup;
    }

    /* the budget once more, its memory look not skipped: the last field
     * may have come within the millisecond of the look before it */
    c.mem_at = 0;
    if (gg_budget(&c) != 0) {
        goto cleanup;
    }

    rc = 0;

cleanup:

    /* over the budget: a refusal that says which, not a failure */
    if (rc != 0 && c.over) {
        rc = gg_refusal(&c, GG_RULE_BUDGET, c.budget_why);
    }

    if (c.s) {
        bottle_scan_release(c.s);
    }
    if (c.gen != gg_generic) {
        bottle_generic_free(c.gen);
    }
    git_revwalk_free(walk);
    git_odb_free(c.odb);
    git_repository_free(c.repo);
    git_libgit2_shutdown();
    gg_extents_free(&c.xo);
    gg_extents_free(&c.xn);
    gg_pack_close(c.pack);
    if (c.tails >= 0) {
        close(c.tails);
    }
    gg_stored_free(&c.st);
    if (c.br != NULL) {
        gg_blob_reader_close(c.br);
        free(c.br);
    }
    if (c.cache != NULL) {
        for (i = 0; i < GG_CACHE; i++) {
            free(c.cache[i].b.data);
        }
        free(c.cache);
    }
    free(c.old.data);
    free(c.new.data);
    free(c.add.data);
    free(c.lines);
    free(c.m);
    free(c.s1);
    free(c.s2);
    free(c.xs);
    free(c.xs2);
    free(c.tmp.data);
    free(c.path.data);
    gg_lmatch_free(&c.lm);
    free(withheld);
    return rc;
}
