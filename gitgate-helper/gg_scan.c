/*
 * git-gate's push scanner (gg_scan.h): the walk over what a push
 * introduces (commits, trees, tags, refs); each piece is scanned by
 * gg_field.c, a modified file's added lines found by gg_lines.c.
 */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_object.h"
#include "gg_scan_int.h"


/* files */

static int
gg_is_blob(uint32_t mode)
{
    return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE
           || mode == GIT_FILEMODE_LINK;
}


static gg_blob_t *
gg_cached(gg_ctx_t *c, const git_oid *id)
{
    size_t  i;

    for (i = 0; i < GG_CACHE; i++) {
        if (c->cache[i].b.data != NULL && git_oid_equal(&c->cache[i].id, id)) {
            return &c->cache[i].b;
        }
    }
    return NULL;
}


/* c->new into the cache, by swapping buffers: no copy */
static void
gg_cache_keep(gg_ctx_t *c, const git_oid *id)
{
    gg_blob_t     t;
    gg_cached_t  *e;

    if (c->new.len > GG_CACHE_BLOB) {
        return;
    }

    e = &c->cache[c->next];
    c->next = (c->next + 1) % GG_CACHE;

    t = e->b;
    e->b = c->new;
    e->id = *id;
    c->new = t;

    /* an evicted buffer too big to keep is not kept as a spare either */
    if (c->new.cap > GG_CACHE_BLOB + 1) {
        free(c->new.data);
        memset(&c->new, 0, sizeof(c->new));
    }
}


/*
 * One blob's contents: from the packs (gg_pack.h; *po held, put it back),
 * else from git cat-file into buf (*po NULL).  The refusal texts are
 * git cat-file's either way.
 */
static int
gg_read(const char **data, size_t *len, gg_pobj_t **po, gg_blob_t *buf,
    gg_ctx_t *c, const git_oid *id)
{
    int    rc;
    char   hex[GIT_OID_HEXSZ + 1];

    git_oid_tostr(hex, sizeof(hex), id);
    *po = NULL;

    rc = gg_pack_get(po, c->pack, id->id, c->err, c->errlen);
    if (rc == 0) {
        if ((*po)->type != GG_OBJ_BLOB) {
            gg_pack_put(c->pack, *po);
            *po = NULL;
            snprintf(c->err, c->errlen, "object %.12s is not a file", hex);
            return -1;
        }
        *data = (const char *) (*po)->data;
        *len = (*po)->len;
        return 0;
    }
    if (rc == -2) {
        snprintf(c->err, c->errlen, "a file (object %.12s) is over %llu MB, "
                 "the most git-gate scans", hex,
                 (unsigned long long) (GG_BLOB_MAX >> 20));
        return -1;
    }
    if (rc < 0) {
        return -1;
    }

    /* loose objects (a small push), alternates, packs not ours */
    if (gg_blob_read(buf, c->br, hex, c->err, c->errlen) != 0) {
        return -1;
    }
    *data = buf->data;
    *len = buf->len;
    return 0;
}


