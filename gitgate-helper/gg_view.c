/*
 * git-gate's push scanner: a file's added lines from the stretches two
 * versions have in common (gg_match_lines()), each version read as a
 * view: one buffer, or extents of the pack reader's sources
 * (gg_pack_extents(): a version never built whole).  The rule that
 * makes it as safe as a line diff is gg_match_lines()'s; the matches come
 * from a delta's copies (gg_lines.c) or from extents with the same
 * source bytes (gg_xlines.c).
 */

#define _GNU_SOURCE                 /* memrchr */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "gg_scan_int.h"


/* a source's newlines are counted once per block of this, then looked up */
#define GG_NL_BLOCK     4096


/* whether p[0, len) holds s (slen bytes): memchr for its first byte,
 * rare in most text, rather than memmem, whose setup costs more than a
 * line (this runs on a line next to every added run, and over sources) */
static int
gg_has(const char *p, size_t len, const char *s, size_t slen)
{
    const char  *q, *end;

    end = p + len;
    for (q = memchr(p, s[0], len); q != NULL && (size_t) (end - q) >= slen;
         q = memchr(q + 1, s[0], (size_t) (end - q - 1)))
    {
        if (memcmp(q, s, slen) == 0) {
            return 1;
        }
    }
    return 0;
}


int
gg_opener(const char *p, size_t len)
{
    return gg_has(p, len, "-----BEGIN", 10);
}


size_t
gg_count_lines(const char *p, size_t len)
{
    size_t   n, i;
#ifdef __SSE2__
    size_t   k;
    __m128i  nl, acc;

    n = 0;
    i = 0;
    nl = _mm_set1_epi8('\n');
    while (len - i >= 16) {
        /* each byte lane counts up to 255 matches, then they are summed */
        acc = _mm_setzero_si128();
        for (k = 0; k < 255 && len - i >= 16; k++, i += 16) {
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(
                      _mm_loadu_si128((const __m128i *) (p + i)), nl));
        }
        acc = _mm_sad_epu8(acc, _mm_setzero_si128());
        n += (size_t) _mm_cvtsi128_si32(acc)
             + (size_t) _mm_extract_epi16(acc, 4);
    }
#else
    n = 0;
    i = 0;
#endif
    for (; i < len; i++) {
        n += p[i] == '\n';
    }
    return n;
}


/* views */

/*
 * Whether a line of v may open a PEM block ("-----BEGIN"), looked at once
 * when an added run first asks.  A version is glued from pieces of its
 * sources, cut anywhere: it can hold "-----BEGIN" only if each of the
 * bytes '-', 'B', 'E', 'G', 'I', 'N' is in one of them.  When one of
 * those bytes is in none, no line opens a block and the added runs need
 * no look at the lines next to them.  A source's answers are kept with
 * it (gg_pobj_t.pem: bit k known, bit 8 + k held).
 */
static const char  gg_pem_bytes[] = "-BEGIN";

static int
gg_v_pem(gg_view_t *v)
{
    int          k, held;
    size_t       i;
    gg_pobj_t   *src;

    if (v->pem >= 0) {
        return v->pem;
    }
    for (k = 0; k < 6; k++) {
        if (v->x == NULL) {
            held = memchr(v->one.p, gg_pem_bytes[k], (size_t) v->one.len)
                   != NULL;
        } else {
            /* every source an extent takes bytes from is held */
            held = 0;
            for (i = 0; i < v->x->nheld && !held; i++) {
                src = v->x->held[i];
                /* a delta's: its literals, after its ops (dlen) */
                if (!(src->pem & (1 << k))) {
                    src->pem |= (1 << k)
                                | (memchr(src->data + src->dlen,
                                          gg_pem_bytes[k],
                                          src->len - src->dlen) != NULL)
                                  << (8 + k);
                }
                held = (src->pem >> (8 + k)) & 1;
            }
        }
        if (!held) {
            v->pem = 0;
            return 0;
        }
    }
    v->pem = 1;
    return 1;
}


void
gg_view_buf(gg_view_t *v, const char *d, size_t len)
{
    memset(v, 0, sizeof(*v));
    v->one.p = (const unsigned char *) d;
    v->one.len = len;
    v->e = &v->one;
    v->n = len ? 1 : 0;
    v->len = len;
    v->pem = -1;
}


void
gg_view_ext(gg_view_t *v, const gg_extents_t *x)
{
    memset(v, 0, sizeof(*v));
    v->e = x->e;
    v->n = x->n;
    v->len = x->len;
    v->x = x;
    v->pem = -1;
}


