/*
 * git-gate's push scanner: a file's decoded views (issue 26, item 6); the
 * push's scan budget they are checked against is gg_ctx.c's.
 *
 * A file's raw bytes are scanned as always (gg_lines.c); then, besides:
 *
 *   gzip, zlib  a blob that starts with a gzip member (1f 8b 08) or a zlib
 *               stream (a valid CMF/FLG, no preset dictionary) is decoded
 *               with libbottle's decoder (lib/bottle_coding.h, the egress
 *               DLP's), each stage bounded by the decoded-size cap and the
 *               ratio cap (times the blob's size), several gzip members
 *               in a row as one; the members' header fields (FNAME,
 *               FCOMMENT, FEXTRA a line each, then the MTIME/XFL/OS bytes
 *               of every member in one run) are a view of their own, as
 *               DLP scans them.  What it decodes to is looked at again,
 *               up to
 *               GG_DEC_STAGES codings deep.  Corrupt, truncated, bytes
 *               after the end, over a cap, nested deeper: the push is
 *               refused (rule "undecodable"), naming commit, file, why.
 *               Only a stream at offset 0 is decoded (what gunzip, zlib
 *               readers and the forge's consumers read); one inside
 *               another format (zip, PNG, PDF) is that format's business.
 *   UTF-16      a blob (or a decoded view) holding a NUL byte is
 *               transcoded to UTF-8 four ways: little- and big-endian,
 *               from byte 0 and from byte 1 (a token at an odd offset);
 *               a BOM dropped, surrogate pairs joined, a lone surrogate
 *               U+FFFD; a trailing odd byte left to the raw scan.  A
 *               file with no NUL byte costs one memchr().
 *
 * A modified file's view is the decoded new version's added lines against
 * the decoded old version (gg_file(): the line matcher and
 * gg_match_lines()), so what the forge already has is not refused again;
 * a new file's view is scanned whole.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_coding.h"
#include "gg_scan_int.h"


typedef struct {
    gg_ctx_t           *c;
    gg_buf_t           *out;
    gg_buf_t           *meta;       /* FNAME, FCOMMENT, FEXTRA, a line each */
    gg_buf_t            fixed;      /* MTIME, XFL, OS of every member */
    uint64_t            limit;
    uint64_t            tick;
    int                 over;       /* 2: over the scan's budget */
} gg_dsink_t;


/* which coding a blob starts with: GG_DEC_GZIP, GG_DEC_ZLIB or 0 */
int
gg_dec_coding(const unsigned char *p, size_t n)
{
    if (n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 0x08) {
        return GG_DEC_GZIP;
    }

    /* CM 8, CINFO at most 7, FCHECK, no FDICT (a dictionary we lack) */
    if (n >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7
        && ((p[0] << 8) | p[1]) % 31 == 0 && (p[1] & 0x20) == 0)
    {
        return GG_DEC_ZLIB;
    }

    return 0;
}


/* text: no control byte but tab, newline, VT, FF, CR (and no NUL) */
static int
gg_dec_text(const unsigned char *p, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (p[i] < 0x20 && (p[i] < '\t' || p[i] > '\r')) {
            return 0;
        }
    }
    return 1;
}


static int
gg_dec_sink(void *arg, const unsigned char *p, size_t len)
{
    gg_dsink_t  *s = arg;

    if (gg_buf_add(s->out, p, len) != 0) {
        return 1;
    }

    /* a bomb under the caps still takes time: the budget, every 4 MB */
    s->tick += len;
    if (s->c != NULL && s->tick >= (4 << 20)) {
        s->tick = 0;
        if (gg_budget(s->c) != 0) {
            s->over = 2;
            return 1;
        }
    }
    return 0;
}


/* a gzip member's header: its fields a line each, its fixed bytes one
 * run over every member (a value cut in 6-byte pieces is seen whole) */
static int
gg_dec_meta(void *arg, int part, const unsigned char *p, size_t len)
{
    gg_dsink_t  *s = arg;
    gg_buf_t    *b;

    if (s->meta->len + s->fixed.len + len + 2 > s->limit) {
        s->over = 1;
        return 1;
    }
    b = part == BOTTLE_CODING_META_FIXED ? &s->fixed : s->meta;
    if (gg_buf_add(b, p, len) != 0
        || (b == s->meta && gg_buf_add(b, "\n", 1) != 0))
    {
        return 1;
    }
    return 0;
}


