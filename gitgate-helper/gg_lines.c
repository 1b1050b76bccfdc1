/*
 * git-gate's push scanner: a file's added lines (gg_file()), from the
 * pack's delta between its two versions, as the appended part of a file
 * that grew, or from git-gate's own line matcher (gg_lmatch.c: the common
 * prefix and suffix, then lines unique to both versions as anchors); the
 * stretches in common either way go through gg_match_lines() (gg_view.c),
 * which adds the unchanged lines that may go on a secret of theirs (a PEM
 * block's, gg_opener()).  Each file is scanned as one field
 * by gg_field.c; the walk that finds the files is gg_raw.c's (the trees
 * of gg_scan.c's commits and refs).
 */

#define _GNU_SOURCE                 /* memrchr */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scan_int.h"


/*
 * A delta's copies into *arr as (o: the base's offset, n: the result's,
 * len), or with swap (o, n) the other way; src and dst, when not 0, the
 * sizes it must declare.  1, 0 when it does not fit (c->oom on no
 * memory).
 */
static int
gg_copies(gg_ctx_t *c, gg_match_t **arr, size_t *n, size_t *cap,
    const unsigned char *delta, size_t len, size_t src, size_t dst,
    int swap)
{
    int              rc;
    size_t           k;
    uint64_t         at;
    gg_match_t      *m;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    c->oom = 0;
    if (gg_delta_init(&it, delta, len) != 0 || (src && it.src_size != src)
        || it.dst_size != dst)
    {
        return 0;
    }
    if (!src) {
        c->sib_src = it.src_size;
    }

    while ((rc = gg_delta_next(&it, &op)) == 1) {
        if (!op.copy) {
            continue;
        }
        if (*n == *cap) {
            k = *cap ? 2 * *cap : 1024;
            m = realloc(*arr, k * sizeof(*m));
            if (m == NULL) {
                snprintf(c->err, c->errlen, "out of memory");
                c->oom = 1;
                return 0;
            }
            *arr = m;
            *cap = k;
        }
        at = it.done - op.len;
        m = &(*arr)[(*n)++];
        m->o = swap ? at : op.off;
        m->n = swap ? op.off : at;
        m->len = op.len;
    }
    return rc == 0 ? 1 : 0;
}


static int
gg_base_cmp(const void *a, const void *b)
{
    const gg_match_t  *x, *y;

    x = a;
    y = b;
    if (x->o != y->o) {
        return x->o < y->o ? -1 : 1;
    }
    return 0;
}


/*
 * Two versions stored as deltas of one base: where both copy the same
 * bytes of the base, those bytes are in both (c->s1: the old version's
 * copies, c->s2: the new one's, o the base's offsets) into c->m.  A
 * sweep along the base; copies of one version that overlap each other
 * may miss a match, which only leaves more lines added.
 */
