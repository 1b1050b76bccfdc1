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
gg_ptr_cmp(const void *a, const void *b)
{
    uintptr_t  x, y;

    x = (uintptr_t) *(gg_pobj_t * const *) a;
    y = (uintptr_t) *(gg_pobj_t * const *) b;
    return x < y ? -1 : x > y;
}


static int
gg_soff_cmp(const void *a, const void *b)
{
    const gg_ext_t  *x, *y;

    x = a;
    y = b;
    return x->soff < y->soff ? -1 : x->soff > y->soff;
}


/*
 * a[0, n) by soff, stable: a merge sort of the runs already in order (a
 * delta's copies mostly are, so a few runs and a few passes, not the
 * n log n comparisons through a function pointer qsort() makes); tmp
 * holds n
 */
static void
gg_soff_sort(gg_ext_t *a, gg_ext_t *tmp, size_t n)
{
    size_t     i, j, k, lo, mid, hi, nr, w, *run;
    gg_ext_t  *src, *dst, *t;

    /* the runs: counted, then their starts listed */
    nr = 1;
    for (i = 1; i < n; i++) {
        nr += a[i].soff < a[i - 1].soff;
    }
    if (nr <= 1) {
        return;
    }
    run = malloc((nr + 1) * sizeof(*run));
    if (run == NULL) {
        /* no memory for the list: the slow sort still sorts */
        qsort(a, n, sizeof(*a), gg_soff_cmp);
        return;
    }
    run[0] = 0;
    for (i = 1, k = 1; i < n; i++) {
        if (a[i].soff < a[i - 1].soff) {
            run[k++] = i;
        }
    }
    run[k] = n;

    src = a;
    dst = tmp;
    for (w = 1; w < nr; w *= 2) {
        for (k = 0; k < nr; k += 2 * w) {
            lo = run[k];
            mid = k + w < nr ? run[k + w] : n;
            hi = k + 2 * w < nr ? run[k + 2 * w] : n;
            i = lo;
            j = mid;
            t = dst + lo;
            while (i < mid && j < hi) {
                *t++ = src[j].soff < src[i].soff ? src[j++] : src[i++];
            }
            while (i < mid) {
                *t++ = src[i++];
            }
            while (j < hi) {
                *t++ = src[j++];
            }
        }
        t = src;
        src = dst;
        dst = t;
    }
    if (src != a) {
        memcpy(a, src, n * sizeof(*a));
    }
    free(run);
}


/* the bucket of src among the k sources both versions hold, or -1 */
static long
gg_bucket(gg_pobj_t *const *common, size_t k, const gg_pobj_t *src)
{
    size_t  lo, hi, mid;

    lo = 0;
    hi = k;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (common[mid] == src) {
            return (long) mid;
        }
        if ((uintptr_t) common[mid] < (uintptr_t) src) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}


/*
 * x's extents on the k common sources into *arr, by source (a counting
 * sort: in version order inside each, then sorted by offset in the
 * source where they are not already, which a delta's copies mostly
 * are); start[b] .. start[b + 1]: source b's
 */
static int
gg_by_src(gg_ext_t **arr, size_t *cap, gg_ext_t **tmp, size_t *tcap,
    size_t *start, const gg_extents_t *x, gg_pobj_t *const *common,
    size_t k)
{
    long       b;
    size_t     i, *at;
    gg_ext_t  *t;

    if (*cap < x->n + 1) {
        t = realloc(*arr, (x->n + 1) * sizeof(*t));
        if (t == NULL) {
            return -1;
        }
        *arr = t;
        *cap = x->n + 1;
    }
    if (*tcap < x->n + 1) {
        t = realloc(*tmp, (x->n + 1) * sizeof(*t));
        if (t == NULL) {
            return -1;
        }
        *tmp = t;
        *tcap = x->n + 1;
    }
    memset(start, 0, (k + 1) * sizeof(*start));
    for (i = 0; i < x->n; i++) {
        b = gg_bucket(common, k, x->e[i].src);
        if (b >= 0) {
            start[b + 1]++;
        }
    }
    for (i = 0; i < k; i++) {
        start[i + 1] += start[i];
    }
    at = start + k + 1;
    memcpy(at, start, (k + 1) * sizeof(*at));
    for (i = 0; i < x->n; i++) {
        b = gg_bucket(common, k, x->e[i].src);
        if (b >= 0) {
            (*arr)[at[b]++] = x->e[i];
        }
    }
    for (b = 0; b < (long) k; b++) {
        for (i = start[b] + 1; i < start[b + 1]; i++) {
            if ((*arr)[i].soff < (*arr)[i - 1].soff) {
                gg_soff_sort(*arr + start[b], *tmp + start[b],
                             start[b + 1] - start[b]);
                break;
            }
        }
    }
    return 0;
}


