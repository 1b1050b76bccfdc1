/*
 * git-gate's pack reader (gg_pack.h): a blob as extents, never built
 * whole (gg_pack_extents()).  Its delta chain is walked down to a whole
 * entry without recursion, then each delta's ops map onto the extents of
 * its base: an insert is an extent into the delta's inflated bytes, a
 * copy of base[off, off + len) the slice of the base's extents covering
 * that range (a binary search on their positions).  The sources (whole
 * entries' data, deltas' bytes) live in the reader's cache, held while
 * the extents are; a delta's bytes are cached under their entry's offset
 * with GG_OFF_DELTA, apart from the object the entry resolves to.
 *
 * Every op is checked by gg_delta_next() against both sizes; the base's
 * size must be the delta's declared source size, so every copy lies
 * inside the base's extents.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_blob.h"
#include "gg_pack_int.h"


static int
gg_hold(gg_extents_t *x, gg_pobj_t *o)
{
    size_t       k;
    gg_pobj_t  **h;

    if (x->nheld == x->hcap) {
        k = x->hcap ? 2 * x->hcap : 16;
        h = realloc(x->held, k * sizeof(*h));
        if (h == NULL) {
            return -1;
        }
        x->held = h;
        x->hcap = k;
    }
    x->held[x->nheld++] = o;
    return 0;
}


void
gg_extents_release(gg_pack_t *p, gg_extents_t *x)
{
    size_t  i;

    for (i = 0; i < x->nheld; i++) {
        gg_pack_put(p, x->held[i]);
    }
    x->nheld = 0;
    x->n = 0;
    x->len = 0;
}


void
gg_extents_free(gg_extents_t *x)
{
    free(x->e);
    free(x->held);
    memset(x, 0, sizeof(*x));
}


/* one more extent into e (n of cap), joined to the last when it goes on
 * from it; -1 over max or out of memory */
static int
gg_ext_push(gg_ext_t **e, size_t *n, size_t *cap, size_t max,
    gg_pobj_t *src, uint64_t soff, uint64_t pos, uint64_t len)
{
    size_t     k;
    gg_ext_t  *t, *last;

    if (*n > 0) {
        last = &(*e)[*n - 1];
        if (last->src == src && last->soff + last->len == soff) {
            last->len += len;
            return 0;
        }
    }
    if (*n == max) {
        return -1;
    }
    if (*n == *cap) {
        k = *cap ? 2 * *cap : 256;
        t = realloc(*e, k * sizeof(*t));
        if (t == NULL) {
            return -1;
        }
        *e = t;
        *cap = k;
    }
    t = &(*e)[(*n)++];
    t->src = src;
    t->soff = soff;
    t->p = src->data + soff;
    t->pos = pos;
    t->len = len;
    return 0;
}


size_t
gg_ext_find(const gg_ext_t *e, size_t n, uint64_t pos, size_t hint)
{
    size_t  lo, hi, mid, step;

    lo = hint < n ? hint : 0;
    if (e[lo].pos <= pos && pos - e[lo].pos < e[lo].len) {
        return lo;
    }
    if (e[lo].pos < pos) {
        /* forward: e[lo].pos <= pos, find hi with e[hi].pos > pos */
        step = 1;
        hi = lo + 1;
        while (hi < n && e[hi].pos <= pos) {
            lo = hi;
            step *= 2;
            hi = lo + step;
        }
        if (hi > n) {
            hi = n;
        }
    } else {
        /* backward: e[hi].pos > pos, find lo with e[lo].pos <= pos */
        hi = lo;
        step = 1;
        lo = hi >= step ? hi - step : 0;
        while (lo > 0 && e[lo].pos > pos) {
            hi = lo;
            step *= 2;
            lo = hi >= step ? hi - step : 0;
        }
    }
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (e[mid].pos <= pos) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}


/* a whole entry's object, held: from the cache or inflated into it */
static int
gg_whole(gg_pobj_t **out, gg_pack_t *p, uint32_t pack, uint64_t off,
    int type, uint64_t size, uint64_t data_off, char *err, size_t errlen)
{
    unsigned char        *d;
    gg_pobj_t            *o;
    const gg_packfile_t  *f;

    o = gg_cache_find(p, pack, off);
    if (o != NULL) {
        o->refs++;
        *out = o;
        return 0;
    }
    f = &p->f[pack];
    if (size > GG_BLOB_MAX) {
        return 1;
    }
    if (size / GG_ZLIB_RATIO > f->pack_len - data_off) {
        snprintf(err, errlen, "a pack entry is corrupt");
        return -1;
    }
    d = gg_alloc((size_t) size + GG_SLACK);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d[size] = '\0';
    if (gg_inflate(p, f, data_off, d, (size_t) size) != 0) {
        free(d);
        snprintf(err, errlen, "a pack entry does not inflate to its size");
        return -1;
    }
    o = gg_cache_add(p, pack, off, type, d, (size_t) size);
    if (o == NULL) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = o;
    return 0;
}