/* one added or modified entry: its path, then its added lines */
static int
gg_delta(gg_ctx_t *c, const git_diff_delta *d, size_t index)
{
    int          n, rc, fresh, packed, xdone;
    size_t       nlen, olen;
    gg_blob_t   *oldb, *newb;
    gg_pobj_t   *npo, *opo;
    gg_field_t   fd;
    const char  *nd, *od;

    if (d->status == GIT_DELTA_DELETED || d->new_file.path == NULL) {
        return 0;
    }

    memset(&fd, 0, sizeof(fd));
    fd.kind = GG_F_PATH;
    fd.index = index;
    fd.data = d->new_file.path;
    fd.len = strlen(d->new_file.path);

    n = gg_field(c, &fd);
    if (n < 0) {
        return -1;
    }

    /* a submodule's commit id is all a gitlink adds */
    if (!gg_is_blob(d->new_file.mode)) {
        return 0;
    }

    if (gg_budget(c) != 0) {
        return -1;
    }

    /* a modified file in the packs: its added lines from both versions'
     * extents, neither built (gg_xlines.c); read whole below only for
     * its decoded views (gg_decode.c), when it has any */
    xdone = 0;
    if (d->status == GIT_DELTA_MODIFIED && gg_is_blob(d->old_file.mode)) {
        c->dec = 0;
        rc = gg_xfile(c, n ? NULL : d->new_file.path, index,
                      &d->old_file.id, &d->new_file.id);
        if (rc < 0) {
            return -1;
        }
        if (rc == 1 && !c->dec) {
            return 0;
        }
        xdone = rc == 1;
    }

    /* a blob git cat-file read before; else the packs, else git
     * cat-file (the pack reader keeps what it resolved itself) */
    npo = NULL;
    opo = NULL;
    oldb = NULL;
    fresh = 0;
    packed = 0;
    newb = gg_cached(c, &d->new_file.id);
    rc = 1;
    if (newb == NULL && d->status == GIT_DELTA_MODIFIED
        && gg_is_blob(d->old_file.mode))
    {
        /* no source shared with the old one: gathered from its extents,
         * no version of its chain built whole */
        rc = gg_xread(c, &c->new, &d->new_file.id);
        if (rc < 0) {
            return -1;
        }
        nd = c->new.data;
        nlen = c->new.len;
        packed = rc == 0;
    }
    if (rc == 0) {
        /* read */
    } else if (newb != NULL) {
        nd = newb->data;
        nlen = newb->len;
    } else {
        if (gg_read(&nd, &nlen, &npo, &c->new, c, &d->new_file.id) != 0) {
            return -1;
        }
        fresh = npo == NULL;
    }

    od = NULL;
    olen = 0;
    if (d->status == GIT_DELTA_MODIFIED && gg_is_blob(d->old_file.mode)) {
        oldb = gg_cached(c, &d->old_file.id);
        if (oldb != NULL) {
            od = oldb->data;
            olen = oldb->len;
        } else if (gg_read(&od, &olen, &opo, &c->old, c, &d->old_file.id)
                   != 0)
        {
            gg_pack_put(c->pack, npo);
            return -1;
        }
    }

    rc = 0;
    if (!xdone) {
        rc = gg_file(c, n ? NULL : d->new_file.path, index, od, olen, nd,
                     nlen, &d->old_file.id, &d->new_file.id,
                     (npo != NULL || packed) && opo != NULL);
    }

    /* its decoded views: gzip/zlib data, UTF-16 text (gg_decode.c) */
    if (rc == 0) {
        rc = gg_decoded(c, n ? NULL : d->new_file.path, index, od, olen, nd,
                        nlen);
    }

    gg_pack_put(c->pack, npo);
    gg_pack_put(c->pack, opo);

    if (rc == 0 && fresh) {
        gg_cache_keep(c, &d->new_file.id);
    }
    return rc;
}


/* trees */

/* one entry of a tree object, as its bytes say (gg_tree_next()) */
typedef struct {
    const char         *mode;       /* octal digits */
    size_t              mlen;
    uint32_t            m;
    const char         *name;
    size_t              nlen;
    git_oid             id;
} gg_entry_t;


/* the modes git writes; any other is fsck's badFilemode or worse */
static int
gg_mode_canonical(const gg_entry_t *e)
{
    static const char  *modes[] = {
        "100644", "100755", "120000", "40000", "160000", NULL
    };
    size_t  i;

    for (i = 0; modes[i]; i++) {
        if (e->mlen == strlen(modes[i])
            && memcmp(e->mode, modes[i], e->mlen) == 0)
        {
            return 1;
        }
    }
    return 0;
}


static int
gg_mode_is(const gg_entry_t *e, const char *mode)
{
    return e->mlen == strlen(mode) && memcmp(e->mode, mode, e->mlen) == 0;
}


/* git reads any mode of type 040000 as a tree (canon_mode()) */
#define gg_mode_dir(e)  (((e)->m & 0170000) == 0040000)


static int
gg_entry_cmp(const void *one, const void *two)
{
    int                 rc;
    const gg_entry_t   *a = one, *b = two;

    rc = memcmp(a->name, b->name, a->nlen < b->nlen ? a->nlen : b->nlen);
    if (rc != 0) {
        return rc;
    }
    return a->nlen < b->nlen ? -1 : a->nlen > b->nlen;
}