/* one more stretch: old[o, o + len) is new[n, n + len) */
static int
gg_stretch(gg_ctx_t *c, uint64_t o, uint64_t n, uint64_t len)
{
    size_t       k;
    gg_match_t  *m;

    /* one that goes on the last in both files: the last made longer (the
     * two versions' extents cut their common bytes at each other's
     * edges; gg_match_lines() would join them) */
    if (c->nm > 0) {
        m = &c->m[c->nm - 1];
        if (m->o + m->len == o && m->n + m->len == n) {
            m->len += len;
            return 0;
        }
    }

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
    m->o = o;
    m->n = n;
    m->len = len;
    return 0;
}


/*
 * The stretches the two versions share, in the new version's order: the
 * sources both hold, the old version's extents on them by source and
 * offset; then along the new version, each extent's overlaps with the
 * old one's on its source (a binary search).  Extents of the old version
 * that overlap each other (bytes it repeats) may miss a match, which
 * only leaves more lines added.
 */
static int
gg_ext_match(gg_ctx_t *c)
{
    int              rc;
    long             b;
    size_t           i, j, k, lo, hi, mid, step, n1, n2, *s1, *cur;
    uint64_t         l, h, ea, eb;
    gg_pobj_t      **h1, **h2, **common;
    const gg_ext_t  *x, *y;

    c->nm = 0;
    n1 = c->xo.nheld;
    n2 = c->xn.nheld;
    h1 = malloc((n1 + n2 + n1) * sizeof(*h1));
    s1 = malloc(3 * (n1 + 1) * sizeof(*s1));
    if (h1 == NULL || s1 == NULL) {
        free(h1);
        free(s1);
        return -1;
    }
    h2 = h1 + n1;
    common = h2 + n2;
    memcpy(h1, c->xo.held, n1 * sizeof(*h1));
    memcpy(h2, c->xn.held, n2 * sizeof(*h2));
    qsort(h1, n1, sizeof(*h1), gg_ptr_cmp);
    qsort(h2, n2, sizeof(*h2), gg_ptr_cmp);
    for (i = 0, j = 0, k = 0; i < n1 && j < n2; ) {
        if (h1[i] == h2[j]) {
            common[k++] = h1[i];
            i++;
            j++;
        } else if ((uintptr_t) h1[i] < (uintptr_t) h2[j]) {
            i++;
        } else {
            j++;
        }
    }

    rc = -1;
    if (gg_by_src(&c->xs, &c->xscap, &c->xs2, &c->xs2cap, s1, &c->xo,
                  common, k) != 0) {
        goto cleanup;
    }
    cur = s1 + 2 * (n1 + 1);
    for (b = 0; b < (long) k; b++) {
        cur[b] = s1[b];
    }

    for (j = 0; j < c->xn.n; j++) {
        y = &c->xn.e[j];
        b = gg_bucket(common, k, y->src);
        if (b < 0) {
            continue;
        }
        eb = y->soff + y->len;
        /* the last old extent starting at or before y, else the first:
         * from where the last search on this source ended, forward in
         * doubling steps (the new version mostly goes along a source) */
        lo = s1[b];
        hi = s1[b + 1];
        i = cur[b];
        if (i > lo && i < hi && c->xs[i].soff <= y->soff) {
            lo = i;
            for (step = 1;
                 lo + step < hi && c->xs[lo + step].soff <= y->soff;
                 step *= 2)
            {
                lo += step;
            }
            if (lo + step < hi) {
                hi = lo + step;
            }
        }
        while (hi - lo > 1) {
            mid = lo + (hi - lo) / 2;
            if (c->xs[mid].soff <= y->soff) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        cur[b] = lo;
        for (i = lo; i < s1[b + 1] && c->xs[i].soff < eb; i++) {
            x = &c->xs[i];
            ea = x->soff + x->len;
            l = x->soff > y->soff ? x->soff : y->soff;
            h = ea < eb ? ea : eb;
            if (l < h
                && gg_stretch(c, x->pos + (l - x->soff),
                              y->pos + (l - y->soff), h - l) != 0)
            {
                goto cleanup;
            }
        }
    }
    rc = 0;

cleanup:

    free(h1);
    free(s1);
    return rc;
}


/*
 * Both versions' extents, their common stretches, the added lines (1,
 * with *d the new version's view; the extents held: gg_extents_release()
 * both), or 0 (nothing held) or -1 as gg_xfile().
 */
static int
gg_xmatch(gg_ctx_t *c, gg_view_t *d, const git_oid *oid, const git_oid *nid)
{
    int          rc;
    uint32_t     p1, p2;
    uint64_t     o1, o2;
    gg_view_t    ov;

    /* chains that end apart share no source: nothing to build */
    rc = gg_pack_root(&p1, &o1, c->pack, oid->id, c->err, c->errlen);
    if (rc == 0) {
        rc = gg_pack_root(&p2, &o2, c->pack, nid->id, c->err, c->errlen);
    }
    if (rc != 0 || p1 != p2 || o1 != o2) {
        return rc < 0 ? -1 : 0;
    }

    rc = gg_pack_extents(&c->xo, c->pack, oid->id, c->xmax, c->err,
                         c->errlen);
    if (rc != 0) {
        return rc == 1 ? 0 : -1;
    }
    rc = gg_pack_extents(&c->xn, c->pack, nid->id, c->xmax, c->err,
                         c->errlen);
    if (rc != 0) {
        gg_extents_release(c->pack, &c->xo);
        return rc == 1 ? 0 : -1;
    }

    rc = 0;
    if (gg_ext_match(c) != 0) {
        snprintf(c->err, c->errlen, "out of memory");
        rc = -1;
    } else if (c->nm > 0 || c->xo.len == 0 || c->xn.len == 0) {
        /* (nothing in common: a real diff may find more, read whole) */
        gg_view_ext(&ov, &c->xo);
        gg_view_ext(d, &c->xn);
        rc = gg_match_lines(c, &ov, d) != 0 ? -1 : 1;
    }
    if (rc != 1) {
        gg_extents_release(c->pack, &c->xn);
        gg_extents_release(c->pack, &c->xo);
    }
    return rc;
}


int
gg_xlines(gg_ctx_t *c, const git_oid *oid, const git_oid *nid)
{
    int        rc;
    gg_view_t  d;

    rc = gg_xmatch(c, &d, oid, nid);
    if (rc == 1) {
        gg_lines_number(c, &d);
        gg_extents_release(c->pack, &c->xn);
        gg_extents_release(c->pack, &c->xo);
    }
    return rc;
}


int
gg_xfile(gg_ctx_t *c, const char *path, size_t index, const git_oid *oid,
    const git_oid *nid)
{
    int        rc;
    gg_tail_t  t;
    gg_view_t  d;

    rc = gg_xmatch(c, &d, oid, nid);
    if (rc != 1) {
        return rc;
    }

    c->r->files++;
    c->r->delta_files++;
    c->r->extent_files++;
    /* decoded views (gg_decode.c) read both versions whole: only a new
     * version that has any (a compressed stream, a NUL byte) */
    c->dec = gg_dec_wanted_ext(&c->xn);
    /* scanned while the extents are held: a finding's line number is
     * counted through them */
    rc = gg_added_field(c, path, index, &d) < 0 ? -1 : 1;
    /* the versions' records (gg_tail.c), of those of a few extents (one
     * edited throughout is many, and counting its lines would cost the
     * push a tenth more) */
    if (rc == 1 && c->tails >= 0) {
        if (c->xn.len >= GG_TAIL_MIN && c->xn.n <= GG_TAIL_EXTENTS) {
            gg_tail_of_ext(c, &t, &c->xn, c->dec);
            gg_tail_put(c->tails, nid->id, &t);
        }
        if (c->xo.len >= GG_TAIL_MIN && c->xo.n <= GG_TAIL_EXTENTS
            && gg_tail_get(c->tails, oid->id, &t) == 0)
        {
            gg_tail_of_ext(c, &t, &c->xo, gg_dec_wanted_ext(&c->xo));
            gg_tail_put(c->tails, oid->id, &t);
        }
    }
    gg_extents_release(c->pack, &c->xn);
    gg_extents_release(c->pack, &c->xo);
    return rc;
}


int
gg_xread(gg_ctx_t *c, gg_blob_t *buf, const git_oid *oid)
{
    int              rc;
    char            *p;
    size_t           i, cap;
    const gg_ext_t  *x;

    rc = gg_pack_extents(&c->xn, c->pack, oid->id, c->xmax, c->err,
                         c->errlen);
    if (rc != 0) {
        return rc == 1 ? 1 : -1;
    }
    rc = 0;
    if (buf->cap < c->xn.len + 1) {
        cap = (size_t) c->xn.len + 1;
        p = realloc(buf->data, cap);
        if (p == NULL) {
            snprintf(c->err, c->errlen, "out of memory");
            rc = -1;
            goto cleanup;
        }
        buf->data = p;
        buf->cap = cap;
    }
    for (i = 0; i < c->xn.n; i++) {
        x = &c->xn.e[i];
        memcpy(buf->data + x->pos, x->p, (size_t) x->len);
    }
    buf->len = (size_t) c->xn.len;
    buf->data[buf->len] = '\0';

cleanup:

    gg_extents_release(c->pack, &c->xn);
    return rc;
}
