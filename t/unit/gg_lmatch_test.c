/*
 * Unit test of git-gate's line matcher (gitgate-helper/gg_lmatch.c): the
 * stretches two versions of a file have in common, then gg_match_lines()
 * as gg_file() runs them (gg_lines.c's gg_diff_lines()).  On generated
 * text and random edit scripts (inserts, deletes, replacements, moved
 * blocks, duplicated lines, no trailing newline, CRLF, NUL bytes, empty
 * files) and a few extreme files (one huge line, a million identical
 * lines), it checks:
 *
 * - every stretch gg_lmatch() gives is in bounds, in order in both files,
 *   whole lines, and the same bytes in both (what gg_match_lines()
 *   trusts);
 * - safety: the lines reported unchanged, in order, are each a WHOLE line
 *   of the old file (the same bytes, newline to newline), in the same
 *   order (a subsequence); every reported line is the new file's line of
 *   that number, byte for byte;
 * - against a reference LCS (a dynamic program over the lines): where
 *   the lines are unique and nothing moved, exactly the lines the LCS
 *   adds are added (no more, no fewer); with moves, as many; with
 *   duplicated lines, at most 1/64 more than the LCS's; with only
 *   duplicated lines (no anchor: the gap's exact LCS), no more;
 * - against `git diff --no-index -U0` on some of them: every line git
 *   adds is added;
 * - gg_match_lines() alone, fed byte stretches that start and end
 *   anywhere (as a delta's copies and the extents' shared bytes do) on
 *   random texts edited byte by byte (a character deleted before or after
 *   a line's text, newlines inserted and deleted, CRLF, no trailing
 *   newline), over one buffer and over random extents: the same safety,
 *   and the same lines either way; a line that is the tail or the head of
 *   a longer old line is added.
 */

#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "sh.h"
#include "gg_scan_int.h"
#include "gg_added.h"


typedef struct {
    char    *p;
    size_t   len;
} line_t;

typedef struct {
    line_t  *l;
    size_t   n;
    size_t   cap;
} text_t;


static gg_ctx_t  c;
static char      err[512];
static char      dir[256];
static uint64_t  rng = 88172645463325252ULL;
static unsigned  uniq;


static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}


static size_t
rndn(size_t n)
{
    return n ? (size_t) (rnd() % n) : 0;
}


static void
t_put(text_t *t, size_t at, const char *p, size_t len)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->l = realloc(t->l, t->cap * sizeof(*t->l));
    }
    memmove(t->l + at + 1, t->l + at, (t->n - at) * sizeof(*t->l));
    t->l[at].p = malloc(len + 1);
    memcpy(t->l[at].p, p, len);
    t->l[at].len = len;
    t->n++;
}


static void
t_del(text_t *t, size_t at, size_t k)
{
    size_t  i;

    for (i = 0; i < k; i++) {
        free(t->l[at + i].p);
    }
    if (k > 0) {
        memmove(t->l + at, t->l + at + k, (t->n - at - k) * sizeof(*t->l));
        t->n -= k;
    }
}


static void
t_free(text_t *t)
{
    t_del(t, 0, t->n);
    free(t->l);
    memset(t, 0, sizeof(*t));
}


static void
t_copy(text_t *dst, const text_t *src)
{
    size_t  i;

    memset(dst, 0, sizeof(*dst));
    for (i = 0; i < src->n; i++) {
        t_put(dst, i, src->l[i].p, src->l[i].len);
    }
}


/* a line no other line is: "uniq <n> ...\n" */
static void
t_uniq(text_t *t, size_t at, const char *eol)
{
    char  b[96];
    int   k;

    k = snprintf(b, sizeof(b), "    value_%u = compute(%u, 0x%llx);%s",
                 uniq, uniq * 7u, (unsigned long long) (rnd() & 0xffffff),
                 eol);
    uniq++;
    t_put(t, at, b, (size_t) k);
}


/* a line from a small vocabulary: duplicated lines */
static void
t_dup(text_t *t, size_t at, const char *eol)
{
    static const char  *voc[] = { "}", "", "{", "    return 0;",
                                  "    break;", "#endif", "\t", "  x++;" };
    char                b[64];
    int                 k;

    k = snprintf(b, sizeof(b), "%s%s", voc[rndn(8)], eol);
    t_put(t, at, b, (size_t) k);
}


/* the text's bytes */
static char *
t_join(const text_t *t, size_t *len)
{
    char    *b;
    size_t   i, n;

    n = 0;
    for (i = 0; i < t->n; i++) {
        n += t->l[i].len;
    }
    b = malloc(n + 1);
    n = 0;
    for (i = 0; i < t->n; i++) {
        memcpy(b + n, t->l[i].p, t->l[i].len);
        n += t->l[i].len;
    }
    *len = n;
    return b;
}


/* the lines of a buffer, as text_t (no copy of what t_join made: the
 * last line may lack its newline) */