/*
 * A delta entry's inflated bytes, held (cached apart from its object),
 * and after them its inserts' literals one after the other: consecutive
 * inserts (at most 127 bytes each, an op byte between them in the delta)
 * are then one extent.  gg_ext_delta() walks the same ops with the same
 * checks, so it reaches no insert this walk did not copy.
 */
static int
gg_delta_bytes(gg_pobj_t **out, gg_pack_t *p, uint32_t pack, uint64_t off,
    uint64_t dsize, uint64_t data_off, char *err, size_t errlen)
{
    size_t                lit;
    unsigned char        *d;
    gg_pobj_t            *o;
    gg_delta_op_t         op;
    gg_delta_iter_t       it;
    const gg_packfile_t  *f;

    o = gg_cache_find(p, pack, off | GG_OFF_DELTA);
    if (o != NULL) {
        o->refs++;
        *out = o;
        return 0;
    }
    f = &p->f[pack];
    if (dsize > GG_BLOB_MAX + GG_BLOB_MAX / 64 + 64
        || dsize / GG_ZLIB_RATIO > f->pack_len - data_off)
    {
        snprintf(err, errlen, "a pack entry is corrupt");
        return -1;
    }
    /* the literals are fewer bytes than the delta */
    d = malloc(2 * (size_t) dsize + 1);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (gg_inflate(p, f, data_off, d, (size_t) dsize) != 0) {
        free(d);
        snprintf(err, errlen, "a delta in a pack is corrupt");
        return -1;
    }
    lit = (size_t) dsize;
    if (gg_delta_init(&it, d, (size_t) dsize) == 0) {
        while (gg_delta_next(&it, &op) == 1) {
            if (!op.copy) {
                memcpy(d + lit, op.data, op.len);
                lit += op.len;
            }
        }
    }
    d[lit] = '\0';
    o = gg_cache_add(p, pack, off | GG_OFF_DELTA, 0, d, lit);
    if (o == NULL) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    o->dlen = (size_t) dsize;
    *out = o;
    return 0;
}


/*
 * One delta (its bytes held in dobj) over the base's extents x->e into
 * p->xt, then swapped into x: 0; 1 over max extents or GG_BLOB_MAX; -1
 * corrupt (a bad op, the base's size not the delta's source size); -2
 * out of memory.
 */
static int
gg_ext_delta(gg_pack_t *p, gg_extents_t *x, gg_pobj_t *dobj, size_t max,
    char *err, size_t errlen)
{
    int              rc;
    size_t           n, i, cap, last;
    uint64_t         pos, at, want, skip, take, lit;
    gg_ext_t        *t, *b;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    if (gg_delta_init(&it, dobj->data, dobj->dlen) != 0
        || it.src_size != x->len)
    {
        snprintf(err, errlen, "a delta in a pack is corrupt");
        return -1;
    }
    if (it.dst_size > GG_BLOB_MAX) {
        return 1;
    }

    n = 0;
    last = 0;
    cap = p->xtcap;
    t = p->xt;
    rc = 0;
    lit = dobj->dlen;
    while ((rc = gg_delta_next(&it, &op)) == 1) {
        pos = it.done - op.len;
        if (!op.copy) {
            /* the literals gg_delta_bytes() laid out, in op order */
            if (op.len > dobj->len - lit
                || gg_ext_push(&t, &n, &cap, max, dobj, lit, pos, op.len)
                   != 0)
            {
                rc = op.len > dobj->len - lit ? -1 : 2;
                break;
            }
            lit += op.len;
            continue;
        }
        /* base[op.off, op.off + op.len): inside x (checked: src_size) */
        i = gg_ext_find(x->e, x->n, op.off, last);
        at = op.off;
        want = op.len;
        while (want > 0 && i < x->n) {
            b = &x->e[i];
            skip = at - b->pos;
            take = b->len - skip < want ? b->len - skip : want;
            if (gg_ext_push(&t, &n, &cap, max, b->src, b->soff + skip,
                            pos, take)
                != 0)
            {
                rc = 2;
                break;
            }
            pos += take;
            at += take;
            want -= take;
            i++;
        }
        if (rc == 2) {
            break;
        }
        last = i > 0 ? i - 1 : 0;
    }
    p->xt = t;
    p->xtcap = cap;

    if (rc == 2) {
        /* over max extents, or out of memory: read it whole instead */
        return n == max ? 1 : -2;
    }
    if (rc != 0) {
        snprintf(err, errlen, "a delta in a pack is corrupt");
        return -1;
    }

    /* the new list is x's; x's old array the scratch */
    b = x->e;
    x->e = p->xt;
    p->xt = b;
    p->xtcap = x->cap;
    x->cap = cap;
    x->n = n;
    x->len = it.dst_size;
    return 0;
}


