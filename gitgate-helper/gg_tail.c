/*
 * git-gate's blob tails (docs/gitgate.md, "Appended files"): what the
 * push scan knows of a blob it has read, so that a later push that only
 * appends to it is scanned without reading it again.
 *
 * A record is a blob's size, its newline count and three flags: it ends
 * with a newline (or is empty), it has no decoded view (no NUL byte, no
 * compressed stream at 0: gg_dec_wanted()), its last line may open a PEM
 * block (gg_opener(): the appended lines would need it as context, as
 * gg_match_lines() gives it).  The scan writes one for every version of
 * a file it has read whole, or as at most GG_TAIL_EXTENTS extents, of
 * GG_TAIL_MIN bytes or more (a smaller one costs about as much to read
 * as its record does), counted from those very bytes; gg_tail_file()
 * uses the old version's.
 *
 * The records are a cache, in <repo>/gitgate-tails, the gate's own file
 * beside its other state in the copy: GG_TAIL_SLOTS records of
 * GG_TAIL_RECSZ bytes in buckets of GG_TAIL_WAYS, a blob's bucket chosen
 * by its id, a new record written in a free way of it, else over one its
 * id picks.  So the file never grows past 6 MB however many blobs the
 * bottles push, and a record lost to another only costs the next push
 * the old version's read.  Each record holds its blob's whole id and a
 * CRC-32 of itself: a record of another blob, or half of one (two scans
 * writing a slot at once), is no record.  Blob ids name their bytes
 * (git's receive-pack hashed every pushed object), so a record is true
 * of every copy of that blob, pushed or fetched, accepted or not.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "gg_scan_int.h"


#define GG_TAIL_MAGIC   0x31544747u     /* "GGT1" */
#define GG_TAIL_RECSZ   48
#define GG_TAIL_WAYS    4


int
gg_tail_open(const char *repo)
{
    char  path[4096];

    if ((size_t) snprintf(path, sizeof(path), "%s/gitgate-tails", repo)
        >= sizeof(path))
    {
        return -1;
    }
    /* none (a repository the scan cannot write): every push reads the
     * old versions, as before */
    return open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
}


/* the offset of oid's bucket of GG_TAIL_WAYS records */
static off_t
gg_tail_bucket(const unsigned char *oid)
{
    uint32_t  h;

    h = (uint32_t) oid[0] << 24 | (uint32_t) oid[1] << 16
        | (uint32_t) oid[2] << 8 | oid[3];
    return (off_t) (h % (GG_TAIL_SLOTS / GG_TAIL_WAYS))
           * GG_TAIL_WAYS * GG_TAIL_RECSZ;
}


/* the record's bytes: magic, CRC-32 of what follows, id, flags, size,
 * lines */
static void
gg_tail_pack(unsigned char *b, const unsigned char *oid, const gg_tail_t *t)
{
    uint32_t  v;

    v = GG_TAIL_MAGIC;
    memcpy(b, &v, 4);
    memcpy(b + 8, oid, GG_PACK_OIDSZ);
    memcpy(b + 28, &t->flags, 4);
    memcpy(b + 32, &t->size, 8);
    memcpy(b + 40, &t->lines, 8);
    v = (uint32_t) crc32(0, b + 8, GG_TAIL_RECSZ - 8);
    memcpy(b + 4, &v, 4);
}


/* whether b holds a whole record (of oid, when not NULL) */
static int
gg_tail_valid(const unsigned char *b, const unsigned char *oid)
{
    uint32_t  magic, crc;

    memcpy(&magic, b, 4);
    memcpy(&crc, b + 4, 4);
    return magic == GG_TAIL_MAGIC
           && (oid == NULL || memcmp(b + 8, oid, GG_PACK_OIDSZ) == 0)
           && crc == (uint32_t) crc32(0, b + 8, GG_TAIL_RECSZ - 8);
}


/* oid's bucket read into b: the way holding oid's record, or -1 */
static int
gg_tail_find(int fd, const unsigned char *oid, unsigned char *b)
{
    int      w;
    ssize_t  n;

    n = pread(fd, b, GG_TAIL_WAYS * GG_TAIL_RECSZ, gg_tail_bucket(oid));
    if (n < 0) {
        n = 0;
    }
    memset(b + n, 0, GG_TAIL_WAYS * GG_TAIL_RECSZ - (size_t) n);
    for (w = 0; w < GG_TAIL_WAYS; w++) {
        if (gg_tail_valid(b + w * GG_TAIL_RECSZ, oid)) {
            return w;
        }
    }
    return -1;
}