static void
t_split(text_t *t, const char *b, size_t len)
{
    size_t       i, s;

    memset(t, 0, sizeof(*t));
    s = 0;
    for (i = 0; i < len; i++) {
        if (b[i] == '\n') {
            t_put(t, t->n, b + s, i + 1 - s);
            s = i + 1;
        }
    }
    if (s < len) {
        t_put(t, t->n, b + s, len - s);
    }
}


static int
l_eq(const line_t *a, const line_t *b)
{
    return a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}


/* the reference: an LCS's added lines of n against o, into ref[1..] */
static size_t
ref_lcs(const text_t *o, const text_t *n, unsigned char *ref)
{
    size_t     a, b, i, j, w, added;
    uint32_t  *t;

    a = o->n;
    b = n->n;
    w = b + 1;
    t = calloc((a + 1) * w, sizeof(*t));
    for (i = a; i-- > 0; ) {
        for (j = b; j-- > 0; ) {
            if (l_eq(&o->l[i], &n->l[j])) {
                t[i * w + j] = t[(i + 1) * w + j + 1] + 1;
            } else {
                t[i * w + j] = t[(i + 1) * w + j] > t[i * w + j + 1]
                               ? t[(i + 1) * w + j] : t[i * w + j + 1];
            }
        }
    }
    memset(ref, 1, b + 1);
    i = 0;
    j = 0;
    while (i < a && j < b) {
        if (l_eq(&o->l[i], &n->l[j])
            && t[i * w + j] == t[(i + 1) * w + j + 1] + 1)
        {
            ref[j + 1] = 0;
            i++;
            j++;
        } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
            i++;
        } else {
            j++;
        }
    }
    added = 0;
    for (j = 1; j <= b; j++) {
        added += ref[j];
    }
    free(t);
    return added;
}