/*
 * Decodes p[0, n) of coding (GG_DEC_GZIP, GG_DEC_ZLIB: several gzip
 * members in a row too) into out, its gzip headers into meta if not
 * NULL (gg_dec_meta()), limit bytes at most each (c, if not NULL, for
 * the budget).  0; -1 corrupt or truncated (out: what came before),
 * -4 over the limit, -2 over the budget, -3 out of memory; a reason in
 * why.  A gzip member's header fields are raw
 * bytes of what it is in, scanned there.
 */
int
gg_dec_stream(gg_ctx_t *c, gg_buf_t *out, gg_buf_t *meta,
    const unsigned char *p, size_t n, int coding, uint64_t limit, char *why,
    size_t whylen)
{
    int                coding_lib, rc;
    gg_dsink_t         s;
    bottle_decoder_t  *d;

    out->len = 0;
    memset(&s, 0, sizeof(s));
    s.c = c;
    s.out = out;
    s.meta = meta;
    s.limit = limit;
    if (meta != NULL) {
        meta->len = 0;
    }

    coding_lib = coding == GG_DEC_GZIP ? BOTTLE_CODING_GZIP
                                       : BOTTLE_CODING_DEFLATE;

    rc = bottle_decoder_create(&d, &coding_lib, 1, limit, NULL, gg_dec_sink,
                               &s);
    if (rc == BOTTLE_CODING_OK && coding == GG_DEC_GZIP && meta != NULL) {
        rc = bottle_decoder_meta(d, gg_dec_meta);
    }
    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_feed(d, p, n);
    }
    if (rc == BOTTLE_CODING_OK) {
        rc = bottle_decoder_finish(d);
    }
    bottle_decoder_destroy(d);

    if (rc == BOTTLE_CODING_OK && s.fixed.len
        && (gg_buf_add(meta, s.fixed.data, s.fixed.len) != 0
            || gg_buf_add(meta, "\n", 1) != 0))
    {
        rc = BOTTLE_CODING_ENOMEM;
    }
    free(s.fixed.data);

    if (rc == BOTTLE_CODING_OK) {
        return 0;
    }

    if (s.over == 2) {
        snprintf(why, whylen, "budget");
        return -2;
    }

    if (rc == BOTTLE_CODING_ELIMIT || s.over == 1) {
        snprintf(why, whylen, "decodes to more than %llu bytes, the cap "
                 "(GITGATE_DECODED_MAX_MB, GITGATE_DECODED_RATIO)",
                 (unsigned long long) limit);
        return -4;
    } else if (rc == BOTTLE_CODING_ENOMEM || rc == BOTTLE_CODING_ESINK) {
        snprintf(why, whylen, "out of memory");
        return -3;
    } else {
        snprintf(why, whylen, "%s", bottle_coding_strerror(rc));
    }
    return -1;
}


/*
 * p[0, n) as UTF-16 (be: big-endian) from byte start (0 or 1), into out
 * as UTF-8: at most 3 bytes a code unit (a pair's 4 bytes for 2 units),
 * so out holds (n / 2) * 3 bytes.  A BOM first is dropped; a lone
 * surrogate is U+FFFD; an odd last byte is left out.  Returns the length.
 */
size_t
gg_u16_view(char *out, const unsigned char *p, size_t n, int be,
    size_t start)
{
    size_t          i;
    uint32_t        u, v;
    unsigned char  *o;

    o = (unsigned char *) out;
    i = start;

    if (i + 1 < n && (be ? (p[i] == 0xfe && p[i + 1] == 0xff)
                         : (p[i] == 0xff && p[i + 1] == 0xfe)))
    {
        i += 2;
    }

    for ( /* void */ ; i + 1 < n; i += 2) {
        u = be ? ((uint32_t) p[i] << 8) | p[i + 1]
               : ((uint32_t) p[i + 1] << 8) | p[i];

        if (u < 0x80) {
            *o++ = (unsigned char) u;
            continue;
        }

        if (u < 0x800) {
            *o++ = (unsigned char) (0xc0 | (u >> 6));
            *o++ = (unsigned char) (0x80 | (u & 0x3f));
            continue;
        }

        if (u >= 0xd800 && u <= 0xdbff && i + 3 < n) {
            v = be ? ((uint32_t) p[i + 2] << 8) | p[i + 3]
                   : ((uint32_t) p[i + 3] << 8) | p[i + 2];
            if (v >= 0xdc00 && v <= 0xdfff) {
                u = 0x10000 + ((u - 0xd800) << 10) + (v - 0xdc00);
                *o++ = (unsigned char) (0xf0 | (u >> 18));
                *o++ = (unsigned char) (0x80 | ((u >> 12) & 0x3f));
                *o++ = (unsigned char) (0x80 | ((u >> 6) & 0x3f));
                *o++ = (unsigned char) (0x80 | (u & 0x3f));
                i += 2;
                continue;
            }
        }

        if (u >= 0xd800 && u <= 0xdfff) {
            u = 0xfffd;
        }

        *o++ = (unsigned char) (0xe0 | (u >> 12));
        *o++ = (unsigned char) (0x80 | ((u >> 6) & 0x3f));
        *o++ = (unsigned char) (0x80 | (u & 0x3f));
    }

    return (size_t) (o - (unsigned char *) out);
}