int
gg_tail_get(int fd, const unsigned char *oid, gg_tail_t *t)
{
    int            w;
    unsigned char  b[GG_TAIL_WAYS * GG_TAIL_RECSZ], *r;

    if (fd < 0 || (w = gg_tail_find(fd, oid, b)) < 0) {
        return 0;
    }
    r = b + w * GG_TAIL_RECSZ;
    memcpy(&t->flags, r + 28, 4);
    memcpy(&t->size, r + 32, 8);
    memcpy(&t->lines, r + 40, 8);
    return 1;
}


void
gg_tail_put(int fd, const unsigned char *oid, const gg_tail_t *t)
{
    int            w;
    unsigned char  b[GG_TAIL_WAYS * GG_TAIL_RECSZ], r[GG_TAIL_RECSZ];

    if (fd < 0 || t->size < GG_TAIL_MIN) {
        return;
    }
    gg_tail_pack(r, oid, t);
    w = gg_tail_find(fd, oid, b);
    if (w >= 0) {
        if (memcmp(b + w * GG_TAIL_RECSZ, r, GG_TAIL_RECSZ) == 0) {
            return;
        }
    } else {
        /* a way holding no record, else one the id picks */
        for (w = 0; w < GG_TAIL_WAYS; w++) {
            if (!gg_tail_valid(b + w * GG_TAIL_RECSZ, NULL)) {
                break;
            }
        }
        if (w == GG_TAIL_WAYS) {
            w = oid[4] % GG_TAIL_WAYS;
        }
    }
    /* best effort: a write cut short leaves a record whose CRC fails */
    if (pwrite(fd, r, GG_TAIL_RECSZ,
               gg_tail_bucket(oid) + (off_t) w * GG_TAIL_RECSZ) < 0)
    {
        /* none: the next push reads that version */
    }
}


/* a version's record gg_tail_file() can number appended lines on from:
 * its lines end with a newline, it has no decoded view, its last line
 * opens no PEM block; and 3 bytes at least (under that, the new
 * version's first bytes would be partly appended ones: gg_dec_coding()
 * reads 3) */
static int
gg_tail_usable(const gg_tail_t *t)
{
    return (t->flags & (GG_TAIL_NL | GG_TAIL_PLAIN | GG_TAIL_OPENER))
           == (GG_TAIL_NL | GG_TAIL_PLAIN)
           && t->size >= 3;
}


/* the flags of v but GG_TAIL_PLAIN: GG_TAIL_NL, GG_TAIL_OPENER (also
 * when memory ran out looking); only its last line read, from its end */
static uint32_t
gg_tail_flags(gg_ctx_t *c, gg_view_t *v)
{
    const gg_ext_t  *e;

    e = v->n ? &v->e[v->n - 1] : NULL;
    return (v->len == 0 || (e != NULL && e->len > 0
                            && e->p[e->len - 1] == '\n') ? GG_TAIL_NL : 0)
           | (gg_v_last_opener(c, v) != 0 ? GG_TAIL_OPENER : 0);
}


/* the record of d[0, len); dec: whether it has decoded views */
void
gg_tail_of(gg_ctx_t *c, gg_tail_t *t, const char *d, size_t len, int dec)
{
    gg_view_t  v;

    gg_view_buf(&v, d, len);
    t->size = len;
    t->lines = gg_count_lines(d, len);
    t->flags = gg_tail_flags(c, &v) | (dec ? 0 : GG_TAIL_PLAIN);
}


/* the same of a version as extents */
void
gg_tail_of_ext(gg_ctx_t *c, gg_tail_t *t, const gg_extents_t *x, int dec)
{
    gg_view_t  v;

    /* (the versions of a push are mostly the same few sources: each
     * source's newlines counted once) */
    gg_view_ext(&v, x);
    t->size = x->len;
    t->lines = gg_v_count_lines(&v);
    t->flags = gg_tail_flags(c, &v) | (dec ? 0 : GG_TAIL_PLAIN);
}


/*
 * The record of the blob s holds (gg_pack_stored()), from its blocks
 * where they lie: every block walked to its end (gg_stored_read() of its
 * last byte checks each one's header), each one's bytes counted and
 * looked at in place, nothing copied or inflated.  0, or -1 (not all
 * stored blocks; out of memory).
 */