/* the extent holding pos (< v->len), from the one found last: the walks
 * ask near where they asked last (gg_ext_find()) */
static size_t
gg_v_at(gg_view_t *v, uint64_t pos)
{
    v->hint = gg_ext_find(v->e, v->n, pos, v->hint);
    return v->hint;
}


static unsigned char
gg_v_byte(gg_view_t *v, uint64_t pos)
{
    size_t  i;

    i = gg_v_at(v, pos);
    return v->e[i].p[pos - v->e[i].pos];
}


/* the first newline in [a, b): 1 and *at, or 0 */
static int
gg_v_chr(gg_view_t *v, uint64_t a, uint64_t b, uint64_t *at)
{
    size_t                i;
    uint64_t              off, k;
    const gg_ext_t       *x;
    const unsigned char  *q;

    if (a >= b) {
        return 0;
    }
    i = gg_v_at(v, a);
    while (a < b && i < v->n) {
        x = &v->e[i];
        off = a - x->pos;
        k = x->len - off < b - a ? x->len - off : b - a;
        q = memchr(x->p + off, '\n', (size_t) k);
        if (q != NULL) {
            *at = a + (uint64_t) (q - (x->p + off));
            return 1;
        }
        a += k;
        i++;
    }
    return 0;
}


/* the last newline in [a, b): 1 and *at, or 0 */
static int
gg_v_rchr(gg_view_t *v, uint64_t a, uint64_t b, uint64_t *at)
{
    size_t                i;
    uint64_t              s;
    const gg_ext_t       *x;
    const unsigned char  *q;

    if (a >= b) {
        return 0;
    }
    i = gg_v_at(v, b - 1);
    for ( ;; ) {
        x = &v->e[i];
        s = a > x->pos ? a - x->pos : 0;
        q = memrchr(x->p + s, '\n', (size_t) (b - x->pos - s));
        if (q != NULL) {
            *at = x->pos + (uint64_t) (q - x->p);
            return 1;
        }
        b = x->pos + s;
        if (b <= a || i == 0) {
            return 0;
        }
        i--;
    }
}


/* [a, b) of v appended to buf */
static int
gg_v_copy(gg_buf_t *buf, gg_view_t *v, uint64_t a, uint64_t b)
{
    size_t           i;
    uint64_t         off, k;
    const gg_ext_t  *x;

    if (a >= b) {
        return 0;
    }
    i = gg_v_at(v, a);
    while (a < b && i < v->n) {
        x = &v->e[i];
        off = a - x->pos;
        k = x->len - off < b - a ? x->len - off : b - a;
        if (gg_buf_add(buf, x->p + off, (size_t) k) != 0) {
            return -1;
        }
        a += k;
        i++;
    }
    return 0;
}


/* the newlines of src->data[0, x), from its per-block counts */
static uint64_t
gg_src_prefix(gg_pobj_t *src, uint64_t x)
{
    uint64_t  b;

    b = x / GG_NL_BLOCK;
    return src->nl[b] + gg_count_lines((const char *) src->data
                                       + b * GG_NL_BLOCK,
                                       (size_t) (x - b * GG_NL_BLOCK));
}


/* newlines in k bytes at soff of an extent's source */
static uint64_t
gg_src_lines(gg_pobj_t *src, const unsigned char *p, uint64_t soff,
    uint64_t k)
{
    size_t  nb, i;

    if (src == NULL || k < 4 * GG_NL_BLOCK) {
        return gg_count_lines((const char *) p, (size_t) k);
    }
    if (src->nl == NULL) {
        /* a source is at most GG_BLOB_MAX: its counts fit 32 bits */
        nb = src->len / GG_NL_BLOCK + 1;
        src->nl = malloc(nb * sizeof(uint32_t));
        if (src->nl == NULL) {
            return gg_count_lines((const char *) p, (size_t) k);
        }
        src->nl[0] = 0;
        for (i = 1; i < nb; i++) {
            src->nl[i] = src->nl[i - 1]
                         + (uint32_t) gg_count_lines(
                               (const char *) src->data
                               + (i - 1) * GG_NL_BLOCK, GG_NL_BLOCK);
        }
    }
    return gg_src_prefix(src, soff + k) - gg_src_prefix(src, soff);
}