/*
 * A tree object's entries, from its raw bytes ("<mode> <name>\0<20 bytes>"
 * each); sorted by name (sort) for lookups.  A malformed one refuses.
 */
static int
gg_tree_read(gg_ctx_t *c, git_odb_object **obj, gg_entry_t **out, size_t *n,
    const git_oid *id, int sort)
{
    int               rc;
    char              hex[GIT_OID_HEXSZ + 1];
    size_t            cap, len;
    gg_entry_t       *e, *ne;
    const char       *p, *end;
    gg_tree_entry_t   te;

    *obj = NULL;
    *out = NULL;
    *n = 0;
    git_oid_tostr(hex, sizeof(hex), id);

    if (git_odb_read(obj, c->odb, id) != 0) {
        snprintf(c->err, c->errlen, "cannot read tree %.12s", hex);
        return -1;
    }
    if (git_odb_object_type(*obj) != GIT_OBJECT_TREE) {
        snprintf(c->err, c->errlen, "object %.12s is in a tree as a "
                 "directory but is not a tree", hex);
        goto failed;
    }

    p = git_odb_object_data(*obj);
    len = git_odb_object_size(*obj);
    end = p + len;
    e = NULL;
    cap = 0;

    while ((rc = gg_tree_next(&te, &p, end)) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            ne = realloc(e, cap * sizeof(*e));
            if (ne == NULL) {
                free(e);
                snprintf(c->err, c->errlen, "out of memory");
                goto failed;
            }
            e = ne;
        }

        ne = &e[(*n)++];
        ne->mode = te.mode;
        ne->mlen = te.mlen;
        ne->m = te.m;
        ne->name = te.name;
        ne->nlen = te.nlen;
        git_oid_fromraw(&ne->id, te.oid);
    }

    if (rc < 0) {
        goto malformed;
    }

    if (sort && *n > 1) {
        qsort(e, *n, sizeof(*e), gg_entry_cmp);
    }
    *out = e;
    return 0;

malformed:

    free(e);
    snprintf(c->err, c->errlen, "tree %.12s has a malformed entry", hex);

failed:

    git_odb_object_free(*obj);
    *obj = NULL;
    *n = 0;
    return -1;
}


/* the path so far and name, into c->path (NUL-terminated) */
static int
gg_path_push(gg_ctx_t *c, size_t plen, const gg_entry_t *e)
{
    c->path.len = plen;
    if ((plen && gg_buf_add(&c->path, "/", 1) != 0)
        || gg_buf_add(&c->path, e->name, e->nlen) != 0
        || gg_buf_add(&c->path, "", 1) != 0)
    {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }
    c->path.len--;
    return 0;
}


/* a changed entry's path, as a field of its own: matches or -1 */
static int
gg_path_field(gg_ctx_t *c)
{
    gg_field_t  fd;

    memset(&fd, 0, sizeof(fd));
    fd.kind = GG_F_PATH;
    fd.index = c->nfile;
    fd.data = c->path.data;
    fd.len = c->path.len;
    return gg_field(c, &fd);
}


/* an entry of a mode git does not write: refused, naming it and its mode */
static int
gg_bad_mode(gg_ctx_t *c, const gg_entry_t *e)
{
    int   n;
    char  where[GG_MAX_REFNAME + 512];

    c->nfile++;
    n = gg_path_field(c);
    if (n < 0) {
        return -1;
    }

    if (n) {
        snprintf(where, sizeof(where), "%s %s changed file %zu (path "
                 "withheld): mode %.*s", c->obj_kind, c->obj, c->nfile,
                 (int) e->mlen, e->mode);
    } else {
        snprintf(where, sizeof(where), "%s %s file %s: mode %.*s",
                 c->obj_kind, c->obj, c->path.data, (int) e->mlen, e->mode);
    }
    return gg_refusal(c, "bad_filemode", where);
}


/*
 * Every entry of tree id that is not in the old tree (the same parent
 * path in the parent's tree; NULL: none) with the same mode, name and
 * object: its path scanned, a file read (gg_delta()), a tree walked; a
 * tree of a name the old tree has not, with nothing changed beneath it
 * (an empty one), has its path scanned alone.  Every name a new tree
 * holds is so scanned; only mode 160000 (a gitlink) is not read.
 * Recursive, GG_TREE_DEPTH levels below the commit's tree at most.
 */