/* the lines git diff --no-index -U0 adds, into ref[1..nl] */
static void
git_added(const char *ob, size_t olen, const char *nb, size_t nlen,
    unsigned char *ref, size_t nl)
{
    char   path[300], *d;
    FILE  *f;

    snprintf(path, sizeof(path), "%s/o", dir);
    f = fopen(path, "w");
    fwrite(ob, 1, olen, f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/n", dir);
    f = fopen(path, "w");
    fwrite(nb, 1, nlen, f);
    fclose(f);
    memset(ref, 0, nl + 1);
    d = sh_out(NULL, "cd %s && git diff --no-index --no-color --no-ext-diff "
               "-U0 -a o n", dir);
    git_diff_added(ref, nl, d);
    free(d);
}


typedef struct {
    size_t  cases, badm, unsafe, badline, ours, ref, exact_bad, count_bad,
            git_missing, git_cases;
} stats_t;


/*
 * The stretches of c.m (as gg_lmatch() left them): in bounds, in order,
 * whole lines, the same bytes.  0 or the number of bad ones.
 */
static size_t
check_m(const char *ob, size_t olen, const char *nb, size_t nlen)
{
    size_t       i, bad;
    uint64_t     lo, ln;
    gg_match_t  *m;

    bad = 0;
    lo = 0;
    ln = 0;
    for (i = 0; i < c.nm; i++) {
        m = &c.m[i];
        if (m->len == 0 || m->o < lo || m->n < ln || m->o > olen
            || m->len > olen - m->o || m->n > nlen || m->len > nlen - m->n
            || memcmp(ob + m->o, nb + m->n, m->len) != 0
            || (m->o > 0 && ob[m->o - 1] != '\n')
            || (m->n > 0 && nb[m->n - 1] != '\n')
            || (m->o + m->len < olen && ob[m->o + m->len - 1] != '\n')
            || (m->n + m->len < nlen && nb[m->n + m->len - 1] != '\n'))
        {
            bad++;
            continue;
        }
        lo = m->o + m->len;
        ln = m->n + m->len;
    }
    return bad;
}


/*
 * ours[1..nl]: the lines gg_match_lines() left added in c.add/c.lines;
 * each reported line checked against the new file's; the number of bad
 * ones
 */
static size_t
ours_added(const text_t *n, unsigned char *ours)
{
    size_t            k, ln, bad, nal;
    gg_added_line_t  *al;

    bad = 0;
    memset(ours, 0, n->n + 1);
    al = gg_added_lines(&c, &nal);
    if (al == NULL) {
        return 1;
    }
    for (k = 0; k < nal; k++) {
        ln = al[k].ln;
        if (ln < 1 || ln > n->n || n->l[ln - 1].len != al[k].len
            || memcmp(n->l[ln - 1].p, al[k].p, al[k].len) != 0)
        {
            bad++;
        } else if (!al[k].ctx) {
            ours[ln] = 1;
        }
    }
    free(al);
    return bad;
}


/* the unchanged lines of n, in order, each a whole line of o (the same
 * bytes, newline included; a last line without one only the old file's
 * last line without one), in order */
static int
safe(const text_t *o, const text_t *n, const unsigned char *ours)
{
    size_t  i, j;

    j = 0;
    for (i = 1; i <= n->n; i++) {
        if (ours[i]) {
            continue;
        }
        while (j < o->n && !l_eq(&n->l[i - 1], &o->l[j])) {
            j++;
        }
        if (j == o->n) {
            return 0;
        }
        j++;
    }
    return 1;
}


/* the matcher and gg_match_lines() over two buffers, as gg_file() runs
 * them; -1 on error */
static int
run(const char *ob, size_t olen, const char *nb, size_t nlen, size_t *badm)
{
    gg_view_t  ov, dv;

    if (gg_lmatch(&c, ob, olen, nb, nlen) != 0) {
        return -1;
    }
    *badm += check_m(ob, olen, nb, nlen);
    gg_view_buf(&ov, ob, olen);
    gg_view_buf(&dv, nb, nlen);
    if (gg_match_lines(&c, &ov, &dv) != 0) {
        return -1;
    }
    /* the line numbers a finding would count */
    gg_lines_number(&c, &dv);
    return 0;
}


/* kinds of case */
enum { K_EXACT, K_MOVED, K_ANY };


/* one pair: all checks; kind says which precision check holds */
static void
check(const text_t *o, const text_t *n, int kind, int git, stats_t *st)
{
    char           *ob, *nb;
    size_t          olen, nlen, i, a, r;
    text_t          on, nn;
    unsigned char  *ours, *ref, *gref;

    ob = t_join(o, &olen);
    nb = t_join(n, &nlen);
    /* as the matcher sees them: lines split at newlines */
    t_split(&on, ob, olen);
    t_split(&nn, nb, nlen);
    ours = calloc(nn.n + 2, 1);
    ref = calloc(nn.n + 2, 1);
    gref = calloc(nn.n + 2, 1);
    st->cases++;

    if (run(ob, olen, nb, nlen, &st->badm) != 0) {
        st->badm++;
        goto done;
    }
    st->badline += ours_added(&nn, ours);
    if (!safe(&on, &nn, ours)) {
        if (st->unsafe++ < 3) {
            printf("# case %zu: an unchanged line not in the old file's "
                   "order\n", st->cases);
        }
    }
    r = ref_lcs(&on, &nn, ref);
    a = 0;
    for (i = 1; i <= nn.n; i++) {
        a += ours[i];
    }
    st->ours += a;
    st->ref += r;
    if (kind == K_EXACT) {
        for (i = 1; i <= nn.n; i++) {
            if (ours[i] != ref[i]) {
                if (st->exact_bad++ < 3) {
                    printf("# case %zu: line %zu %s\n", st->cases, i,
                           ours[i] ? "added, the LCS keeps it"
                                   : "kept, the LCS adds it");
                }
                break;
            }
        }
    } else if (kind == K_MOVED && a != r) {
        if (st->count_bad++ < 3) {
            printf("# case %zu: %zu lines added, the LCS %zu\n", st->cases,
                   a, r);
        }
    }
    if (git) {
        st->git_cases++;
        git_added(ob, olen, nb, nlen, gref, nn.n);
        for (i = 1; i <= nn.n; i++) {
            if (gref[i] && !ours[i]) {
                if (st->git_missing++ < 3) {
                    printf("# case %zu: line %zu added by git, not by us\n",
                           st->cases, i);
                }
            }
        }
    }

done:

    free(ours);
    free(ref);
    free(gref);
    t_free(&on);
    t_free(&nn);
    free(ob);
    free(nb);
}


/* a text of n lines, unique or with duplicated ones mixed in (dups in
 * 3 of them) */
static void
gen(text_t *t, size_t n, int dups, const char *eol)
{
    size_t  i;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < n; i++) {
        if (dups && rndn(3) < (uint64_t) dups) {
            t_dup(t, t->n, eol);
        } else {
            t_uniq(t, t->n, eol);
        }
    }
}


/* a random edit of t: kind 0 insert, 1 delete, 2 replace, 3 move, 4
 * duplicate a line; unique new lines unless dups */
static void
edit(text_t *t, int op, int dups, const char *eol)
{
    size_t  at, k, i, to;
    text_t  blk;

    at = rndn(t->n + 1);
    k = 1 + rndn(6);
    switch (op) {

    case 0:
        for (i = 0; i < k; i++) {
            if (dups && rndn(2) == 0) {
                t_dup(t, at, eol);
            } else {
                t_uniq(t, at, eol);
            }
        }
        break;

    case 1:
        k = at + k > t->n ? t->n - at : k;
        t_del(t, at, k);
        break;

    case 2:
        k = at + k > t->n ? t->n - at : k;
        t_del(t, at, k);
        for (i = 0; i < k; i++) {
            t_uniq(t, at, eol);
        }
        break;

    case 3:
        k = at + k > t->n ? t->n - at : k;
        memset(&blk, 0, sizeof(blk));
        for (i = 0; i < k; i++) {
            t_put(&blk, i, t->l[at + i].p, t->l[at + i].len);
        }
        t_del(t, at, k);
        to = rndn(t->n + 1);
        for (i = 0; i < k; i++) {
            t_put(t, to + i, blk.l[i].p, blk.l[i].len);
        }
        t_free(&blk);
        break;

    default:
        if (t->n > 0) {
            at = rndn(t->n);
            t_put(t, rndn(t->n + 1), t->l[at].p, t->l[at].len);
        }
    }
}