/* newlines in [a, b) of v */
static uint64_t
gg_v_lines(gg_view_t *v, uint64_t a, uint64_t b)
{
    size_t           i;
    uint64_t         off, k, n;
    const gg_ext_t  *x;

    if (a >= b) {
        return 0;
    }
    n = 0;
    i = gg_v_at(v, a);
    while (a < b && i < v->n) {
        x = &v->e[i];
        off = a - x->pos;
        k = x->len - off < b - a ? x->len - off : b - a;
        n += gg_src_lines(x->src, x->p + off, x->soff + off, k);
        a += k;
        i++;
    }
    return n;
}


/* whether v[a, b) (a line) may open a PEM block (gg_opener()) */
static int
gg_v_opener(gg_ctx_t *c, gg_view_t *v, uint64_t a, uint64_t b, int *oom)
{
    size_t  i;

    if (a >= b) {
        return 0;
    }
    i = gg_v_at(v, a);
    if (b - v->e[i].pos <= v->e[i].len) {
        return gg_opener((const char *) v->e[i].p + (a - v->e[i].pos),
                         (size_t) (b - a));
    }
    /* over extents: the line put together */
    c->tmp.len = 0;
    if (gg_v_copy(&c->tmp, v, a, b) != 0) {
        *oom = 1;
        return 0;
    }
    return gg_opener(c->tmp.data, c->tmp.len);
}


uint64_t
gg_v_count_lines(gg_view_t *v)
{
    return gg_v_lines(v, 0, v->len);
}


int
gg_v_last_opener(gg_ctx_t *c, gg_view_t *v)
{
    int       oom, r;
    uint64_t  q, pl;

    if (v->len == 0) {
        return 0;
    }
    pl = v->len > 1 && gg_v_rchr(v, 0, v->len - 1, &q) ? q + 1 : 0;
    oom = 0;
    r = gg_v_opener(c, v, pl, v->len, &oom);
    return oom ? -1 : r;
}


/* how many bytes x from xa and y from ya have in common, up to lim */
static uint64_t
gg_v_common(gg_view_t *x, uint64_t xa, gg_view_t *y, uint64_t ya,
    uint64_t lim)
{
    size_t                i, j;
    uint64_t              n, t, k, kx, ky;
    const unsigned char  *px, *py;

    n = 0;
    while (n < lim) {
        i = gg_v_at(x, xa + n);
        j = gg_v_at(y, ya + n);
        px = x->e[i].p + (xa + n - x->e[i].pos);
        py = y->e[j].p + (ya + n - y->e[j].pos);
        kx = x->e[i].len - (xa + n - x->e[i].pos);
        ky = y->e[j].len - (ya + n - y->e[j].pos);
        k = kx < ky ? kx : ky;
        k = k < lim - n ? k : lim - n;
        for (t = 0; t < k && px[t] == py[t]; t++) {
            /* same */
        }
        n += t;
        if (t < k) {
            break;
        }
    }
    return n;
}


/* how many bytes before xe of x and before ye of y are the same */
static uint64_t
gg_v_rcommon(gg_view_t *x, uint64_t xe, gg_view_t *y, uint64_t ye,
    uint64_t lim)
{
    size_t                i, j;
    uint64_t              n, t, k, kx, ky;
    const unsigned char  *px, *py;

    n = 0;
    while (n < lim) {
        i = gg_v_at(x, xe - n - 1);
        j = gg_v_at(y, ye - n - 1);
        /* the bytes up to and including the one at xe - n - 1 */
        kx = xe - n - x->e[i].pos;
        ky = ye - n - y->e[j].pos;
        px = x->e[i].p + kx;
        py = y->e[j].p + ky;
        k = kx < ky ? kx : ky;
        k = k < lim - n ? k : lim - n;
        for (t = 1; t <= k && px[-(int64_t) t] == py[-(int64_t) t]; t++) {
            /* same */
        }
        n += t - 1;
        if (t <= k) {
            break;
        }
    }
    return n;
}


/*
 * An added run of whole lines, new[from, to), into the field, with the
 * unchanged line before it and the one after it as context (gg_line_t)
 * where gg_opener() says so; each entry by its position in the new file,
 * its line number counted only if a finding needs it (gg_v_lineno());
 * *shown: where the last context line ended.
 */
