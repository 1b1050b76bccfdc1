/*
 * libFuzzer target for git-gate's line matcher (gitgate-helper/
 * gg_lmatch.c) and the rule it feeds (gg_match_lines(), gg_view.c), as
 * gg_file() runs them on two versions built whole, and for the rule alone
 * fed byte stretches that start and end anywhere, as a pack's delta
 * copies and two versions' shared extents are.  The input's first two
 * bytes say how many of the rest are the old version (modulo its length);
 * the new version is what follows; the first byte's top bit picks the
 * stretches: clear, the line matcher's; set, a delta's (4-byte seeds
 * along the new version, each extended both ways over equal bytes, as
 * git's delta makes its copies).  Beyond "no crash, no sanitizer report":
 * every stretch is in bounds, the same bytes in both files (the line
 * matcher's whole lines, in order); every line gg_match_lines() reports
 * is the new file's line of that number; the same lines over one buffer
 * and over extents of random sizes; and the lines it counts unchanged, in
 * order, are each a WHOLE line of the old file (the same bytes, newline
 * to newline), in the same order: the safety of a diff.
 */

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


/* a delta's copies of d from o: at each point of d, the last place of o
 * with the same 4 bytes, extended forward and back over equal bytes (not
 * back over the last copy) */
#define SEED_BITS  12

static void
delta_stretches(const char *o, size_t olen, const char *d, size_t nlen)
{
    size_t      i, j, k, b, done;
    uint32_t    key;
    gg_match_t *m;
    static size_t  tab[1 << SEED_BITS];

    for (k = 0; k < (1 << SEED_BITS); k++) {
        tab[k] = SIZE_MAX;
    }
    for (i = 0; i + 4 <= olen; i++) {
        memcpy(&key, o + i, 4);
        tab[(key * 2654435761u) >> (32 - SEED_BITS)] = i;
    }
    c.nm = 0;
    done = 0;
    j = 0;
    while (j + 4 <= nlen) {
        memcpy(&key, d + j, 4);
        i = tab[(key * 2654435761u) >> (32 - SEED_BITS)];
        if (i == SIZE_MAX || memcmp(o + i, d + j, 4) != 0) {
            j++;
            continue;
        }
        for (k = 4; i + k < olen && j + k < nlen && o[i + k] == d[j + k]; k++)
        {
            /* forward */
        }
        for (b = 0; b < i && b < j - done && o[i - b - 1] == d[j - b - 1];
             b++)
        {
            /* back over the bytes not copied yet */
        }
        if (c.nm == c.mcap) {
            c.mcap = c.mcap ? 2 * c.mcap : 64;
            m = realloc(c.m, c.mcap * sizeof(*c.m));
            CHECK(m != NULL);
            c.m = m;
        }
        m = &c.m[c.nm++];
        m->o = i - b;
        m->n = j - b;
        m->len = k + b;
        j += k;
        done = j;
    }
}


/* a view of b[0, len) as extents of sizes from sz[] (each its own
 * source) */
#define PIECES  256

typedef struct {
    gg_pobj_t     src[PIECES];
    gg_pobj_t    *held[PIECES];
    gg_ext_t      e[PIECES];
    gg_extents_t  x;
} pieces_t;