static int
gg_walk(gg_ctx_t *c, const git_oid *oid, const git_oid *id, int depth)
{
    int              rc, dir;
    size_t           i, n, on, plen, before;
    gg_entry_t      *e, *oe, *o;
    git_diff_delta   d;
    git_odb_object  *obj, *oobj;

    if (depth > GG_TREE_DEPTH) {
        snprintf(c->err, c->errlen, "trees nested deeper than %d",
                 GG_TREE_DEPTH);
        return -1;
    }

    if (gg_tree_read(c, &obj, &e, &n, id, 0) != 0) {
        return -1;
    }

    oobj = NULL;
    oe = NULL;
    on = 0;
    if (oid != NULL && gg_tree_read(c, &oobj, &oe, &on, oid, 1) != 0) {
        free(e);
        git_odb_object_free(obj);
        return -1;
    }

    plen = c->path.len;
    rc = 0;

    for (i = 0; i < n && rc == 0; i++) {
        o = on ? bsearch(&e[i], oe, on, sizeof(*oe), gg_entry_cmp) : NULL;

        /* the same entry as before: all of it is on the forge already */
        if (o != NULL && o->mlen == e[i].mlen
            && memcmp(o->mode, e[i].mode, o->mlen) == 0
            && git_oid_equal(&o->id, &e[i].id))
        {
            continue;
        }

        if (gg_path_push(c, plen, &e[i]) != 0) {
            rc = -1;
            break;
        }

        if (!gg_mode_canonical(&e[i]) && !c->filemodes) {
            rc = gg_bad_mode(c, &e[i]);
            continue;
        }

        dir = gg_mode_dir(&e[i]);

        if (dir) {
            before = c->nfile;
            rc = gg_walk(c, o != NULL && gg_mode_dir(o) ? &o->id : NULL,
                         &e[i].id, depth + 1);
            if (rc == 0 && c->nfile == before
                && (o == NULL || !gg_mode_dir(o)))
            {
                /* a new name with nothing beneath it (an empty tree):
                 * the walk below moved c->path, this entry's again */
                rc = gg_path_push(c, plen, &e[i]);
                if (rc == 0) {
                    c->nfile++;
                    rc = gg_path_field(c) < 0 ? -1 : 0;
                }
            }
            continue;
        }

        /* a file (of any mode but 160000), or a gitlink */
        memset(&d, 0, sizeof(d));
        d.new_file.id = e[i].id;
        d.new_file.path = c->path.data;
        d.new_file.mode = gg_mode_is(&e[i], "160000") ? GIT_FILEMODE_COMMIT
                          : gg_mode_canonical(&e[i]) ? e[i].m
                          : GIT_FILEMODE_BLOB;
        d.status = GIT_DELTA_ADDED;

        /* against the old version only where that was a file git wrote */
        if (o != NULL
            && (gg_mode_is(o, "100644") || gg_mode_is(o, "100755")
                || gg_mode_is(o, "120000")))
        {
            d.status = GIT_DELTA_MODIFIED;
            d.old_file.id = o->id;
            d.old_file.mode = o->m;
            d.old_file.path = c->path.data;
        }

        rc = gg_delta(c, &d, ++c->nfile);
    }

    c->path.len = plen;
    free(e);
    free(oe);
    git_odb_object_free(obj);
    git_odb_object_free(oobj);
    return rc;
}


/* every changed entry of tree against ptree (NULL: a root commit, a
 * tagged tree: every entry) */
static int
gg_tree(gg_ctx_t *c, const git_oid *ptree, const git_oid *tree)
{
    c->path.len = 0;
    c->nfile = 0;
    return gg_walk(c, ptree, tree, 0);
}


/* commits and tags, from their raw bytes */

/* "<key> <hex of id>\n", exactly */
static int
gg_header_id(const char *s, size_t len, const char *key, const git_oid *id)
{
    char  hex[GIT_OID_HEXSZ + 1];

    if (id == NULL) {
        return 0;
    }
    git_oid_tostr(hex, sizeof(hex), id);
    return gg_header_is(s, len, key, hex);
}