static int
gg_run(gg_ctx_t *c, gg_view_t *d, uint64_t from, uint64_t to,
    uint64_t *shown)
{
    int       oom, pem;
    size_t    at;
    uint64_t  pl, le, q, nlen;

    nlen = d->len;
    oom = 0;
    /* no line of d can open one: neither neighbour looked at */
    pem = gg_v_pem(d);

    /* the line before, unless the last run's context line was it, when
     * it may open a PEM block (gg_opener()) */
    pl = from;
    if (pem && from > 0 && from > *shown) {
        pl = from > 1 && gg_v_rchr(d, 0, from - 1, &q) ? q + 1 : 0;
    }
    if (pl < from && gg_v_opener(c, d, pl, from, &oom)) {
        if (gg_line_at(c, pl, 1) != 0 || gg_v_copy(&c->add, d, pl, from) != 0)
        {
            goto oom;
        }
        c->ctxlen += (size_t) (from - pl);
    }
    if (oom) {
        goto oom;
    }

    at = c->add.len;
    if (gg_line_at(c, from, 0) != 0 || gg_v_copy(&c->add, d, from, to) != 0)
    {
        goto oom;
    }

    /* the line after, when the run's last line may open a PEM block */
    if (!pem) {
        return 0;
    }
    pl = to > from + 1 && gg_v_rchr(d, from, to - 1, &q) ? q + 1 : from;
    if (to < nlen && gg_opener(c->add.data + at + (pl - from),
                               (size_t) (to - pl)))
    {
        le = gg_v_chr(d, to, nlen, &q) ? q + 1 : nlen;
        if (gg_line_at(c, to, 1) != 0 || gg_v_copy(&c->add, d, to, le) != 0)
        {
            goto oom;
        }
        c->ctxlen += (size_t) (le - to);
        *shown = le;
    }
    return 0;

oom:

    snprintf(c->err, c->errlen, "out of memory");
    return -1;
}


size_t
gg_v_lineno(gg_view_t *v, uint64_t pos)
{
    pos = pos < v->len ? pos : v->len;
    /* findings come in order: counted on from the last one asked */
    if (pos < v->lpos) {
        v->lpos = 0;
        v->lnl = 0;
    }
    v->lnl += gg_v_lines(v, v->lpos, pos);
    v->lpos = pos;
    return (size_t) v->lnl + 1;
}


void
gg_lines_number(gg_ctx_t *c, gg_view_t *d)
{
    size_t  i;

    for (i = 0; i < c->nlines; i++) {
        if (c->lines[i].lineno == 0) {
            c->lines[i].lineno = gg_v_lineno(d, c->lines[i].pos);
        }
    }
}


/*
 * An added stretch new[*from, *to) (whole lines) between two kept
 * stretches, and the stretch of the old file between them, old[og0,
 * og1): the lines at either end that are the same bytes at the same end
 * of the old stretch are unchanged too (git's delta starts a copy only
 * where a 16-byte block of the base matches, so the bytes around a
 * change are often inserted, not copied).  They extend the kept
 * stretches in order in both files: as safe as the stretches themselves.
 * og0 and og1 are line starts of the old file (gg_match_lines()), and a
 * line counts only when its bytes are a WHOLE line of the old file there:
 * from a line start of both files (a new line that is the tail of a
 * longer old line, `abc` after `xabc`, stays added) to a newline of both
 * (or, at the very end, to the end of both).
 */
static void
gg_trim(gg_view_t *o, uint64_t og0, uint64_t og1, gg_view_t *d,
    uint64_t *from, uint64_t *to)
{
    uint64_t  a, b, p, s, lim, q;

    a = *from;
    b = *to;
    if (og1 <= og0 || b <= a) {
        return;
    }

    /* forward from a line start of both (og0 is one): whole lines up to
     * the last newline in common (the same byte in both) */
    lim = b - a < og1 - og0 ? b - a : og1 - og0;
    p = gg_v_common(o, og0, d, a, lim);
    p = p > 0 && gg_v_rchr(d, a, a + p, &q) ? q + 1 - a : 0;
    a += p;
    og0 += p;

    /* back from a newline (or the end) of both: from the first point in
     * the common bytes that starts a line in BOTH files on (past a
     * newline in common, it does) */
    lim = b - a < og1 - og0 ? b - a : og1 - og0;
    s = gg_v_rcommon(o, og1, d, b, lim);
    if (s > 0
        && ((b - s != a && gg_v_byte(d, b - s - 1) != '\n')
            || (og1 - s != og0 && gg_v_byte(o, og1 - s - 1) != '\n')))
    {
        s = gg_v_chr(d, b - s, b, &q) ? b - (q + 1) : 0;
    }

    *from = a;
    *to = b - s;
}


static int
gg_match_cmp(const void *a, const void *b)
{
    const gg_match_t  *x, *y;

    x = a;
    y = b;
    if (x->n != y->n) {
        return x->n < y->n ? -1 : 1;
    }
    if (x->o != y->o) {
        return x->o < y->o ? -1 : 1;
    }
    return 0;
}


