/*
 * git-gate's push scanner: git-gate's own line matcher (gg_lmatch()), for
 * a modified file whose two versions share no pack source (gg_file()'s
 * last resort, both versions built whole).  Its output is the stretches
 * the two files have in common, whole lines, in the new file's order
 * (c->m); gg_match_lines() (gg_view.c) then applies the rule that makes
 * the scan as safe as a diff.  The matcher decides only how precise the
 * scan is, never how safe, provided each stretch it gives is the same
 * bytes in both files: a line is matched only after its bytes were
 * compared (memcmp), never on its hash alone.
 *
 * Patience-style, linear-ish and bounded:
 *
 * 1. the common prefix and suffix (whole lines) set aside with memcmp;
 * 2. each line of what is left hashed (seeded) and given a class: lines
 *    of one class are the same bytes (compared on hash equality);
 * 3. anchors: the lines that occur once in the old middle and once in
 *    the new one; of them the longest increasing subsequence of old
 *    positions in the new file's order (patience sorting, O(n log n));
 * 4. each anchor extended back and forth over equal lines (up to its
 *    neighbours' stretches), a stretch per maximal run;
 * 5. then, level by level (GG_LM_DEPTH of them), each gap between two
 *    stretches with lines on both sides again: a small one (at most
 *    GG_LM_DP cells) by an exact LCS, a bigger one by the lines unique
 *    *within the gap*; one with no such line by an exact LCS too when it
 *    has at most GG_LM_DP_BIG cells and the file's budget of them lasts.
 *    Else it stays added: xdiff would find more there (blank lines,
 *    braces), which is precision (more scanned), not safety.
 *
 * Work: each level walks every gap once (gaps are disjoint), plus the
 * LIS's log factor and the small gaps' LCS (at most GG_LM_DP cells each,
 * so at most sqrt(GG_LM_DP) per line) and the bigger ones' (at most
 * GG_LM_DP_WORK cells a line in all); lines are hashed and compared to
 * their class once.  Memory: per line of both middles, a few words in
 * buffers kept in gg_ctx_t (c->lm) and reused across files.  More than
 * GG_LM_LINES lines, a hash table that probes too much (colliding lines)
 * or a file of 4 GB: no stretch in the middle, every line of it added.
 */

#define _GNU_SOURCE                 /* getrandom */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gg_scan_int.h"


/* lines of both middles at most: beyond, the middle is added whole */
#define GG_LM_LINES     (1u << 22)
/* levels of gaps looked into again */
#define GG_LM_DEPTH     8
/* a gap of at most this many cells (old lines x new lines): exact LCS */
#define GG_LM_DP        1024
/* a gap with no line unique on both sides, up to this many cells: exact
 * LCS too, while the file's budget lasts (GG_LM_DP_WORK cells a line of
 * both middles, and GG_LM_DP_BASE) */
#define GG_LM_DP_BIG    65536
#define GG_LM_DP_WORK   64
#define GG_LM_DP_BASE   (1u << 20)
/* hash table probes, on average per line, before giving up */
#define GG_LM_PROBES    32


/* a stretch in lines: old[o, o + len) is new[n, n + len) */
typedef struct {
    uint32_t            o;
    uint32_t            n;
    uint32_t            len;
} gg_lm_run_t;


/* a class of equal lines */
typedef struct {
    uint64_t            hash;
    const char         *p;          /* its bytes, newline included */
    size_t              len;
    uint32_t            cnt_o;      /* in the old gap being looked at */
    uint32_t            cnt_n;
    uint32_t            pos_o;      /* its last line there */
} gg_lm_class_t;


/* gg_lmatch_t keeps them untyped: this file's own */
#define GG_CLS(lm)      ((gg_lm_class_t *) (lm)->cls)


static uint64_t  gg_lm_seed;


