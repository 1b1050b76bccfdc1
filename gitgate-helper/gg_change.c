/*
 * git-gate's push scanner: one changed file (gg_delta()), handed over by
 * the tree walk (gg_raw.c): its versions read (the packs, else git
 * cat-file; gg_read(), also the walk's for a blob a ref points at), its
 * added lines scanned (gg_xfile(), gg_file()), the last new version kept
 * for the next commit's change of the same file.  It calls neither the
 * walk nor gg_scan.c.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int
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
int
gg_delta(gg_ctx_t *c, const git_diff_delta *d, size_t index)
{
    int          n, rc, fresh, packed, xdone, dec;
    size_t       nlen, olen;
    gg_blob_t   *oldb, *newb;
    gg_pobj_t   *npo, *opo;
    gg_tail_t    t;
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
        /* bytes appended to a version the scan has read before: the
         * delta's literals alone (gg_tail.c) */
        rc = gg_tail_file(c, n ? NULL : d->new_file.path, index,
                          &d->old_file.id, &d->new_file.id);
        if (rc != 0) {
            return rc < 0 ? -1 : 0;
        }
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
    dec = rc == 0 && nlen > 0 && gg_dec_wanted(nd, nlen);
    if (dec) {
        rc = gg_decoded(c, n ? NULL : d->new_file.path, index, od, olen, nd,
                        nlen);
    }

    /* what a later push appending to either version needs (gg_tail.c) */
    if (rc == 0 && !xdone && c->tails >= 0) {
        if (nlen >= GG_TAIL_MIN) {
            gg_tail_of(c, &t, nd, nlen, dec);
            gg_tail_put(c->tails, d->new_file.id.id, &t);
        }
        if (od != NULL && olen >= GG_TAIL_MIN
            && gg_tail_get(c->tails, d->old_file.id.id, &t) == 0)
        {
            gg_tail_of(c, &t, od, olen, gg_dec_wanted(od, olen));
            gg_tail_put(c->tails, d->old_file.id.id, &t);
        }
    }

    gg_pack_put(c->pack, npo);
    gg_pack_put(c->pack, opo);

    if (rc == 0 && fresh) {
        gg_cache_keep(c, &d->new_file.id);
    }
    return rc;
}
