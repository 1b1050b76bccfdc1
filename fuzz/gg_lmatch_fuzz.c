/*
 * libFuzzer target for git-gate's line matcher (gitgate-helper/
 * gg_lmatch.c) and the rule it feeds (gg_match_lines(), gg_view.c), as
 * gg_file() runs them on two versions built whole.  The input's first two
 * bytes say how many of the rest are the old version (modulo its length);
 * the new version is what follows.  Beyond "no crash, no sanitizer
 * report": every stretch the matcher gives is in bounds, in order in both
 * files, whole lines and the same bytes; every line gg_match_lines()
 * reports is the new file's line of that number; and the lines it counts
 * unchanged, in order, each lie inside a line of the old file (at its end
 * when they end in a newline), in the same order: the safety of a diff.
 */

#define _GNU_SOURCE                 /* memmem */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scan_int.h"
#include "fuzz.h"
#include "../t/unit/gg_added.h"


static gg_ctx_t  c;
static char      err[256];


/* the starts of the lines of p[0, len) into *at (n + 1 of them) */
static size_t
lines_of(const char *p, size_t len, size_t **at)
{
    size_t  i, n;

    n = 0;
    *at = malloc((len + 2) * sizeof(**at));
    CHECK(*at != NULL);
    (*at)[n++] = 0;
    for (i = 0; i < len; i++) {
        if (p[i] == '\n' && i + 1 < len) {
            (*at)[n++] = i + 1;
        }
    }
    (*at)[n] = len;
    return len ? n : 0;
}


/* whether x[0, xl) lies inside the line y[0, yl) */
static int
inside(const char *x, size_t xl, const char *y, size_t yl)
{
    if (xl > yl) {
        return 0;
    }
    if (xl > 0 && x[xl - 1] == '\n') {
        return memcmp(y + yl - xl, x, xl) == 0;
    }
    return xl == 0 || memmem(y, yl, x, xl) != NULL;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t            i, k, olen, nlen, no, nn, *oat, *nat, ln, j, nal;
    uint64_t          lo, lnn;
    const char       *o, *d;
    gg_view_t         ov, dv;
    gg_match_t       *m;
    unsigned char    *added;
    gg_added_line_t  *al;

    if (size < 2) {
        return 0;
    }
    c.err = err;
    c.errlen = sizeof(err);
    k = ((size_t) data[0] << 8 | data[1]) % (size - 1);
    o = (const char *) data + 2;
    olen = k;
    d = o + olen;
    nlen = size - 2 - olen;

    CHECK(gg_lmatch(&c, o, olen, d, nlen) == 0);

    /* the stretches: what gg_match_lines() trusts */
    lo = 0;
    lnn = 0;
    for (i = 0; i < c.nm; i++) {
        m = &c.m[i];
        CHECK(m->len > 0 && m->o >= lo && m->n >= lnn);
        CHECK(m->o <= olen && m->len <= olen - m->o);
        CHECK(m->n <= nlen && m->len <= nlen - m->n);
        CHECK(memcmp(o + m->o, d + m->n, m->len) == 0);
        CHECK(m->o == 0 || o[m->o - 1] == '\n');
        CHECK(m->n == 0 || d[m->n - 1] == '\n');
        CHECK(m->o + m->len == olen || o[m->o + m->len - 1] == '\n');
        CHECK(m->n + m->len == nlen || d[m->n + m->len - 1] == '\n');
        lo = m->o + m->len;
        lnn = m->n + m->len;
    }

    gg_view_buf(&ov, o, olen);
    gg_view_buf(&dv, d, nlen);
    CHECK(gg_match_lines(&c, &ov, &dv) == 0);
    gg_lines_number(&c, &dv);

    no = lines_of(o, olen, &oat);
    nn = lines_of(d, nlen, &nat);
    added = calloc(nn + 2, 1);
    CHECK(added != NULL);
    al = gg_added_lines(&c, &nal);
    CHECK(al != NULL);
    for (k = 0; k < nal; k++) {
        ln = al[k].ln;
        CHECK(ln >= 1 && ln <= nn);
        CHECK(nat[ln] - nat[ln - 1] == al[k].len);
        CHECK(memcmp(d + nat[ln - 1], al[k].p, al[k].len) == 0);
        if (!al[k].ctx) {
            added[ln] = 1;
        }
    }
    free(al);

    /* the unchanged lines: a subsequence of the old file's lines */
    j = 0;
    for (i = 1; i <= nn; i++) {
        if (added[i]) {
            continue;
        }
        while (j < no && !inside(d + nat[i - 1], nat[i] - nat[i - 1],
                                 o + oat[j], oat[j + 1] - oat[j]))
        {
            j++;
        }
        CHECK(j < no);
        j++;
    }

    free(added);
    free(oat);
    free(nat);
    return 0;
}