/*
 * A commit's raw bytes: the message (every byte after the first empty
 * line), the first author and committer lines (raw, continuation lines
 * included), every other header line as one field; only a "tree" line
 * first and the "parent" lines after it, each exactly "<key> <hex>" of
 * the commit's tree and parents, are left out.
 */
static int
gg_commit_raw(gg_ctx_t *c, const git_commit *commit, const char *p,
    size_t len)
{
    int          rc, author, committer, canon;
    size_t       elen, np;
    gg_buf_t     h;
    const char  *end, *s, *msg;

    memset(&h, 0, sizeof(h));
    end = p + len;
    msg = end;
    author = 0;
    committer = 0;
    canon = 1;
    np = 0;
    rc = 0;

    while (rc == 0 && gg_header_next(&p, end, &s, &elen, &msg)) {

        if (canon && s == end - len
            && gg_header_id(s, elen, "tree", git_commit_tree_id(commit)))
        {
            continue;
        }
        if (canon && np < git_commit_parentcount(commit)
            && gg_header_id(s, elen, "parent",
                            git_commit_parent_id(commit, (unsigned) np)))
        {
            np++;
            continue;
        }
        canon = 0;

        if (!author && gg_header_prefix(s, elen, "author ")) {
            author = 1;
            rc = gg_simple(c, GG_F_AUTHOR, s, elen);
        } else if (!committer && gg_header_prefix(s, elen, "committer ")) {
            committer = 1;
            rc = gg_simple(c, GG_F_COMMITTER, s, elen);
        } else if (gg_buf_add(&h, s, elen) != 0) {
            snprintf(c->err, c->errlen, "out of memory");
            rc = -1;
        }
    }

    if (rc == 0 && h.len) {
        rc = gg_simple(c, GG_F_HEADER, h.data, h.len);
    }
    if (rc == 0) {
        rc = gg_simple(c, GG_F_MESSAGE, msg, (size_t) (end - msg));
    }
    free(h.data);
    return rc;
}


/* an object's raw bytes, of the type expected */
static int
gg_raw(gg_ctx_t *c, git_odb_object **obj, const git_oid *id,
    git_object_t type)
{
    if (git_odb_read(obj, c->odb, id) != 0) {
        snprintf(c->err, c->errlen, "cannot read %s %s", c->obj_kind,
                 c->obj);
        return -1;
    }
    if (git_odb_object_type(*obj) != type) {
        git_odb_object_free(*obj);
        *obj = NULL;
        snprintf(c->err, c->errlen, "%s %s is not one", c->obj_kind,
                 c->obj);
        return -1;
    }
    return 0;
}


