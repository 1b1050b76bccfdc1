/*
 * git-gate's push scanner: the objects a push brings, read from their raw
 * bytes: a commit's tree against its parent's, walked entry by entry (a
 * changed file handed to gg_change.c's gg_delta()), a commit's and an
 * annotated tag's headers and message; the walk that finds the commits
 * and tags is gg_scan.c's.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_object.h"
#include "gg_scan_int.h"
#include "gg_trailer.h"


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
int
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
static int gg_commit_trailers(gg_ctx_t *c, const char *msg, size_t len);


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
    if (rc == 0) {
        rc = gg_commit_trailers(c, msg, (size_t) (end - msg));
    }
    free(h.data);
    return rc;
}


/*
 * The commit's Bottle-Id trailers (gg_trailer.h): one naming another
 * bottle than the pusher refuses, and so does none on a repo whose grant
 * requires it (git_gate.trailer_required).  The value is not repeated:
 * the agent wrote it.
 */
static int
gg_commit_trailers(gg_ctx_t *c, const char *msg, size_t len)
{
    char                 where[GG_OID_HEXSZ + 160];
    gg_trailers_t        t;
    const gg_updates_t  *u = c->updates;

    if (u == NULL || u->bottle == NULL) {
        return 0;
    }

    gg_trailers(&t, msg, len, u->bottle, strlen(u->bottle));

    if (t.other) {
        snprintf(where, sizeof(where), "commit %s: trailer "
                 GG_TRAILER_NAME ": names another bottle than the one "
                 "pushing", c->obj);
        return gg_refusal(c, GG_TRAILER_RULE, where);
    }

    if (u->trailer_required && t.named == 0) {
        snprintf(where, sizeof(where), "commit %s: trailer "
                 GG_TRAILER_NAME ": missing, and this repo requires it",
                 c->obj);
        return gg_refusal(c, GG_TRAILER_RULE, where);
    }

    return 0;
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


int
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


/*
 * An annotated tag's raw bytes: its first "tag" and "tagger" lines (raw,
 * continuation lines included) each a field, every other header line
 * (between tagger and the message, a tool's, ...) one field, the message
 * every byte after the first empty line; only an "object" line first and
 * a "type" line after it, exactly the tag's target and its type, are left
 * out.  A name that matched is withheld from the other fields' "where".
 */
int
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