static int
gg_siblings(gg_ctx_t *c)
{
    size_t       i, j, k;
    uint64_t     lo, hi, ea, eb;
    gg_match_t  *x, *y, *m;

    qsort(c->s1, c->ns1, sizeof(*c->s1), gg_base_cmp);
    qsort(c->s2, c->ns2, sizeof(*c->s2), gg_base_cmp);

    i = 0;
    j = 0;
    while (i < c->ns1 && j < c->ns2) {
        x = &c->s1[i];
        y = &c->s2[j];
        ea = x->o + x->len;
        eb = y->o + y->len;
        lo = x->o > y->o ? x->o : y->o;
        hi = ea < eb ? ea : eb;
        if (lo < hi) {
            if (c->nm == c->mcap) {
                k = c->mcap ? 2 * c->mcap : 1024;
                m = realloc(c->m, k * sizeof(*m));
                if (m == NULL) {
                    snprintf(c->err, c->errlen, "out of memory");
                    c->oom = 1;
                    return -1;
                }
                c->m = m;
                c->mcap = k;
            }
            m = &c->m[c->nm++];
            m->o = x->n + (lo - x->o);
            m->n = y->n + (lo - y->o);
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


/*
 * The added lines of a modified file from the pack's delta between its
 * two versions, when one is stored as a delta whose base is the other
 * (a thin pack's new version on the old one the forge has; git
 * pack-objects, which makes a push, often stores the old one on the new),
 * or both as deltas of one base (pack-objects stores the versions of a
 * file a push carries as deltas of the newest): no diff, and neither
 * version compared whole.  1 when done (c->add, c->lines), 0 when there is
 * no such delta (or it does not describe these two versions), -1 on error.
 *
 * The delta's copy ops say which stretches of the new file are bytes of
 * the old one; gg_match_lines() (gg_view.c) keeps those in order and
 * says why a line inside one of them is unchanged.
 */
static int
gg_delta_lines(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen, const git_oid *oid, const git_oid *nid)
{
    int                   rc, kind;
    size_t                len, len2;
    uint32_t              bp1, bp2;
    uint64_t              bo1, bo2, bsize;
    gg_view_t             ov, dv;
    const unsigned char  *delta, *delta2;

    /* new on old, old on new, or both on one base */
    kind = 1;
    rc = gg_pack_delta_of(&delta, &len, c->pack, nid->id, oid->id, c->err,
                          c->errlen);
    if (rc == 0) {
        kind = 2;
        rc = gg_pack_delta_of(&delta, &len, c->pack, oid->id, nid->id,
                              c->err, c->errlen);
    }
    if (rc == 0) {
        /* the bases compared before either delta is inflated */
        kind = 3;
        rc = gg_pack_delta_base(NULL, NULL, &bp1, &bo1, c->pack, oid->id, 1,
                                c->err, c->errlen);
        if (rc == 1) {
            rc = gg_pack_delta_base(NULL, NULL, &bp2, &bo2, c->pack,
                                    nid->id, 0, c->err, c->errlen);
        }
        if (rc == 1 && (bp1 != bp2 || bo1 != bo2)) {
            rc = 0;
        }
        if (rc == 1) {
            rc = gg_pack_delta_base(&delta2, &len2, &bp1, &bo1, c->pack,
                                    oid->id, 1, c->err, c->errlen);
        }
        if (rc == 1) {
            rc = gg_pack_delta_base(&delta, &len, &bp2, &bo2, c->pack,
                                    nid->id, 0, c->err, c->errlen);
        }
    }
    if (rc <= 0) {
        return rc;
    }

    /* the copies: old[o, o + len) is new[n, n + len) */
    c->nm = 0;
    switch (kind) {

    case 1:
        if (gg_copies(c, &c->m, &c->nm, &c->mcap, delta, len, olen, nlen, 0)
            != 1)
        {
            return c->oom ? -1 : 0;
        }
        break;

    case 2:
        if (gg_copies(c, &c->m, &c->nm, &c->mcap, delta, len, nlen, olen, 1)
            != 1)
        {
            return c->oom ? -1 : 0;
        }
        break;

    default:
        /* each version's copies from the base, the base's offsets in o */
        c->ns1 = 0;
        c->ns2 = 0;
        if (gg_copies(c, &c->s1, &c->ns1, &c->s1cap, delta2, len2, 0, olen,
                      0)
            != 1)
        {
            return c->oom ? -1 : 0;
        }
        bsize = c->sib_src;
        if (gg_copies(c, &c->s2, &c->ns2, &c->s2cap, delta, len, 0, nlen, 0)
            != 1
            || c->sib_src != bsize || gg_siblings(c) != 0)
        {
            return c->oom ? -1 : 0;
        }
    }

    gg_view_buf(&ov, o, olen);
    gg_view_buf(&dv, d, nlen);
    if (gg_match_lines(c, &ov, &dv) != 0) {
        return -1;
    }

    c->r->delta_files++;
    return 1;
}


int
gg_dlines(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen, const git_oid *oid, const git_oid *nid)
{
    int        rc;
    gg_view_t  dv;

    rc = gg_delta_lines(c, o, olen, d, nlen, oid, nid);
    if (rc == 1) {
        gg_view_buf(&dv, d, nlen);
        gg_lines_number(c, &dv);
    }
    return rc;
}


/*
 * The added lines of two versions that share no pack source: git-gate's
 * own line matcher (gg_lmatch(): the common prefix and suffix, then lines
 * unique to both sides as anchors) gives the stretches in common, and
 * gg_match_lines() the added lines and their context, as for a delta.
 */
static int
gg_diff_lines(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen)
{
    gg_view_t  ov, dv;

    if (gg_lmatch(c, o, olen, d, nlen) != 0) {
        return -1;
    }
    gg_view_buf(&ov, o, olen);
    gg_view_buf(&dv, d, nlen);
    return gg_match_lines(c, &ov, &dv);
}


/* a file's field, its lines counted from 1 */
static void
gg_file_fd(gg_field_t *fd, const char *path, size_t index)
{
    memset(fd, 0, sizeof(*fd));
    fd->kind = GG_F_FILE;
    fd->name = path;
    fd->index = index;
    fd->first_line = 1;
}


/*
 * The added lines of one file: all of it when it is new (old NULL); the
 * lines the pack's delta between the two versions does not copy
 * (gg_delta_lines()); the appended part when the old content is a prefix
 * of the new one ending in a newline whose last line opens no PEM block
 * (most edits that grow a file, and no diff to run); else the added
 * lines of a line diff.
 */
int
gg_file(gg_ctx_t *c, const char *path, size_t index, const char *o,
    size_t olen, const char *d, size_t nlen, const git_oid *oid,
    const git_oid *nid, int packed)
{
    int          rc;
    size_t       first;
    gg_view_t    dv;

    c->r->files++;

    rc = 0;
    first = 1;
    if (o != NULL) {
        /* both read from the packs: one was made from the other with the
         * very delta whose copies say what is unchanged */
        rc = packed ? gg_delta_lines(c, o, olen, d, nlen, oid, nid) : 0;
        if (rc < 0) {
            return -1;
        }
        /* (not when the old version's last line may open a PEM block:
         * the line diff gives it to the appended lines as context) */
        gg_view_buf(&dv, o, olen);
        if (rc == 0 && olen <= nlen && (olen == 0 || o[olen - 1] == '\n')
            && memcmp(o, d, olen) == 0 && gg_v_last_opener(c, &dv) == 0)
        {
            first = 1 + gg_count_lines(o, olen);
            d += olen;
            nlen -= olen;
            o = NULL;
        }
    }

    if (o == NULL) {
        return gg_file_lines(c, path, index, first, d, nlen);
    }

    if (rc == 0 && gg_diff_lines(c, o, olen, d, nlen) != 0) {
        return -1;
    }

    gg_view_buf(&dv, d, nlen);
    return gg_added_field(c, path, index, &dv) < 0 ? -1 : 0;
}


int
gg_file_lines(gg_ctx_t *c, const char *path, size_t index, size_t first_line,
    const char *d, size_t len)
{
    gg_field_t   fd;

    gg_file_fd(&fd, path, index);
    fd.first_line = first_line;
    fd.data = d;
    fd.len = len;
    c->r->added += len;
    return gg_field(c, &fd) < 0 ? -1 : 0;
}


int
gg_added_field(gg_ctx_t *c, const char *path, size_t index, gg_view_t *d)
{
    gg_field_t   fd;

    gg_file_fd(&fd, path, index);
    fd.view = d;
    fd.data = c->add.data;
    fd.len = c->add.len;
    fd.lines = c->lines;
    fd.nlines = c->nlines;
    c->r->added += fd.len - c->ctxlen;
    return gg_field(c, &fd);
}
