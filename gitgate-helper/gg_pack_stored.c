/*
 * git-gate's pack reader: a blob read where it lies, a range at a time,
 * when its whole entry is stored deflate blocks alone (gg_pack.h,
 * gg_pack_stored()).  index-pack --fix-thin writes a thin push's bases so
 * at core.compression=0, as the gate's receive-pack runs (gitgate-cgi.c):
 * the old versions of the files a push appends to, whose pieces the
 * push's deltas copy (gg_tail.c).  The blocks are agent input like the
 * rest of the pack: each one's header is checked as it is reached (type
 * stored, LEN and NLEN agreeing, its bytes inside the pack and the blob),
 * and a stream of more than one block a KB is not read this way.
 */

#define _GNU_SOURCE

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gg_pack_int.h"


static void
gg_stored_populate(const unsigned char *z, const unsigned char *end,
    uint64_t size)
{
    uintptr_t  a, b;

    /* the blocks' headers: 5 bytes a block, blocks of 1 KB at least */
    a = (uintptr_t) z & ~(uintptr_t) 4095;
    b = (uint64_t) (end - z) < size + (size >> 10) * 5 + 512
        ? (uintptr_t) end : (uintptr_t) z + size + (size >> 10) * 5 + 512;
    (void) madvise((void *) a, b - a, MADV_POPULATE_READ);
}


/* the block at b, bytes pos on of the blob, as the next one seen: 0 (a
 * stored block's header, its bytes in the pack and in the blob), or -1 */
static int
gg_stored_add(gg_stored_t *s, const unsigned char *b, uint64_t pos)
{
    uint64_t          len;
    gg_stored_blk_t  *nb;

    /* BFINAL, BTYPE 00, padding to the byte; LEN, NLEN; LEN bytes */
    if (s->end - b < 5 || (b[0] & 0x06) != 0 || (b[1] ^ b[3]) != 0xff
        || (b[2] ^ b[4]) != 0xff)
    {
        return -1;
    }
    len = (uint64_t) b[1] | (uint64_t) b[2] << 8;
    if ((uint64_t) (s->end - b - 5) < len || len > s->size - pos
        || s->n > (s->size >> 10) + 64)
    {
        return -1;
    }
    if (s->n == s->cap) {
        nb = realloc(s->blk, (s->cap ? 2 * s->cap : 64) * sizeof(s->blk[0]));
        if (nb == NULL) {
            return -1;
        }
        s->blk = nb;
        s->cap = s->cap ? 2 * s->cap : 64;
    }
    s->blk[s->n].b = b;
    s->blk[s->n].pos = pos;
    s->blk[s->n].len = len;
    s->blk[s->n].last = b[0] & 1;
    s->n++;
    return 0;
}


/*
 * The entry at data_off of f, from its file (f->fd): as many bytes as
 * gg_stored_add() takes at most for a blob of size (zlib's header, blocks
 * of 1 KB and more, 64 under that), read into s->buf; s->end their end.
 * 0, or -1 (then it is read through a mapping of the file: a blob over
 * GG_STORED_PREAD too, so the buffer stays that size at most).
 */
static int
gg_stored_pread(gg_stored_t *s, const gg_packfile_t *f, uint64_t data_off,
    uint64_t size)
{
    size_t          len, got;
    ssize_t         n;

    if (size > GG_STORED_PREAD) {
        return -1;
    }
    len = f->pack_len - GG_PACK_TRAILER - data_off;
    if (2 + size + 5 * ((size >> 10) + 66) < len) {
        len = 2 + size + 5 * ((size >> 10) + 66);
    }
    if (s->bcap < len) {
        /* (nothing of it kept: freed first, not copied) */
        free(s->buf);
        s->bcap = 0;
        s->buf = malloc(len);
        if (s->buf == NULL) {
            return -1;
        }
        s->bcap = len;
    }
    for (got = 0; got < len; got += (size_t) n) {
        n = pread(f->fd, s->buf + got, len - got, (off_t) (data_off + got));
        if (n <= 0) {
            return -1;
        }
    }
    s->end = s->buf + len;
    return 0;
}


int
gg_pack_stored(gg_stored_t *s, gg_pack_t *p, const unsigned char *oid,
    uint64_t size)
{
    int                   type;
    size_t                i;
    uint64_t              o, esize, data_off, base_off;
    const unsigned char  *base_oid, *z;
    unsigned char        hdr[GG_ENTRY_MAX];

    for (i = 0; i < p->n; i++) {
        if (gg_packfile_find(&o, &p->f[i], oid) != 0
            || gg_packfile_entry(&type, &esize, &data_off, &base_off,
                                 &base_oid, hdr, &p->f[i], o) != 0
            || type != GG_OBJ_BLOB || esize != size)
        {
            continue;
        }
        s->size = size;
        s->n = 0;
        if (p->f[i].fd >= 0
            && gg_stored_pread(s, &p->f[i], data_off, size) == 0)
        {
            z = s->buf;
        } else {
            /* (a pack read with pread() mapped for this, once) */
            if (gg_packfile_map(&p->f[i]) != 0) {
                continue;
            }
            s->end = p->f[i].pack + p->f[i].pack_len - GG_PACK_TRAILER;
            z = p->f[i].pack + data_off;
        }
        /* zlib's header (deflate, no dictionary), a stored block */
        if (s->end - z < 2 || (z[0] & 0x0f) != 8 || (z[1] & 0x20) != 0
            || ((z[0] << 8) | z[1]) % 31 != 0 || gg_stored_add(s, z + 2, 0))
        {
            continue;
        }
        /* a mapping's page table filled at once: the copies read it all
         * over (a VM's page fault costs 10-14 us) */
        if (z != s->buf) {
            gg_stored_populate(z, s->end, size);
        }
        return 1;
    }
    return 0;
}


int
gg_stored_read(gg_stored_t *s, uint64_t off, uint64_t len,
    unsigned char *dst)
{
    size_t                  i, lo, hi, mid;
    uint64_t                k;
    const gg_stored_blk_t  *x;

    if (off > s->size || len > s->size - off || s->n == 0) {
        return -1;
    }

    /* the last block seen that starts at or before off (the table alone
     * is read: a block's header only the first time it is seen) */
    lo = 0;
    hi = s->n;
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (s->blk[mid].pos <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }

    for (i = lo; len > 0; i++) {
        x = &s->blk[i];
        if (off < x->pos + x->len) {
            k = x->pos + x->len - off < len ? x->pos + x->len - off : len;
            memcpy(dst, x->b + 5 + (off - x->pos), (size_t) k);
            dst += k;
            off += k;
            len -= k;
        }
        /* the next block, seen for the first time (none after the last) */
        if (len > 0 && i + 1 == s->n
            && (x->last || gg_stored_add(s, x->b + 5 + x->len,
                                         x->pos + x->len) != 0))
        {
            return -1;
        }
    }
    return 0;
}


void
gg_stored_free(gg_stored_t *s)
{
    free(s->blk);
    s->blk = NULL;
    s->n = 0;
    s->cap = 0;
    free(s->buf);
    s->buf = NULL;
    s->bcap = 0;
}
