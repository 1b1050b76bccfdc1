/*
 * git-gate's push scanner: a modified file's added lines with neither
 * version built whole (gg_xfile()).  Both versions come from the pack
 * reader as extents (gg_pack_extents(): stretches of immutable sources, a
 * whole entry's data keyed by its oid or a delta's inflated bytes); where
 * an extent of the old version and one of the new cover the same bytes
 * of the same source, those bytes are in both files: a common stretch,
 * as a delta's copy is (gg_lines.c).  gg_match_lines() (gg_view.c) keeps
 * the stretches in order in both and counts a line of the new version
 * unchanged only when it lies wholly inside one of them; only the added
 * lines' bytes are read out, through the extents.
 *
 * Where the extents cannot relate the two (a version in no pack, over
 * GG_EXT_MAX extents, no source in common), gg_file() reads both whole.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scan_int.h"


static int
gg_src_cmp(const void *a, const void *b)
{
    const gg_ext_t  *x, *y;

    x = a;
    y = b;
    if (x->src != y->src) {
        return (uintptr_t) x->src < (uintptr_t) y->src ? -1 : 1;
    }
    if (x->soff != y->soff) {
        return x->soff < y->soff ? -1 : 1;
    }
    return 0;
}


/* x's extents sorted by source into *arr */
static int
gg_by_src(gg_ext_t **arr, size_t *cap, const gg_extents_t *x)
{
    gg_ext_t  *t;

    if (*cap < x->n) {
        t = realloc(*arr, x->n * sizeof(*t));
        if (t == NULL) {
            return -1;
        }
        *arr = t;
        *cap = x->n;
    }
    if (x->n > 0) {
        memcpy(*arr, x->e, x->n * sizeof(*t));
        qsort(*arr, x->n, sizeof(*t), gg_src_cmp);
    }
    return 0;
}


/*
 * The stretches the two versions share: a sweep along each source over
 * both versions' extents on it.  Extents of one version that overlap
 * each other (bytes it repeats) may miss a match, which only leaves more
 * lines added.
 */
static int
gg_ext_match(gg_ctx_t *c)
{
    size_t           i, j, k;
    uint64_t         lo, hi, ea, eb;
    gg_match_t      *m;
    const gg_ext_t  *x, *y;

    if (gg_by_src(&c->xs, &c->xscap, &c->xo) != 0
        || gg_by_src(&c->xs2, &c->xs2cap, &c->xn) != 0)
    {
        return -1;
    }

    c->nm = 0;
    i = 0;
    j = 0;
    while (i < c->xo.n && j < c->xn.n) {
        x = &c->xs[i];
        y = &c->xs2[j];
        if (x->src != y->src) {
            if ((uintptr_t) x->src < (uintptr_t) y->src) {
                i++;
            } else {
                j++;
            }
            continue;
        }
        ea = x->soff + x->len;
        eb = y->soff + y->len;
        lo = x->soff > y->soff ? x->soff : y->soff;
        hi = ea < eb ? ea : eb;
        if (lo < hi) {
            if (c->nm == c->mcap) {
                k = c->mcap ? 2 * c->mcap : 1024;
                m = realloc(c->m, k * sizeof(*m));
                if (m == NULL) {
                    return -1;
                }
                c->m = m;
                c->mcap = k;
            }
            m = &c->m[c->nm++];
            m->o = x->pos + (lo - x->soff);
            m->n = y->pos + (lo - y->soff);
            m->len = hi - lo;
        }
        if (ea <= eb) {
            i++;
        } else {
            j++;
        }
    }
    return 0;
}


int
gg_xfile(gg_ctx_t *c, const char *path, size_t index, const git_oid *oid,
    const git_oid *nid)
{
    int          rc;
    uint32_t     p1, p2;
    uint64_t     o1, o2;
    gg_view_t    ov, dv;
    gg_field_t   fd;

    /* chains that end apart share no source: nothing to build */
    rc = gg_pack_root(&p1, &o1, c->pack, oid->id, c->err, c->errlen);
    if (rc == 0) {
        rc = gg_pack_root(&p2, &o2, c->pack, nid->id, c->err, c->errlen);
    }
    if (rc != 0 || p1 != p2 || o1 != o2) {
        return rc < 0 ? -1 : 0;
    }

    rc = gg_pack_extents(&c->xo, c->pack, oid->id, 0, c->err, c->errlen);
    if (rc != 0) {
        return rc == 1 ? 0 : -1;
    }
    rc = gg_pack_extents(&c->xn, c->pack, nid->id, 0, c->err, c->errlen);
    if (rc != 0) {
        gg_extents_release(c->pack, &c->xo);
        return rc == 1 ? 0 : -1;
    }

    rc = 0;
    if (gg_ext_match(c) != 0) {
        snprintf(c->err, c->errlen, "out of memory");
        rc = -1;
        goto cleanup;
    }
    /* nothing in common: a real diff may find more (read them whole) */
    if (c->nm == 0 && c->xo.len > 0 && c->xn.len > 0) {
        goto cleanup;
    }

    gg_view_ext(&ov, &c->xo);
    gg_view_ext(&dv, &c->xn);
    if (gg_match_lines(c, &ov, &dv) != 0) {
        rc = -1;
        goto cleanup;
    }

    memset(&fd, 0, sizeof(fd));
    fd.kind = GG_F_FILE;
    fd.name = path;
    fd.index = index;
    fd.first_line = 1;
    fd.data = c->add.data;
    fd.len = c->add.len;
    fd.lines = c->lines;
    fd.nlines = c->nlines;

    c->r->files++;
    c->r->delta_files++;
    c->r->extent_files++;
    c->r->added += fd.len - c->ctxlen;
    rc = gg_field(c, &fd) < 0 ? -1 : 1;

cleanup:

    gg_extents_release(c->pack, &c->xn);
    gg_extents_release(c->pack, &c->xo);
    return rc;
}