/* a refusal of the file: rule "undecodable", commit, file, why */
static int
gg_dec_refuse(gg_ctx_t *c, const char *path, size_t index, const char *view,
    const char *why)
{
    char  where[GG_MAX_REFNAME + 512];

    if (path != NULL) {
        snprintf(where, sizeof(where), "%s %s file %s (%s: %s)", c->obj_kind,
                 c->obj, path, view, why);
    } else {
        snprintf(where, sizeof(where), "%s %s changed file %zu (%s: %s)",
                 c->obj_kind, c->obj, index, view, why);
    }
    return gg_refusal(c, GG_RULE_UNDECODABLE, where);
}


/* a view scanned: the new one's added lines against the old one's */
static int
gg_dec_scan(gg_ctx_t *c, const char *path, size_t index, const char *view,
    const char *o, size_t olen, int old, const char *d, size_t nlen)
{
    int     rc;
    char   *name;
    size_t  len;

    name = NULL;
    if (path != NULL) {
        len = strlen(path) + strlen(view) + 4;
        name = malloc(len);
        if (name == NULL) {
            snprintf(c->err, c->errlen, "out of memory");
            return -1;
        }
        snprintf(name, len, "%s (%s)", path, view);
    }

    rc = gg_file(c, name, index, old ? o : NULL, olen, d, nlen, NULL, NULL,
                 0);
    free(name);
    return rc;
}


static int gg_dec_views(gg_ctx_t *c, const char *path, size_t index,
    const char *view, const char *o, size_t olen, const char *d, size_t nlen,
    uint64_t raw, int depth);


/* the four UTF-16 views of d (against o's) */
static int
gg_dec_u16(gg_ctx_t *c, const char *path, size_t index, const char *view,
    const char *o, size_t olen, const char *d, size_t nlen)
{
    int          k, rc;
    char         label[128];
    char        *ob, *nb;
    size_t       ol, nl;

    static const char  *name[4] = {
        "UTF-16LE", "UTF-16BE", "UTF-16LE from byte 1", "UTF-16BE from byte 1"
    };

    nb = malloc(nlen / 2 * 3 + 1);
    ob = o != NULL ? malloc(olen / 2 * 3 + 1) : NULL;
    if (nb == NULL || (o != NULL && ob == NULL)) {
        free(nb);
        free(ob);
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }

    rc = 0;
    for (k = 0; k < 4 && rc == 0; k++) {
        nl = gg_u16_view(nb, (const unsigned char *) d, nlen, k & 1, k >> 1);
        ol = 0;
        if (ob != NULL) {
            ol = gg_u16_view(ob, (const unsigned char *) o, olen, k & 1,
                             k >> 1);
        }
        if (nl == 0) {
            continue;
        }
        snprintf(label, sizeof(label), "%s%s%s", view, *view ? ", " : "",
                 name[k]);
        rc = gg_dec_scan(c, path, index, label, ob, ol, ob != NULL, nb, nl);
    }

    free(nb);
    free(ob);
    return rc;
}


/*
 * d's decoded views (o's, the old version's, to compare with; NULL for a
 * new file), depth codings deep already; raw: the blob's size, for the
 * ratio cap.  0 (a refusal is a finding), -1.
 */