static int
gg_tail_of_stored(gg_ctx_t *c, gg_tail_t *t, gg_stored_t *s)
{
    int            dec, rc;
    size_t         i;
    unsigned char  b[3];
    gg_extents_t   x;

    if (s->size < sizeof(b) || gg_stored_read(s, s->size - 1, 1, b) != 0
        || gg_stored_read(s, 0, sizeof(b), b) != 0)
    {
        return -1;
    }
    memset(&x, 0, sizeof(x));
    x.e = calloc(s->n, sizeof(x.e[0]));
    if (x.e == NULL) {
        return -1;
    }
    dec = gg_dec_coding(b, sizeof(b)) != 0;
    for (i = 0; i < s->n; i++) {
        x.e[i].p = s->blk[i].b + 5;
        x.e[i].pos = s->blk[i].pos;
        x.e[i].len = s->blk[i].len;
        dec = dec || memchr(x.e[i].p, '\0', x.e[i].len) != NULL;
    }
    x.n = s->n;
    x.len = s->size;
    rc = 0;
    if (x.e[x.n - 1].pos + x.e[x.n - 1].len != s->size) {
        rc = -1;
    } else {
        gg_tail_of_ext(c, t, &x, dec);
    }
    free(x.e);
    return rc;
}


/*
 * A modified file whose new version is stored as a delta on its old one
 * that copies the old one whole, in order, first: what follows is the
 * appended bytes, the delta's inserts and its copies of pieces of the
 * old version, read where that version's entry lies as stored blocks
 * (gg_pack_stored(): a thin push's base, as the gate's receive-pack
 * writes it).  With the old version's record (its lines end with a
 * newline, it has no decoded view, its last line opens no PEM block)
 * those bytes are its added lines, numbered on from the old version's,
 * and neither version is read whole: 1 (scanned), 0 (not such a file:
 * read it as before) or -1.  Without a record, the old version's is made
 * from its stored blocks where they lie (gg_tail_of_stored(): its bytes
 * counted, not inflated, copied or diffed) and written.
 */
int
gg_tail_file(gg_ctx_t *c, const char *path, size_t index,
    const git_oid *oid, const git_oid *nid)
{
    int                   rc, stored, have;
    size_t                len;
    uint64_t              at;
    gg_tail_t             t, app;
    gg_delta_op_t         op;
    gg_delta_iter_t       it;
    const unsigned char  *delta;

    have = gg_tail_get(c->tails, oid->id, &t) == 1;
    if (have && !gg_tail_usable(&t)) {
        return 0;
    }

    rc = gg_pack_delta_of(&delta, &len, c->pack, nid->id, oid->id, c->err,
                          c->errlen);
    if (rc != 1) {
        return rc;
    }
    if (gg_delta_init(&it, delta, len) != 0
        || (have ? it.src_size != t.size : it.src_size < GG_TAIL_MIN))
    {
        return 0;
    }

    /* the copies of the old version, whole and in order */
    at = 0;
    while (at < it.src_size) {
        rc = gg_delta_next(&it, &op);
        if (rc != 1 || !op.copy || op.off != at) {
            return 0;
        }
        at += op.len;
    }
    if (at != it.src_size) {
        return 0;
    }

    /* no record: the old version's from its stored blocks, and kept */
    stored = 0;
    if (!have) {
        if (gg_pack_stored(&c->st, c->pack, oid->id, it.src_size) != 1
            || gg_tail_of_stored(c, &t, &c->st) != 0)
        {
            return 0;
        }
        gg_tail_put(c->tails, oid->id, &t);
        if (!gg_tail_usable(&t)) {
            return 0;
        }
        stored = 1;
    }

    /* then the appended bytes, gathered: inserts, and copies from the old
     * version where its entry lies as stored blocks (a thin push's base
     * as the gate's receive-pack writes it; else it is read whole) */
    c->add.len = 0;
    while ((rc = gg_delta_next(&it, &op)) == 1) {
        if (op.copy && !stored) {
            if (gg_pack_stored(&c->st, c->pack, oid->id, t.size) != 1) {
                return 0;
            }
            stored = 1;
        }
        if (gg_buf_add(&c->add, op.copy ? NULL : (const char *) op.data,
                       op.len) != 0)
        {
            snprintf(c->err, c->errlen, "out of memory");
            return -1;
        }
        if (op.copy
            && gg_stored_read(&c->st, op.off, op.len,
                              (unsigned char *) c->add.data + c->add.len
                              - op.len) != 0)
        {
            return 0;
        }
    }
    if (rc != 0 || it.done != it.dst_size
        || (c->add.len > 0 && memchr(c->add.data, '\0', c->add.len) != NULL))
    {
        return 0;
    }

    c->r->files++;
    c->r->delta_files++;
    c->r->tail_files++;
    if (gg_file_lines(c, path, index, 1 + t.lines, c->add.data, c->add.len)
        < 0)
    {
        return -1;
    }

    /* the new version's record: the old one's and the appended bytes'
     * (its last line theirs, no decoded view in either) */
    gg_tail_of(c, &app, c->add.data, c->add.len, 0);
    t.size += app.size;
    t.lines += app.lines;
    t.flags = app.flags;
    gg_tail_put(c->tails, nid->id, &t);
    return 1;
}