static int
gg_commit(gg_ctx_t *c, const git_oid *oid)
{
    int              rc;
    git_commit      *commit, *parent;
    git_odb_object  *raw;

    commit = NULL;
    parent = NULL;
    raw = NULL;
    rc = -1;

    git_oid_tostr(c->obj, GG_SHORT + 1, oid);
    c->obj_kind = "commit";
    bottle_scan_reset(c->s, GG_DETECTORS);
    c->field = 0;
    c->r->commits++;

    if (git_commit_lookup(&commit, c->repo, oid) != 0
        || (git_commit_parentcount(commit) > 0
            && git_commit_parent(&parent, commit, 0) != 0))
    {
        snprintf(c->err, c->errlen, "cannot read commit %s", c->obj);
        goto cleanup;
    }

    if (gg_raw(c, &raw, oid, GIT_OBJECT_COMMIT) != 0
        || gg_commit_raw(c, commit, git_odb_object_data(raw),
                         git_odb_object_size(raw)) != 0
        || gg_tree(c, parent ? git_commit_tree_id(parent) : NULL,
                   git_commit_tree_id(commit)) != 0)
    {
        goto cleanup;
    }

    rc = 0;

cleanup:

    git_odb_object_free(raw);
    git_commit_free(parent);
    git_commit_free(commit);
    return rc;
}


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
 * An annotated tag's raw bytes: its first "tag" and "tagger" lines (raw,
 * continuation lines included) each a field, every other header line
 * (between tagger and the message, a tool's, ...) one field, the message
 * every byte after the first empty line; only an "object" line first and
 * a "type" line after it, exactly the tag's target and its type, are left
 * out.  A name that matched is withheld from the other fields' "where".
 */
static int
gg_tag(gg_ctx_t *c, const git_tag *tag, const git_oid *id, size_t index,
    int withheld)
{
    int              n, rc, tagger, named, k;
    size_t           elen, len;
    gg_buf_t         h, type;
    gg_field_t       fd;
    const char      *p, *end, *s, *msg, *name;
    git_odb_object  *raw;

    c->r->tags++;
    name = git_tag_name(tag);

    if (gg_raw(c, &raw, id, GIT_OBJECT_TAG) != 0) {
        return -1;
    }

    p = git_odb_object_data(raw);
    len = git_odb_object_size(raw);
    end = p + len;
    msg = end;

    memset(&h, 0, sizeof(h));
    memset(&type, 0, sizeof(type));
    memset(&fd, 0, sizeof(fd));
    fd.index = index;
    fd.name = withheld ? NULL : name;

    tagger = 0;
    named = 0;
    k = 0;
    rc = 0;

    /* "type <type>\n", exactly */
    if (gg_buf_add(&type, "type ", 5) != 0
        || gg_buf_add(&type, git_object_type2string(git_tag_target_type(tag)),
                      strlen(git_object_type2string(git_tag_target_type(tag))))
           != 0
        || gg_buf_add(&type, "\n", 1) != 0)
    {
        snprintf(c->err, c->errlen, "out of memory");
        rc = -1;
    }

    while (rc == 0 && gg_header_next(&p, end, &s, &elen, &msg)) {
        k++;

        if (k == 1
            && gg_header_id(s, elen, "object", git_tag_target_id(tag)))
        {
            continue;
        }
        if (k == 2 && elen == type.len && memcmp(s, type.data, elen) == 0) {
            continue;
        }
        k = 3;

        if (!named && gg_header_prefix(s, elen, "tag ")) {
            named = 1;
            fd.kind = GG_F_TAG_NAME;
            fd.data = s;
            fd.len = elen;
            n = gg_field(c, &fd);
            if (n < 0) {
                rc = -1;
            } else if (n) {
                fd.name = NULL;
            }

        } else if (!tagger && gg_header_prefix(s, elen, "tagger ")) {
            tagger = 1;
            fd.kind = GG_F_TAGGER;
            fd.data = s;
            fd.len = elen;
            rc = gg_field(c, &fd) < 0 ? -1 : 0;

        } else if (gg_buf_add(&h, s, elen) != 0) {
            snprintf(c->err, c->errlen, "out of memory");
            rc = -1;
        }
    }

    if (rc == 0 && h.len) {
        fd.kind = GG_F_TAG_HEADER;
        fd.data = h.data;
        fd.len = h.len;
        rc = gg_field(c, &fd) < 0 ? -1 : 0;
    }
    if (rc == 0) {
        fd.kind = GG_F_TAG_MESSAGE;
        fd.data = msg;
        fd.len = (size_t) (end - msg);
        rc = gg_field(c, &fd) < 0 ? -1 : 0;
    }

    free(h.data);
    free(type.data);
    git_odb_object_free(raw);
    return rc;
}


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
    if (quarantine != NULL && *quarantine != '\0') {
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
    gg_budget_start(&c);
    c.r = out;
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

    git_libgit2_init();

    /*
     * receive-pack's index-pack or unpack-objects hashed every pushed
     * object as it wrote it; hashing each again on read would be most of
     * the cost of a scan
     */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);

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
    c.mem_kb = (uint64_t) GG_SCAN_MEMORY_MB << 10;
    env = getenv("GITGATE_SCAN_MEMORY_MB");
    if (env != NULL && *env >= '1' && *env <= '9') {
        mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb <= (1ULL << 20)) {
            c.mem_kb = mb << 10;
        }
    }
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

    if (bottle_scan_acquire(&c.s, sec, GG_DETECTORS) != 0) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    if (bottle_generic_create(&c.gen, err, errlen) != 0) {
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
    bottle_generic_free(c.gen);
    git_revwalk_free(walk);
    git_odb_free(c.odb);
    git_repository_free(c.repo);
    git_libgit2_shutdown();
    gg_extents_free(&c.xo);
    gg_extents_free(&c.xn);
    gg_pack_close(c.pack);
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