static int
gg_dec_views(gg_ctx_t *c, const char *path, size_t index, const char *view,
    const char *o, size_t olen, const char *d, size_t nlen, uint64_t raw,
    int depth)
{
    int       coding, rc, oldok;
    char      why[256], label[128], hlabel[160];
    uint64_t  limit;
    gg_buf_t  nb, ob, nm, om;

    coding = gg_dec_coding((const unsigned char *) d, nlen);

    if (coding != 0) {
        snprintf(label, sizeof(label), "%s%s%s", view, *view ? ", " : "",
                 coding == GG_DEC_GZIP ? "gzip" : "zlib");

        if (depth == GG_DEC_STAGES) {
            snprintf(why, sizeof(why), "compressed more than %d times over",
                     GG_DEC_STAGES);
            return gg_dec_refuse(c, path, index, label, why);
        }

        limit = raw * c->dec_ratio;
        if (limit / c->dec_ratio != raw || limit > c->dec_max) {
            limit = c->dec_max;
        }

        memset(&nb, 0, sizeof(nb));
        memset(&ob, 0, sizeof(ob));
        memset(&nm, 0, sizeof(nm));
        memset(&om, 0, sizeof(om));

        rc = gg_dec_stream(c, &nb, &nm, (const unsigned char *) d, nlen,
                           coding, limit, why, sizeof(why));

        if (rc == -1 && coding == GG_DEC_ZLIB
            && gg_dec_text((const unsigned char *) d, nlen))
        {
            /* text whose first two bytes read as a zlib header ("x^",
             * "HK"): no zlib reader gets anything from it but an error;
             * its bytes are scanned as they are, and whatever decoded
             * before the error too */
            rc = nb.len ? gg_dec_scan(c, path, index, label, NULL, 0, 0,
                                      nb.data, nb.len)
                        : 0;
            rc = rc == 0 ? 1 : rc;

        } else if (rc == -1 || rc == -4) {
            rc = gg_dec_refuse(c, path, index, label, why);

        } else if (rc == -2) {
            rc = -1;

        } else if (rc < 0) {
            snprintf(c->err, c->errlen, "out of memory");
            rc = -1;

        } else {
            /* the old version the same way, when it decodes; else the
             * whole of the new one's view is added */
            oldok = o != NULL
                    && gg_dec_coding((const unsigned char *) o, olen)
                       == coding
                    && gg_dec_stream(NULL, &ob, &om,
                                     (const unsigned char *) o, olen, coding,
                                     limit, why, sizeof(why))
                       == 0;

            rc = gg_dec_scan(c, path, index, label, ob.data, ob.len, oldok,
                             nb.data != NULL ? nb.data : "", nb.len);

            /* the members' headers: raw bytes of the blob, but FEXTRA
             * may hold UTF-16, and the fixed bytes are read together */
            if (rc == 0 && nm.len) {
                snprintf(hlabel, sizeof(hlabel), "%s header", label);
                rc = gg_dec_scan(c, path, index, hlabel, om.data, om.len,
                                 oldok && om.len, nm.data, nm.len);
                if (rc == 0 && memchr(nm.data, '\0', nm.len) != NULL) {
                    rc = gg_dec_u16(c, path, index, hlabel,
                                    oldok && om.len ? om.data : NULL,
                                    om.len, nm.data, nm.len);
                }
            }

            /* what it decoded to, decoded again (or as UTF-16) */
            if (rc == 0) {
                rc = gg_dec_views(c, path, index, label,
                                  oldok ? ob.data : NULL, ob.len,
                                  nb.data != NULL ? nb.data : "", nb.len,
                                  raw, depth + 1);
            }
        }

        free(nb.data);
        free(ob.data);
        free(nm.data);
        free(om.data);

        if (rc != 1) {
            return rc;
        }
    }

    if (nlen == 0 || memchr(d, '\0', nlen) == NULL) {
        return 0;
    }

    return gg_dec_u16(c, path, index, view, o, olen, d, nlen);
}


int
gg_dec_wanted(const char *d, size_t nlen)
{
    return gg_dec_coding((const unsigned char *) d, nlen) != 0
           || memchr(d, '\0', nlen) != NULL;
}


int
gg_dec_wanted_ext(const gg_extents_t *x)
{
    size_t          i, k, j;
    gg_pobj_t      *src;
    unsigned char   head[3];
    const gg_ext_t  *e;

    k = 0;
    for (i = 0; i < x->n && k < sizeof(head); i++) {
        e = &x->e[i];
        for (j = 0; j < e->len && k < sizeof(head); j++) {
            head[k++] = e->p[j];
        }
    }
    if (gg_dec_coding(head, k) != 0) {
        return 1;
    }

    /*
     * A NUL byte: each source looked at once (a push's versions are
     * mostly the same few sources, many times over), an extent only when
     * its source has one
     */
    for (i = 0; i < x->n; i++) {
        e = &x->e[i];
        src = e->src;
        if (src != NULL && !(src->nul & 1)) {
            src->nul = 1 | (src->len > src->dlen
                            && memchr(src->data + src->dlen, '\0',
                                      src->len - src->dlen) != NULL) << 1;
        }
        if ((src == NULL || (src->nul & 2)) && e->len
            && memchr(e->p, '\0', (size_t) e->len) != NULL)
        {
            return 1;
        }
    }
    return 0;
}


int
gg_decoded(gg_ctx_t *c, const char *path, size_t index, const char *o,
    size_t olen, const char *d, size_t nlen)
{
    if (nlen == 0 || !gg_dec_wanted(d, nlen)) {
        return 0;
    }
    return gg_dec_views(c, path, index, "", o, olen, d, nlen, nlen, 0);
}