/* the extents cache */

static gg_xcache_t *
gg_xc_find(gg_pack_t *p, uint32_t pack, uint64_t off)
{
    size_t  i;

    for (i = 0; i < p->nxc; i++) {
        if (p->xc[i].pack == pack && p->xc[i].off == off) {
            p->xc[i].used = ++p->xtick;
            return &p->xc[i];
        }
    }
    return NULL;
}


static void
gg_xc_drop(gg_pack_t *p, size_t i)
{
    gg_xcache_t  *e;

    e = &p->xc[i];
    p->xcext -= e->x.n;
    gg_extents_release(p, &e->x);
    gg_extents_free(&e->x);
    p->xc[i] = p->xc[--p->nxc];
}


/* the cached extents, freed without putting their sources (closing):
 * gg_pack_close() calls it through p->xc_free */
static void
gg_xcache_free(gg_pack_t *p)
{
    size_t  i;

    for (i = 0; i < p->nxc; i++) {
        gg_extents_free(&p->xc[i].x);
    }
    free(p->xc);
    p->xc = NULL;
    p->nxc = 0;
}


/* x copied in, holding its sources again: 0, -1 out of memory */
static int
gg_xcopy(gg_extents_t *to, const gg_extents_t *x)
{
    size_t      i;
    gg_ext_t   *t;

    if (to->cap < x->n) {
        t = realloc(to->e, x->n * sizeof(*t));
        if (t == NULL) {
            return -1;
        }
        to->e = t;
        to->cap = x->n;
    }
    if (x->n > 0) {
        memcpy(to->e, x->e, x->n * sizeof(*t));
    }
    to->n = x->n;
    to->len = x->len;
    for (i = 0; i < x->nheld; i++) {
        if (gg_hold(to, x->held[i]) != 0) {
            return -1;
        }
        x->held[i]->refs++;
    }
    return 0;
}


/* x kept as the extents of (pack, off), if it fits; a failure is no
 * error (the next version builds its chain again) */
static void
gg_xc_put(gg_pack_t *p, uint32_t pack, uint64_t off, const gg_extents_t *x)
{
    size_t        i, lru;
    gg_xcache_t  *e;

    if (x->n > GG_XCACHE_EXT / 4 || gg_xc_find(p, pack, off) != NULL) {
        return;
    }
    /* the kept extents hold their sources: not beyond the cache's byte
     * budget (every add trims what nothing holds, so what is over it is
     * held); the oldest let go first, then none kept */
    while (p->nxc > 0 && p->used > p->budget) {
        lru = 0;
        for (i = 1; i < p->nxc; i++) {
            if (p->xc[i].used < p->xc[lru].used) {
                lru = i;
            }
        }
        gg_xc_drop(p, lru);
    }
    if (p->used > p->budget) {
        return;
    }
    if (p->xc == NULL) {
        p->xc = calloc(GG_XCACHE_N, sizeof(*p->xc));
        if (p->xc == NULL) {
            return;
        }
        p->xc_free = gg_xcache_free;
    }
    while (p->nxc > 0
           && (p->nxc == GG_XCACHE_N || p->xcext + x->n > GG_XCACHE_EXT))
    {
        lru = 0;
        for (i = 1; i < p->nxc; i++) {
            if (p->xc[i].used < p->xc[lru].used) {
                lru = i;
            }
        }
        gg_xc_drop(p, lru);
    }
    e = &p->xc[p->nxc];
    memset(e, 0, sizeof(*e));
    if (gg_xcopy(&e->x, x) != 0) {
        gg_extents_release(p, &e->x);
        gg_extents_free(&e->x);
        return;
    }
    e->pack = pack;
    e->off = off;
    e->used = ++p->xtick;
    p->xcext += e->x.n;
    p->nxc++;
}


/*
 * The chain of oid walked down to its whole entry, headers only: its
 * deltas in p->cpack, p->coff (nearest first, *depth of them), the whole
 * entry's place, type, size and data.  0, 1 (in no pack, a base in none),
 * -1 corrupt or too deep.
 */