static void
view_pieces(gg_view_t *v, pieces_t *r, const char *b, size_t len,
    const uint8_t *sz, size_t nsz)
{
    size_t  k, at, l;

    memset(r, 0, sizeof(*r));
    at = 0;
    for (k = 0; at < len && k < PIECES; k++) {
        l = k == PIECES - 1 ? len - at : 1 + (nsz ? sz[k % nsz] % 23 : 7);
        l = l < len - at ? l : len - at;
        r->src[k].data = (unsigned char *) b + at;
        r->src[k].len = l;
        r->held[k] = &r->src[k];
        r->e[k].src = &r->src[k];
        r->e[k].p = r->src[k].data;
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


/* the lines gg_match_lines() left added, into added[1..nn], each checked
 * against the new file's line of its number */
static void
added_of(const char *d, const size_t *nat, size_t nn, unsigned char *added)
{
    size_t            k, ln, nal;
    gg_added_line_t  *al;

    memset(added, 0, nn + 2);
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
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               delta;
    size_t            i, k, olen, nlen, no, nn, *oat, *nat, j, nm, len;
    uint64_t          lo, lnn;
    const char       *o, *d;
    gg_view_t         ov, dv;
    gg_match_t       *m, *save;
    unsigned char    *added, *added2;
    static pieces_t   po, pn;

    if (size < 2) {
        return 0;
    }
    c.err = err;
    c.errlen = sizeof(err);
    delta = data[0] >> 7;
    k = ((size_t) data[0] << 8 | data[1]) % (size - 1);
    o = (const char *) data + 2;
    olen = k;
    d = o + olen;
    nlen = size - 2 - olen;

    if (delta) {
        delta_stretches(o, olen, d, nlen);
    } else {
        CHECK(gg_lmatch(&c, o, olen, d, nlen) == 0);
    }

    /* the stretches: what gg_match_lines() trusts (the bytes); the line
     * matcher's are whole lines in order too */
    lo = 0;
    lnn = 0;
    for (i = 0; i < c.nm; i++) {
        m = &c.m[i];
        CHECK(m->len > 0);
        CHECK(m->o <= olen && m->len <= olen - m->o);
        CHECK(m->n <= nlen && m->len <= nlen - m->n);
        CHECK(memcmp(o + m->o, d + m->n, m->len) == 0);
        if (delta) {
            continue;
        }
        CHECK(m->o >= lo && m->n >= lnn);
        CHECK(m->o == 0 || o[m->o - 1] == '\n');
        CHECK(m->n == 0 || d[m->n - 1] == '\n');
        CHECK(m->o + m->len == olen || o[m->o + m->len - 1] == '\n');
        CHECK(m->n + m->len == nlen || d[m->n + m->len - 1] == '\n');
        lo = m->o + m->len;
        lnn = m->n + m->len;
    }
    nm = c.nm;
    save = malloc((nm + 1) * sizeof(*save));
    CHECK(save != NULL);
    memcpy(save, c.m, nm * sizeof(*save));

    no = lines_of(o, olen, &oat);
    nn = lines_of(d, nlen, &nat);
    added = calloc(nn + 2, 1);
    added2 = calloc(nn + 2, 1);
    CHECK(added != NULL && added2 != NULL);

    gg_view_buf(&ov, o, olen);
    gg_view_buf(&dv, d, nlen);
    CHECK(gg_match_lines(&c, &ov, &dv) == 0);
    gg_lines_number(&c, &dv);
    added_of(d, nat, nn, added);

    /* the same over extents: the sizes from the input's own bytes */
    memcpy(c.m, save, nm * sizeof(*save));
    c.nm = nm;
    view_pieces(&ov, &po, o, olen, (const uint8_t *) d, nlen);
    view_pieces(&dv, &pn, d, nlen, (const uint8_t *) o, olen);
    CHECK(gg_match_lines(&c, &ov, &dv) == 0);
    gg_lines_number(&c, &dv);
    added_of(d, nat, nn, added2);
    CHECK(memcmp(added, added2, nn + 2) == 0);

    /* the unchanged lines: whole lines of the old file, in order */
    j = 0;
    for (i = 1; i <= nn; i++) {
        if (added[i]) {
            continue;
        }
        len = nat[i] - nat[i - 1];
        while (j < no && (oat[j + 1] - oat[j] != len
                          || memcmp(d + nat[i - 1], o + oat[j], len) != 0))
        {
            j++;
        }
        CHECK(j < no);
        j++;
    }

    free(save);
    free(added);
    free(added2);
    free(oat);
    free(nat);
    return 0;
}