/*
 * The added lines of the new version d against the old one o, from the
 * stretches c->m (c->nm of them: old[o, o + len) is the same bytes as
 * new[n, n + len)) into c->add and c->lines.
 *
 * Why this is as safe as a line diff: only stretches in the same order
 * in both files are kept (greedily, along the new file), so the kept ones
 * are a common subsequence of the two files, like the matched lines of a
 * diff.  A line of the new file is unchanged only if it lies wholly
 * inside ONE kept stretch AND its bytes there are a WHOLE line of the old
 * file: they start at a line start of the old file (its offset 0 or past
 * a newline) and end at its newline, or, for a last line without one, at
 * the old file's end.  Inside a stretch only its first line (when the
 * stretch starts at a line start of the new file) and a last line without
 * newline need the look: any other line starts past a newline and ends at
 * one, the same bytes in both.  Every other line is added and scanned
 * whole: a line inserted, appended, glued from two pieces of the old file
 * (a token split across two old lines and joined), the tail of a longer
 * old line (`x<token>` with its `x` deleted), the head of one
 * (`<token>x` with its `x` deleted, at the file's end), a block moved or
 * reordered (stretches out of order are dropped), lines shuffled in the
 * old file and put in order in the new one.  A secret on a line counted
 * unchanged was in the old version, the same whole line, so a rule that
 * wants a boundary before or after it found it there the same way.
 */
int
gg_match_lines(gg_ctx_t *c, gg_view_t *o, gg_view_t *d)
{
    size_t       i, k;
    uint64_t     pos, opos, u, e, ns, ne, shown, a, b, q, last_o, last_n,
                 nlen;
    gg_match_t  *m;

    /* in the new file's order (the extents' come so already); stretches
     * that continue each other, one (git writes a long match as copies
     * of 64 KB) */
    for (i = 1; i < c->nm; i++) {
        if (gg_match_cmp(&c->m[i - 1], &c->m[i]) > 0) {
            qsort(c->m, c->nm, sizeof(*c->m), gg_match_cmp);
            break;
        }
    }
    for (i = 0, k = 0; i < c->nm; i++) {
        if (k > 0 && c->m[k - 1].o + c->m[k - 1].len == c->m[i].o
            && c->m[k - 1].n + c->m[k - 1].len == c->m[i].n)
        {
            c->m[k - 1].len += c->m[i].len;
        } else {
            c->m[k++] = c->m[i];
        }
    }
    c->nm = k;

    nlen = d->len;
    c->add.len = 0;
    c->nlines = 0;
    c->ctxlen = 0;
    pos = 0;
    opos = 0;
    shown = 0;
    last_o = 0;
    last_n = 0;

    for (i = 0; i < c->nm; i++) {
        m = &c->m[i];
        /* out of order in either file, or not in them: stays added */
        if (m->o < last_o || m->n < last_n || m->len == 0
            || m->n > nlen || m->len > nlen - m->n || m->o > o->len
            || m->len > o->len - m->o)
        {
            continue;
        }
        ns = m->n;
        ne = m->n + m->len;

        /* the whole lines inside: [u, e), each a whole line of the old
         * file too: the first starts a line in both files (else the
         * stretch's first line is the tail of a longer one in either, and
         * stays added; opos, where the last kept whole line ended, is a
         * line start of the old file: no look there), a last one without
         * newline ends both files */
        u = ns;
        if ((u > 0 && gg_v_byte(d, u - 1) != '\n')
            || (m->o > 0 && m->o != opos && gg_v_byte(o, m->o - 1) != '\n'))
        {
            if (!gg_v_chr(d, u, ne, &q)) {
                continue;
            }
            u = q + 1;
        }
        if (ne == nlen && gg_v_byte(d, nlen - 1) != '\n'
            && m->o + m->len == o->len)
        {
            e = nlen;
        } else {
            if (!gg_v_rchr(d, u, ne, &q)) {
                continue;
            }
            e = q + 1;
        }
        if (u >= e) {
            continue;
        }

        last_o = m->o + m->len;
        last_n = m->n + m->len;
        a = pos;
        b = u;
        gg_trim(o, opos, m->o + (u - ns), d, &a, &b);
        if (a < b && gg_run(c, d, a, b, &shown) != 0) {
            return -1;
        }
        pos = e;
        opos = m->o + (e - ns);
    }
    a = pos;
    b = nlen;
    gg_trim(o, opos, o->len, d, &a, &b);
    if (a < b && gg_run(c, d, a, b, &shown) != 0) {
        return -1;
    }
    return 0;
}