/* the last line's newline taken off */
static void
chop(text_t *t)
{
    if (t->n > 0 && t->l[t->n - 1].len > 0
        && t->l[t->n - 1].p[t->l[t->n - 1].len - 1] == '\n')
    {
        t->l[t->n - 1].len--;
    }
}


static void
report(const char *what, stats_t *st, int kind)
{
    printf("# %s: %zu pairs, %zu lines added (the LCS: %zu)%s\n", what,
           st->cases, st->ours, st->ref,
           st->git_cases ? ", some against git diff" : "");
    ok(st->badm == 0, "%s: every stretch in bounds, in order, whole lines, "
       "the same bytes (%zu not)", what, st->badm);
    ok(st->badline == 0, "%s: every reported line is the new file's line "
       "of that number (%zu not)", what, st->badline);
    ok(st->unsafe == 0, "%s: the unchanged lines are the old file's, in "
       "order (%zu pairs not)", what, st->unsafe);
    if (kind == K_EXACT) {
        ok(st->exact_bad == 0, "%s: exactly the lines the LCS adds "
           "(%zu pairs not)", what, st->exact_bad);
    } else if (kind == K_MOVED) {
        ok(st->count_bad == 0, "%s: as many lines added as the LCS "
           "(%zu pairs not)", what, st->count_bad);
    }
    if (st->git_cases) {
        ok(st->git_missing == 0, "%s: every line git diff adds is added "
           "(%zu not, %zu pairs)", what, st->git_missing, st->git_cases);
    }
}


/* old and new from literal bytes */
static void
pair_lit(const char *o, size_t olen, const char *n, size_t nlen, int kind,
    int git, stats_t *st)
{
    text_t  a, b;

    t_split(&a, o, olen);
    t_split(&b, n, nlen);
    check(&a, &b, kind, git, st);
    t_free(&a);
    t_free(&b);
}