/* a fast seeded 64-bit hash of a line */
static uint64_t
gg_lm_hash(const char *p, size_t len)
{
    uint64_t  h, w;

    h = gg_lm_seed ^ ((uint64_t) len * 0x9e3779b97f4a7c15ULL);
    while (len >= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        p += 8;
        len -= 8;
    }
    if (len > 0) {
        w = 0;
        memcpy(&w, p, len);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    h = (h ^ (h >> 30)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}


/* *p to at least n elements of size sz (kept: only ever grows) */
static int
gg_lm_grow(void **p, size_t *cap, size_t n, size_t sz)
{
    void    *q;
    size_t   k;

    if (n <= *cap) {
        return 0;
    }
    k = *cap ? *cap : 1024;
    while (k < n) {
        k *= 2;
    }
    q = realloc(*p, k * sz);
    if (q == NULL) {
        return -1;
    }
    *p = q;
    *cap = k;
    return 0;
}


void
gg_lmatch_free(gg_lmatch_t *lm)
{
    free(lm->off_o);
    free(lm->off_n);
    free(lm->cls_o);
    free(lm->cls_n);
    free(lm->cls);
    free(lm->tab);
    free(lm->a_o);
    free(lm->a_n);
    free(lm->pred);
    free(lm->tail);
    free(lm->run);
    free(lm->run2);
    free(lm->dp);
    memset(lm, 0, sizeof(*lm));
}


/*
 * The lines of p[0, len) (offsets from base, into off[0..n], off[n] the
 * end) classed into lm->cls through lm->tab.  0, or -1 when the table
 * probed too much (lines colliding: give up matching).
 */
static int
gg_lm_class(gg_lmatch_t *lm, const char *base, const char *p, size_t len,
    uint32_t *off, uint32_t *cls, uint32_t *n, size_t *probes)
{
    size_t          i, k, mask, budget, at;
    uint32_t        id;
    uint64_t        h;
    const char     *q, *end;
    gg_lm_class_t  *x;

    mask = lm->tabn - 1;
    budget = GG_LM_PROBES * lm->nlines + 64;
    end = p + len;
    i = 0;
    while (p < end) {
        q = memchr(p, '\n', (size_t) (end - p));
        k = q ? (size_t) (q - p) + 1 : (size_t) (end - p);
        h = gg_lm_hash(p, k);
        off[i] = (uint32_t) (p - base);
        for (at = (size_t) h & mask;; at = (at + 1) & mask) {
            if (++*probes > budget) {
                return -1;
            }
            id = lm->tab[at];
            if (id == 0) {
                /* a line not seen yet: a new class */
                id = (uint32_t) lm->ncls++;
                x = &GG_CLS(lm)[id];
                x->hash = h;
                x->p = p;
                x->len = k;
                x->cnt_o = 0;
                x->cnt_n = 0;
                x->pos_o = 0;
                lm->tab[at] = id + 1;
                break;
            }
            x = &GG_CLS(lm)[id - 1];
            /* the same bytes, not only the same hash */
            if (x->hash == h && x->len == k && memcmp(x->p, p, k) == 0) {
                id--;
                break;
            }
        }
        cls[i++] = id;
        p += k;
    }
    off[i] = (uint32_t) (p - base);
    *n = (uint32_t) i;
    return 0;
}


/* a stretch appended to out, one with the last when it continues it */
static void
gg_lm_put(gg_lm_run_t *out, size_t *nout, uint32_t o, uint32_t n,
    uint32_t len)
{
    gg_lm_run_t  *r;

    if (len == 0) {
        return;
    }
    if (*nout > 0) {
        r = &out[*nout - 1];
        if (r->o + r->len == o && r->n + r->len == n) {
            r->len += len;
            return;
        }
    }
    r = &out[(*nout)++];
    r->o = o;
    r->n = n;
    r->len = len;
}


/*
 * A small gap old[o0, o1) x new[n0, n1) by an exact LCS of its lines
 * (suffix table, then one walk forward): its matches into out.  1 when
 * one was found, -1 when out of memory.
 */
static int
gg_lm_dp(gg_lmatch_t *lm, uint32_t o0, uint32_t o1, uint32_t n0,
    uint32_t n1, gg_lm_run_t *out, size_t *nout)
{
    int        found;
    size_t     a, b, i, j, w;
    uint16_t  *t;
    uint32_t   ro, rn, rl;

    a = o1 - o0;
    b = n1 - n0;
    w = b + 1;
    /* a, b >= 1 and a * b <= GG_LM_DP_BIG: (a + 1)(b + 1) <= 2 a b + 2,
     * and the LCS at most min(a, b) <= 256 */
    if (gg_lm_grow((void **) &lm->dp, &lm->dpcap, (a + 1) * w,
                   sizeof(uint16_t)) != 0)
    {
        return -1;
    }
    t = lm->dp;
    for (j = 0; j <= b; j++) {
        t[a * w + j] = 0;
    }
    for (i = a; i-- > 0; ) {
        t[i * w + b] = 0;
        for (j = b; j-- > 0; ) {
            if (lm->cls_o[o0 + i] == lm->cls_n[n0 + j]) {
                t[i * w + j] = (uint16_t) (t[(i + 1) * w + j + 1] + 1);
            } else {
                t[i * w + j] = t[(i + 1) * w + j] > t[i * w + j + 1]
                               ? t[(i + 1) * w + j] : t[i * w + j + 1];
            }
        }
    }

    found = 0;
    ro = rn = rl = 0;
    i = 0;
    j = 0;
    while (i < a && j < b) {
        if (lm->cls_o[o0 + i] == lm->cls_n[n0 + j]
            && t[i * w + j] == t[(i + 1) * w + j + 1] + 1)
        {
            if (rl > 0 && ro + rl == o0 + i && rn + rl == n0 + j) {
                rl++;
            } else {
                gg_lm_put(out, nout, ro, rn, rl);
                ro = (uint32_t) (o0 + i);
                rn = (uint32_t) (n0 + j);
                rl = 1;
            }
            found = 1;
            i++;
            j++;
        } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
            i++;
        } else {
            j++;
        }
    }
    gg_lm_put(out, nout, ro, rn, rl);
    return found;
}


/*
 * One gap old[o0, o1) x new[n0, n1), both sides not empty: its stretches
 * into out, in order.  1 when it found any, -1 when out of memory.
 */
static int
gg_lm_gap(gg_lmatch_t *lm, uint32_t o0, uint32_t o1, uint32_t n0,
    uint32_t n1, gg_lm_run_t *out, size_t *nout)
{
    int             found;
    size_t          na, len, lo, hi, mid, k, cells;
    uint32_t        i, j, so, sn, eo, en, po, pn;
    gg_lm_class_t  *x;

    cells = (size_t) (o1 - o0) * (n1 - n0);
    if (cells <= GG_LM_DP) {
        return gg_lm_dp(lm, o0, o1, n0, n1, out, nout);
    }

    /* the lines unique in both sides of the gap */
    for (i = o0; i < o1; i++) {
        x = &GG_CLS(lm)[lm->cls_o[i]];
        x->cnt_o++;
        x->pos_o = i;
    }
    for (j = n0; j < n1; j++) {
        GG_CLS(lm)[lm->cls_n[j]].cnt_n++;
    }
    na = 0;
    for (j = n0; j < n1; j++) {
        x = &GG_CLS(lm)[lm->cls_n[j]];
        if (x->cnt_o == 1 && x->cnt_n == 1) {
            lm->a_o[na] = x->pos_o;
            lm->a_n[na] = j;
            na++;
        }
    }
    for (i = o0; i < o1; i++) {
        GG_CLS(lm)[lm->cls_o[i]].cnt_o = 0;
    }
    for (j = n0; j < n1; j++) {
        GG_CLS(lm)[lm->cls_n[j]].cnt_n = 0;
    }
    if (na == 0) {
        /* no line unique on both sides (braces, blank lines of code
         * rewritten): an exact LCS while it is cheap enough, else the
         * gap stays added (xdiff may match some of it; precision, not
         * safety) */
        if (cells <= GG_LM_DP_BIG && cells <= lm->dpwork) {
            lm->dpwork -= cells;
            return gg_lm_dp(lm, o0, o1, n0, n1, out, nout);
        }
        return 0;
    }

    /* the longest increasing subsequence of a_o (patience sorting):
     * tail[l] the anchor ending the best one of length l + 1 */
    len = 0;
    for (k = 0; k < na; k++) {
        lo = 0;
        hi = len;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (lm->a_o[lm->tail[mid]] < lm->a_o[k]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lm->pred[k] = lo > 0 ? lm->tail[lo - 1] : UINT32_MAX;
        lm->tail[lo] = (uint32_t) k;
        if (lo == len) {
            len++;
        }
    }
    /* the chosen anchors, in order, into tail[0, len) */
    k = lm->tail[len - 1];
    for (mid = len; mid-- > 0; ) {
        lm->tail[mid] = (uint32_t) k;
        k = lm->pred[k];
    }

    /* each anchor extended over equal lines: back to where the last
     * stretch ended, forth to the gap's end (it cannot pass the next
     * anchor off its own diagonal: that line is unique on both sides) */
    found = 0;
    po = o0;
    pn = n0;
    for (k = 0; k < len; k++) {
        so = lm->a_o[lm->tail[k]];
        sn = lm->a_n[lm->tail[k]];
        if (so < po || sn < pn) {
            continue;                   /* inside the last stretch */
        }
        while (so > po && sn > pn && lm->cls_o[so - 1] == lm->cls_n[sn - 1]) {
            so--;
            sn--;
        }
        eo = so;
        en = sn;
        while (eo < o1 && en < n1 && lm->cls_o[eo] == lm->cls_n[en]) {
            eo++;
            en++;
        }
        gg_lm_put(out, nout, so, sn, eo - so);
        found = 1;
        po = eo;
        pn = en;
    }
    return found;
}


int
gg_lmatch(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen)
{
    int            more, rc;
    size_t         p, s, lim, so, sn, nlo, nln, probes, i, nout, cur,
                   depth;
    uint32_t       no, nn, po, pn;
    const char    *q;
    gg_match_t    *m;
    gg_lmatch_t   *lm;
    gg_lm_run_t   *r, *out, *t;

    lm = &c->lm;
    c->nm = 0;

    /* 1. the common prefix and suffix, whole lines */
    lim = olen < nlen ? olen : nlen;
    p = 0;
    while (lim - p >= 4096 && memcmp(o + p, d + p, 4096) == 0) {
        p += 4096;
    }
    while (p < lim && o[p] == d[p]) {
        p++;
    }
    while (p > 0 && d[p - 1] != '\n') {
        p--;
    }

    lim -= p;
    s = 0;
    while (lim - s >= 4096
           && memcmp(o + olen - s - 4096, d + nlen - s - 4096, 4096) == 0)
    {
        s += 4096;
    }
    while (s < lim && o[olen - s - 1] == d[nlen - s - 1]) {
        s++;
    }
    so = olen - s;
    sn = nlen - s;
    if (s > 0 && !((so == 0 || o[so - 1] == '\n')
                   && (sn == 0 || d[sn - 1] == '\n')))
    {
        /* from the suffix's first line start on: one in both files */
        q = memchr(d + sn, '\n', s);
        s = q ? nlen - ((size_t) (q - d) + 1) : 0;
    }
    so = olen - s;
    sn = nlen - s;

    /* room for the prefix, the middle's stretches and the suffix */
    if (gg_lm_grow((void **) &c->m, &c->mcap, 2, sizeof(*c->m)) != 0) {
        goto oom;
    }
    if (p > 0) {
        m = &c->m[c->nm++];
        m->o = 0;
        m->n = 0;
        m->len = p;
    }
    if (p == so || p == sn || olen > UINT32_MAX || nlen > UINT32_MAX) {
        goto suffix;
    }

    /* 2. the middles' lines, classed */
    nlo = gg_count_lines(o + p, so - p) + 1;
    nln = gg_count_lines(d + p, sn - p) + 1;
    if (nlo + nln > GG_LM_LINES) {
        goto suffix;
    }
    lm->nlines = nlo + nln;
    lm->dpwork = GG_LM_DP_WORK * lm->nlines + GG_LM_DP_BASE;
    for (i = 1024; i < 2 * lm->nlines; i *= 2) {
        /* a table at most half full */
    }
    if (gg_lm_grow((void **) &lm->off_o, &lm->off_ocap, nlo + 1,
                   sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->off_n, &lm->off_ncap, nln + 1,
                      sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->cls_o, &lm->cls_ocap, nlo,
                      sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->cls_n, &lm->cls_ncap, nln,
                      sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->cls, &lm->clscap, lm->nlines,
                      sizeof(gg_lm_class_t)) != 0
        || gg_lm_grow((void **) &lm->tab, &lm->tabcap, i,
                      sizeof(uint32_t)) != 0)
    {
        goto oom;
    }
    /* the part of the table this file uses (an earlier one's may have
     * been bigger): a power of two */
    lm->tabn = i;
    memset(lm->tab, 0, i * sizeof(uint32_t));
    /* a seed per process: lines made to collide cost probes (bounded
     * above), not a wrong match */
    if (gg_lm_seed == 0
        && getrandom(&gg_lm_seed, sizeof(gg_lm_seed), GRND_NONBLOCK)
           != (ssize_t) sizeof(gg_lm_seed))
    {
        gg_lm_seed = 0x2545f4914f6cdd1dULL;
    }
    gg_lm_seed |= 1;
    lm->ncls = 0;
    probes = 0;
    if (gg_lm_class(lm, o, o + p, so - p, lm->off_o, lm->cls_o, &no,
                    &probes) != 0
        || gg_lm_class(lm, d, d + p, sn - p, lm->off_n, lm->cls_n, &nn,
                       &probes) != 0)
    {
        goto suffix;
    }

    /* 3-5. levels: the whole middle, then the gaps left between the
     * stretches found; stretches never exceed the new lines */
    if (gg_lm_grow((void **) &lm->a_o, &lm->a_ocap, nn, sizeof(uint32_t))
        != 0
        || gg_lm_grow((void **) &lm->a_n, &lm->a_ncap, nn, sizeof(uint32_t))
           != 0
        || gg_lm_grow((void **) &lm->pred, &lm->predcap, nn,
                      sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->tail, &lm->tailcap, nn,
                      sizeof(uint32_t)) != 0
        || gg_lm_grow((void **) &lm->run, &lm->runcap, nn + 1,
                      sizeof(gg_lm_run_t)) != 0
        || gg_lm_grow((void **) &lm->run2, &lm->run2cap, nn + 1,
                      sizeof(gg_lm_run_t)) != 0)
    {
        goto oom;
    }
    r = lm->run;
    out = lm->run2;
    cur = 0;
    for (depth = 0; depth < GG_LM_DEPTH; depth++) {
        more = 0;
        nout = 0;
        po = 0;
        pn = 0;
        for (i = 0; i <= cur; i++) {
            /* the gap before stretch i (after the last: to the end) */
            so = i < cur ? r[i].o : no;
            sn = i < cur ? r[i].n : nn;
            if (so > po && sn > pn) {
                rc = gg_lm_gap(lm, po, (uint32_t) so, pn, (uint32_t) sn, out,
                               &nout);
                if (rc < 0) {
                    goto oom;
                }
                more |= rc;
            }
            if (i < cur) {
                gg_lm_put(out, &nout, r[i].o, r[i].n, r[i].len);
                po = r[i].o + r[i].len;
                pn = r[i].n + r[i].len;
            }
        }
        t = r;
        r = out;
        out = t;
        cur = nout;
        if (!more) {
            break;
        }
    }

    /* in bytes, after the prefix */
    if (gg_lm_grow((void **) &c->m, &c->mcap, c->nm + cur + 1,
                   sizeof(*c->m)) != 0)
    {
        goto oom;
    }
    for (i = 0; i < cur; i++) {
        m = &c->m[c->nm++];
        m->o = lm->off_o[r[i].o];
        m->n = lm->off_n[r[i].n];
        m->len = lm->off_n[r[i].n + r[i].len] - lm->off_n[r[i].n];
    }

suffix:

    if (s > 0) {
        m = &c->m[c->nm++];
        m->o = olen - s;
        m->n = nlen - s;
        m->len = s;
    }
    return 0;

oom:

    snprintf(c->err, c->errlen, "out of memory");
    c->nm = 0;
    return -1;
}