static int
gg_chain(int *depth, uint32_t *rpack, uint64_t *roff, int *rtype,
    uint64_t *rsize, uint64_t *rdata, gg_pack_t *p, const unsigned char *oid,
    char *err, size_t errlen)
{
    int                   type;
    uint32_t              cp;
    uint64_t              co, size, data_off, base_off;
    const gg_packfile_t  *f;
    const unsigned char  *base_oid;
    unsigned char        hdr[GG_ENTRY_MAX];

    /* whole somewhere: the oid's first whole entry */
    if (gg_pack_find_whole(&cp, &co, p, oid) != 0
        && gg_pack_find(&cp, &co, p, oid, 0) != 0)
    {
        return 1;
    }

    *depth = 0;
    for ( ;; ) {
        f = &p->f[cp];
        if (gg_packfile_entry(&type, &size, &data_off, &base_off,
                              &base_oid, hdr, f, co)
            != 0)
        {
            snprintf(err, errlen, "a pack entry is corrupt");
            return -1;
        }
        if (type != GG_OBJ_OFS_DELTA && type != GG_OBJ_REF_DELTA) {
            break;
        }
        if (*depth == GG_PACK_DEPTH) {
            snprintf(err, errlen, "a delta chain deeper than %d",
                     GG_PACK_DEPTH);
            return -1;
        }
        p->cpack[*depth] = cp;
        p->coff[*depth] = co;
        (*depth)++;

        if (type == GG_OBJ_OFS_DELTA) {
            co = base_off;
        } else if (gg_pack_find_whole(&cp, &co, p, base_oid) != 0
                   && gg_pack_find(&cp, &co, p, base_oid, cp) != 0)
        {
            /* loose, or in an alternate: git cat-file's to read */
            return 1;
        }
    }
    *rpack = cp;
    *roff = co;
    *rtype = type;
    *rsize = size;
    *rdata = data_off;
    return 0;
}


int
gg_pack_root(uint32_t *pack, uint64_t *off, gg_pack_t *p,
    const unsigned char *oid, char *err, size_t errlen)
{
    int       depth, type;
    uint64_t  size, data_off;

    return gg_chain(&depth, pack, off, &type, &size, &data_off, p, oid, err,
                    errlen);
}


int
gg_pack_extents(gg_extents_t *out, gg_pack_t *p, const unsigned char *oid,
    size_t max, char *err, size_t errlen)
{
    int                   type, depth, i, rc, from;
    uint32_t              cp;
    uint64_t              co, size, data_off, base_off;
    gg_pobj_t            *o;
    gg_xcache_t          *xc;
    const gg_packfile_t  *f;
    const unsigned char  *base_oid;
    unsigned char        hdr[GG_ENTRY_MAX];

    out->n = 0;
    out->nheld = 0;
    out->len = 0;
    if (max == 0 || max > GG_EXT_MAX) {
        max = GG_EXT_MAX;
    }

    rc = gg_chain(&depth, &cp, &co, &type, &size, &data_off, p, oid, err,
                  errlen);
    if (rc != 0) {
        return rc;
    }
    if (type != GG_OBJ_BLOB) {
        return 1;
    }

    /* the nearest version on the chain whose extents are kept */
    from = depth - 1;
    for (i = 0; i < depth; i++) {
        xc = gg_xc_find(p, p->cpack[i], p->coff[i]);
        if (xc != NULL) {
            if (xc->x.n > max) {
                return 1;
            }
            if (gg_xcopy(out, &xc->x) != 0) {
                goto oom;
            }
            from = i - 1;
            break;
        }
    }

    if (i == depth) {
        rc = gg_whole(&o, p, cp, co, type, size, data_off, err, errlen);
        if (rc != 0) {
            return rc;
        }
        if (gg_hold(out, o) != 0) {
            gg_pack_put(p, o);
            goto oom;
        }
        if (o->len > 0
            && gg_ext_push(&out->e, &out->n, &out->cap, max, o, 0, 0,
                           o->len)
               != 0)
        {
            goto oom;
        }
        out->len = o->len;
    }

    /* back up the chain, each delta onto the extents before it */
    for (i = from; i >= 0; i--) {
        cp = p->cpack[i];
        co = p->coff[i];
        f = &p->f[cp];
        if (gg_packfile_entry(&type, &size, &data_off, &base_off,
                              &base_oid, hdr, f, co)
            != 0)
        {
            snprintf(err, errlen, "a pack entry is corrupt");
            goto fail;
        }
        if (gg_delta_bytes(&o, p, cp, co, size, data_off, err, errlen)
            != 0)
        {
            goto fail;
        }
        if (gg_hold(out, o) != 0) {
            gg_pack_put(p, o);
            goto oom;
        }
        rc = gg_ext_delta(p, out, o, max, err, errlen);
        if (rc == 1) {
            gg_extents_release(p, out);
            return 1;
        }
        if (rc == -2) {
            goto oom;
        }
        if (rc != 0) {
            goto fail;
        }
        /* the version and its base: the next version on this chain (a
         * file's next one in the push) starts from one of them */
        if (i <= 1) {
            gg_xc_put(p, cp, co, out);
        }
    }
    return 0;

oom:

    snprintf(err, errlen, "out of memory");

fail:

    gg_extents_release(p, out);
    return -1;
}