/* a buffer of k copies of a line, with an edit: the time it takes */
static double
big_run(const char *ob, size_t olen, const char *nb, size_t nlen,
    size_t *added, size_t *badm)
{
    size_t           k;
    struct timespec  t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (run(ob, olen, nb, nlen, badm) != 0) {
        (*badm)++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *added = 0;
    for (k = 0; k < c.nlines; k++) {
        *added += !c.lines[k].ctx;
    }
    return (double) (t1.tv_sec - t0.tv_sec)
           + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
}


static char *
repeat(const char *head, const char *line, size_t k, const char *tail,
    size_t *len)
{
    char    *b;
    size_t   hl, ll, tl, i, n;

    hl = strlen(head);
    ll = strlen(line);
    tl = strlen(tail);
    b = malloc(hl + ll * k + tl + 1);
    memcpy(b, head, hl);
    n = hl;
    for (i = 0; i < k; i++) {
        memcpy(b + n, line, ll);
        n += ll;
    }
    memcpy(b + n, tail, tl);
    *len = n + tl;
    return b;
}


/*
 * gg_match_lines() alone, fed byte stretches as a delta's copies and the
 * extents' shared bytes are: they start and end anywhere, mid-line in
 * either file.  Texts of short lines over a few characters (so a line is
 * often the tail or the head of another), edited byte by byte.
 */

/* lines of 0 to 5 characters of "abx", some CRLF, maybe no newline at
 * the end; its length */
static size_t
r_text(char *b, size_t nl)
{
    size_t  i, k, n;

    n = 0;
    for (i = 0; i < nl; i++) {
        for (k = rndn(6); k > 0; k--) {
            b[n++] = "abx"[rndn(3)];
        }
        if (rndn(8) == 0) {
            b[n++] = '\r';
        }
        b[n++] = '\n';
    }
    if (n > 0 && rndn(4) == 0) {
        n--;
    }
    return n;
}


/* o edited into n (room for olen + 64): characters deleted (the one
 * after a newline or before one too), inserted, newlines inserted
 * (a line split) and deleted (lines joined), a piece moved */
static size_t
r_edit(const char *o, size_t olen, char *n)
{
    int     op, k;
    size_t  len, at, i, a, l;
    char    tmp[64];

    memcpy(n, o, olen);
    len = olen;
    for (k = 1 + (int) rndn(4); k > 0; k--) {
        op = (int) rndn(6);
        at = rndn(len + 1);
        if (op <= 1 && len > 0) {
            /* delete a character; op 1: the first of a line or the last
             * before its newline */
            at = at < len ? at : len - 1;
            if (op == 1 && rndn(2)) {
                while (at > 0 && n[at - 1] != '\n') {
                    at--;
                }
            } else if (op == 1) {
                while (at + 1 < len && n[at] != '\n') {
                    at++;
                }
                at -= at > 0 && n[at] == '\n';
            }
            if (at < len) {
                memmove(n + at, n + at + 1, len - at - 1);
                len--;
            }
        } else if (op == 2 && len < olen + 60) {
            memmove(n + at + 1, n + at, len - at);
            n[at] = "abx\n"[rndn(4)];
            len++;
        } else if (op == 3 && len > 0) {
            /* a newline deleted: two lines joined */
            for (i = at; i < len && n[i] != '\n'; i++) {
                /* the next newline */
            }
            if (i < len) {
                memmove(n + i, n + i + 1, len - i - 1);
                len--;
            }
        } else if (op == 4 && len > 2) {
            /* a piece moved */
            a = rndn(len);
            l = 1 + rndn(len - a < 16 ? len - a : 16);
            if (l > len - a || l > sizeof(tmp)) {
                continue;
            }
            memcpy(tmp, n + a, l);
            memmove(n + a, n + a + l, (len - a) - l);
            len -= l;
            at = rndn(len + 1);
            memmove(n + at + l, n + at, len - at);
            memcpy(n + at, tmp, l);
            len += l;
        }
    }
    return len;
}


/* the stretches a delta might give: along the new file, at each point
 * the longest run of the same bytes anywhere in the old file (the first
 * found, or a random one of the longest), often cut at either end; some
 * left out; a few out of order (gg_match_lines() drops those) */
static void
r_stretches(const char *o, size_t olen, const char *n, size_t nlen)
{
    size_t      i, j, k, best, bi, cut;
    gg_match_t  *m;

    c.nm = 0;
    j = 0;
    while (j < nlen) {
        best = 0;
        bi = 0;
        for (i = 0; i < olen; i++) {
            for (k = 0; i + k < olen && j + k < nlen && o[i + k] == n[j + k];
                 k++)
            {
                /* common */
            }
            if (k > best || (k == best && k > 0 && rndn(3) == 0)) {
                best = k;
                bi = i;
            }
        }
        if (best == 0 || rndn(10) == 0) {
            j++;
            continue;
        }
        if (c.nm + 2 > c.mcap) {
            c.mcap = c.mcap ? 2 * c.mcap : 64;
            c.m = realloc(c.m, c.mcap * sizeof(*c.m));
        }
        /* cut a little off either end, sometimes */
        cut = best > 1 && rndn(3) == 0 ? rndn(best) : 0;
        if (rndn(2)) {
            bi += cut;
            j += cut;
        }
        best -= cut;
        m = &c.m[c.nm++];
        m->o = bi;
        m->n = j;
        m->len = best;
        j += best;
    }
    /* a couple of stretches swapped: out of order */
    if (c.nm > 2 && rndn(4) == 0) {
        gg_match_t  t;

        i = rndn(c.nm - 1);
        t = c.m[i];
        c.m[i] = c.m[i + 1];
        c.m[i + 1] = t;
    }
}


/* a view of b[0, len) as random extents, each piece its own source */
#define R_PIECES  64

typedef struct {
    gg_pobj_t     src[R_PIECES];
    gg_pobj_t    *held[R_PIECES];
    gg_ext_t      e[R_PIECES];
    gg_extents_t  x;
} r_ext_t;

static void
r_view(gg_view_t *v, r_ext_t *r, const char *b, size_t len)
{
    size_t  k, at, l;

    memset(r, 0, sizeof(*r));
    at = 0;
    for (k = 0; at < len && k < R_PIECES; k++) {
        l = k == R_PIECES - 1 ? len - at : 1 + rndn(len - at < 12 ? len - at
                                                                   : 12);
        r->src[k].data = (unsigned char *) b + at;
        r->src[k].len = l;
        r->held[k] = &r->src[k];
        r->e[k].src = &r->src[k];
        r->e[k].p = r->src[k].data;
        r->e[k].soff = 0;
        r->e[k].pos = at;
        r->e[k].len = l;
        at += l;
    }
    r->x.e = r->e;
    r->x.n = k;
    r->x.len = len;
    r->x.held = r->held;
    r->x.nheld = k;
    gg_view_ext(v, &r->x);
}


typedef struct {
    size_t  cases, unsafe, badline, differ, added, tails;
} rstats_t;


/* one pair through both views */
static void
r_check(const char *ob, size_t olen, const char *nb, size_t nlen,
    rstats_t *st)
{
    size_t          i, nm;
    text_t          on, nn;
    r_ext_t        *ro, *rn;
    gg_view_t       ov, dv;
    gg_match_t     *save;
    unsigned char  *ours, *ours2;

    st->cases++;
    t_split(&on, ob, olen);
    t_split(&nn, nb, nlen);
    ours = calloc(nn.n + 2, 1);
    ours2 = calloc(nn.n + 2, 1);
    ro = malloc(sizeof(*ro));
    rn = malloc(sizeof(*rn));

    r_stretches(ob, olen, nb, nlen);
    nm = c.nm;
    save = malloc((nm + 1) * sizeof(*save));
    memcpy(save, c.m, nm * sizeof(*save));

    gg_view_buf(&ov, ob, olen);
    gg_view_buf(&dv, nb, nlen);
    if (gg_match_lines(&c, &ov, &dv) != 0) {
        st->badline++;
        goto done;
    }
    gg_lines_number(&c, &dv);
    st->badline += ours_added(&nn, ours);
    if (!safe(&on, &nn, ours)) {
        if (st->unsafe++ < 3) {
            printf("# stretches, case %zu: an unchanged line is not a whole "
                   "line of the old file, in order\n", st->cases);
        }
    }

    /* the same over extents */
    memcpy(c.m, save, nm * sizeof(*save));
    c.nm = nm;
    r_view(&ov, ro, ob, olen);
    r_view(&dv, rn, nb, nlen);
    if (gg_match_lines(&c, &ov, &dv) != 0) {
        st->badline++;
        goto done;
    }
    gg_lines_number(&c, &dv);
    st->badline += ours_added(&nn, ours2);
    for (i = 1; i <= nn.n; i++) {
        st->added += ours[i];
        if (ours[i] != ours2[i]) {
            st->differ++;
            break;
        }
    }

    /* the lines that are the tail or head of an old line and no whole
     * one: each added */
    for (i = 1; i <= nn.n; i++) {
        size_t  j;
        int     whole, part;

        whole = 0;
        part = 0;
        for (j = 0; j < on.n; j++) {
            if (l_eq(&nn.l[i - 1], &on.l[j])) {
                whole = 1;
            } else if (nn.l[i - 1].len < on.l[j].len
                       && (memcmp(on.l[j].p + on.l[j].len - nn.l[i - 1].len,
                                  nn.l[i - 1].p, nn.l[i - 1].len) == 0
                           || memcmp(on.l[j].p, nn.l[i - 1].p,
                                     nn.l[i - 1].len) == 0))
            {
                part = 1;
            }
        }
        if (part && !whole) {
            st->tails++;
            if (!ours[i]) {
                st->unsafe++;
            }
        }
    }

done:

    free(save);
    free(ro);
    free(rn);
    free(ours);
    free(ours2);
    t_free(&on);
    t_free(&nn);
}


static void
r_run(void)
{
    int       i;
    char      ob[512], nb[600];
    size_t    olen, nlen;
    rstats_t  st;

    memset(&st, 0, sizeof(st));
    for (i = 0; i < 20000; i++) {
        olen = r_text(ob, rndn(40));
        nlen = r_edit(ob, olen, nb);
        r_check(ob, olen, nb, nlen, &st);
    }
    printf("# stretches anywhere: %zu pairs, %zu lines added, %zu lines "
           "the tail or head of an old line and no whole one\n", st.cases,
           st.added, st.tails);
    ok(st.tails > 1000, "stretches anywhere: lines that are the tail or "
       "head of an old line come up (%zu)", st.tails);
    ok(st.unsafe == 0, "stretches anywhere: every unchanged line is a "
       "whole line of the old file, in order; every tail or head of one "
       "added (%zu pairs or lines not)", st.unsafe);
    ok(st.badline == 0, "stretches anywhere: every reported line is the new "
       "file's line of that number (%zu not)", st.badline);
    ok(st.differ == 0, "stretches anywhere: the same lines over one buffer "
       "and over extents (%zu pairs not)", st.differ);
}


int
main(void)
{
    int          i, j, ops;
    char        *ob, *nb;
    size_t       olen, nlen, k, added, badm;
    double       secs;
    text_t       o, n;
    stats_t      st;
    gg_match_t   bad;
    const char  *eol, *lo, *ln;

    if (git_sandbox(dir, sizeof(dir), "gg_lmatch_test") != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    c.err = err;
    c.errlen = sizeof(err);

    /* unique lines, inserts, deletes, replacements: the LCS exactly;
     * a tenth against git diff too */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 400; i++) {
        eol = i % 7 == 0 ? "\r\n" : "\n";
        gen(&o, rndn(300), 0, eol);
        t_copy(&n, &o);
        ops = 1 + (int) rndn(8);
        for (j = 0; j < ops; j++) {
            edit(&n, (int) rndn(3), 0, eol);
        }
        if (i % 5 == 1) {
            chop(&o);
        }
        if (i % 5 == 2) {
            chop(&n);
        }
        check(&o, &n, K_EXACT, i % 10 == 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("unique lines, inserted, deleted, replaced", &st, K_EXACT);

    /* only inserts (the bench's shape: a line after every few): exactly
     * the inserted lines */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 40; i++) {
        gen(&o, 200 + rndn(2000), 0, "\n");
        t_copy(&n, &o);
        for (k = rndn(4); k < n.n; k += 2 + rndn(6)) {
            t_uniq(&n, k, "\n");
        }
        check(&o, &n, K_EXACT, i % 10 == 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("a line inserted every few", &st, K_EXACT);

    /* unique lines moved too: as many added as the LCS */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 300; i++) {
        gen(&o, rndn(200), 0, "\n");
        t_copy(&n, &o);
        ops = 1 + (int) rndn(6);
        for (j = 0; j < ops; j++) {
            edit(&n, (int) rndn(4), 0, "\n");
        }
        check(&o, &n, K_MOVED, 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("unique lines, blocks moved", &st, K_MOVED);

    /* duplicated lines, every edit, no trailing newline, CRLF: safe;
     * how many more than the LCS */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 600; i++) {
        eol = i % 9 == 0 ? "\r\n" : "\n";
        gen(&o, rndn(i % 50 == 0 ? 3 : 250), 1, eol);
        t_copy(&n, &o);
        ops = (int) rndn(10);
        for (j = 0; j < ops; j++) {
            edit(&n, (int) rndn(5), 1, eol);
        }
        if (i % 4 == 1) {
            chop(&o);
        }
        if (i % 6 == 2) {
            chop(&n);
        }
        check(&o, &n, K_ANY, 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("duplicated lines, all edits", &st, K_ANY);
    ok(st.ours <= st.ref + st.ref / 64, "duplicated lines: at most 1/64 "
       "more added than the LCS (%zu, %zu)", st.ours, st.ref);

    /* mostly duplicated lines (two in three): the gaps between anchors
     * matched again, small ones exactly */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 300; i++) {
        gen(&o, rndn(300), 2, "\n");
        t_copy(&n, &o);
        ops = 1 + (int) rndn(8);
        for (j = 0; j < ops; j++) {
            edit(&n, (int) rndn(5), 1, "\n");
        }
        check(&o, &n, K_ANY, 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("mostly duplicated lines", &st, K_ANY);
    ok(st.ours <= st.ref + st.ref / 64, "mostly duplicated lines: at most "
       "1/64 more added than the LCS (%zu, %zu)", st.ours, st.ref);

    /* only duplicated lines (braces, blank lines, a few statements), up
     * to 200 of them: no line unique on either side, the gap matched by
     * an exact LCS, so no more lines added than the LCS adds */
    memset(&st, 0, sizeof(st));
    for (i = 0; i < 60; i++) {
        gen(&o, 20 + rndn(180), 3, "\n");
        t_copy(&n, &o);
        ops = 1 + (int) rndn(8);
        for (j = 0; j < ops; j++) {
            edit(&n, (int) rndn(5), 1, "\n");
        }
        check(&o, &n, K_ANY, 0, &st);
        t_free(&o);
        t_free(&n);
    }
    report("only duplicated lines", &st, K_ANY);
    ok(st.ours <= st.ref, "only duplicated lines: no more added than the "
       "LCS (%zu, %zu)", st.ours, st.ref);

    /* literal cases: empty files, no newline, NUL bytes, CRLF */
    memset(&st, 0, sizeof(st));
    pair_lit("", 0, "", 0, K_EXACT, 1, &st);
    pair_lit("", 0, "a\n", 2, K_EXACT, 1, &st);
    pair_lit("a\n", 2, "", 0, K_EXACT, 1, &st);
    pair_lit("a\nb\n", 4, "a\nb", 3, K_EXACT, 1, &st);
    pair_lit("a\nb", 3, "a\nb\n", 4, K_EXACT, 1, &st);
    pair_lit("a\nb", 3, "a\nx\nb", 5, K_EXACT, 1, &st);
    pair_lit("x", 1, "y", 1, K_EXACT, 1, &st);
    pair_lit("a\0b\nc\0d\n", 8, "a\0b\nX\0\nc\0d\n", 11, K_EXACT, 1, &st);
    pair_lit("a\0b\nc\0d\n", 8, "a\0c\nc\0d\n", 8, K_EXACT, 1, &st);
    pair_lit("a\r\nb\r\nc\r\n", 9, "a\r\nb\nc\r\n", 8, K_EXACT, 1, &st);
    pair_lit("k1\nk2\nk3\nk4\n", 12, "k1\nk2\nk3\nk4\nk5", 14, K_EXACT, 1, &st);
    /* a line that is the end of a longer old line (a character deleted
     * before its text, a line split), the start of one (the character
     * after deleted, the last line): added, as git adds it */
    pair_lit("q\nxabc\n", 7, "q\nQ\nabc\n", 8, K_EXACT, 1, &st);
    pair_lit("q\nxabc\nr\n", 9, "q\nabc\nr\n", 8, K_EXACT, 1, &st);
    pair_lit("q\r\nxabc\r\nr\r\n", 12, "q\r\nabc\r\nr\r\n", 11, K_EXACT,
             1, &st);
    pair_lit("q\nabcx", 6, "q\nabc", 5, K_EXACT, 1, &st);
    pair_lit("q\nabc\n", 6, "q\nabc", 5, K_EXACT, 1, &st);
    pair_lit("q\nabc", 5, "q\nabc\n", 6, K_EXACT, 1, &st);
    pair_lit("q\nkeyabc\nr\n", 11, "q\nkey\nabc\nr\n", 12, K_EXACT, 1, &st);
    pair_lit("q\nkey\nabc\nr\n", 12, "q\nkeyabc\nr\n", 11, K_EXACT, 1, &st);
    pair_lit("abc\n", 4, "bc\n", 3, K_EXACT, 1, &st);
    pair_lit("abc", 3, "ab", 2, K_EXACT, 1, &st);
    report("empty files, no newline, NUL bytes, CRLF, tails", &st,
           K_EXACT);

    r_run();

    /* the checks fail on a wrong stretch: one line off */
    lo = "one\ntwo\nthree\n";
    ln = "one\nTWO\nthree\n";
    c.nm = 0;
    if (gg_lmatch(&c, lo, 14, ln, 14) == 0) {
        ok(check_m(lo, 14, ln, 14) == 0, "one line changed: good stretches");
        bad.o = 4;
        bad.n = 4;
        bad.len = 4;
        c.m[0] = bad;
        c.nm = 1;
        ok(check_m(lo, 14, ln, 14) == 1, "a stretch of other bytes is "
           "caught");
        {
            gg_view_t      ov, dv;
            text_t         a, b;
            unsigned char  ours[8];

            gg_view_buf(&ov, lo, 14);
            gg_view_buf(&dv, ln, 14);
            gg_match_lines(&c, &ov, &dv);
            gg_lines_number(&c, &dv);
            t_split(&a, lo, 14);
            t_split(&b, ln, 14);
            ours_added(&b, ours);
            ok(!safe(&a, &b, ours), "and the line it hides is caught as "
               "unsafe");
            t_free(&a);
            t_free(&b);
        }
    } else {
        ok(0, "gg_lmatch: %s", err);
    }

    /* one huge line, changed in the middle: added, fast */
    ob = repeat("", "abcdefgh", 1 << 20, "\n", &olen);
    nb = repeat("", "abcdefgh", 1 << 20, "\n", &nlen);
    nb[nlen / 2] = 'X';
    badm = 0;
    secs = big_run(ob, olen, nb, nlen, &added, &badm);
    ok(badm == 0 && c.nlines == 1 && c.add.len == nlen, "one 8 MB line "
       "changed: added whole (%.3f s)", secs);
    free(ob);
    free(nb);

    /* a million identical lines, one inserted in the middle: one added */
    ob = repeat("", "same line\n", 1000000, "", &olen);
    nb = malloc(olen + 8);
    memcpy(nb, ob, olen / 2);
    memcpy(nb + olen / 2, "other\n", 6);
    memcpy(nb + olen / 2 + 6, ob + olen / 2, olen - olen / 2);
    nlen = olen + 6;
    badm = 0;
    secs = big_run(ob, olen, nb, nlen, &added, &badm);
    ok(badm == 0 && c.add.len == 6 && secs < 10, "a million identical "
       "lines, one inserted: that one added (%zu bytes, %.3f s)",
       c.add.len, secs);
    free(nb);

    /* the same lines with different first and last: no unique line in
     * common but the two swapped; bounded, safe */
    free(ob);
    ob = repeat("first\n", "same line\n", 1000000, "last\n", &olen);
    nb = repeat("last\n", "same line\n", 1000000, "first\n", &nlen);
    badm = 0;
    secs = big_run(ob, olen, nb, nlen, &added, &badm);
    ok(badm == 0 && secs < 10, "a million identical lines between two "
       "swapped ones: bounded (%.3f s, %zu bytes added)", secs, c.add.len);
    free(ob);
    free(nb);

    /* a million identical lines against a million others, alternating:
     * no unique line at all */
    ob = repeat("", "a\nb\n", 500000, "", &olen);
    nb = repeat("", "b\na\n", 500000, "", &nlen);
    nb[0] = 'c';
    badm = 0;
    secs = big_run(ob, olen, nb, nlen, &added, &badm);
    ok(badm == 0 && secs < 10, "a million lines of two kinds, shifted: "
       "bounded (%.3f s)", secs);
    free(ob);
    free(nb);

    gg_lmatch_free(&c.lm);
    free(c.add.data);
    free(c.lines);
    free(c.m);
    free(c.tmp.data);
    sh("rm -rf %s", dir);
    return done_testing();
}
