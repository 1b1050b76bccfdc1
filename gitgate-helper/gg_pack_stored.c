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


int
gg_pack_stored(gg_stored_t *s, gg_pack_t *p, const unsigned char *oid,
    uint64_t size)
{
    int                   type;
    size_t                i;
    uint32_t              k;
    uint64_t              o, esize, data_off, base_off;
    const unsigned char  *base_oid, *z, *end;

    for (i = 0; i < p->n; i++) {
        if (gg_pack_find(&k, &o, p, oid, (uint32_t) i) != 0 || k != i
            || gg_pack_entry(&type, &esize, &data_off, &base_off, &base_oid,
                             p->f[i].pack, p->f[i].pack_len, o) != 0
            || type != GG_OBJ_BLOB || esize != size)
        {
            continue;
        }
        end = p->f[i].pack + p->f[i].pack_len - GG_PACK_TRAILER;
        z = p->f[i].pack + data_off;
        /* zlib's header (deflate, no dictionary), a stored block's */
        if (end - z < 2 + 5 || (z[0] & 0x0f) != 8 || (z[1] & 0x20) != 0
            || ((z[0] << 8) | z[1]) % 31 != 0 || (z[2] & 0x06) != 0)
        {
            continue;
        }
        if (s->cap == 0) {
            s->blk = malloc(64 * sizeof(s->blk[0]));
            if (s->blk == NULL) {
                return -1;
            }
            s->cap = 64;
        }
        /* its page table filled at once: the copies read it all over (a
         * VM's page fault costs 10-14 us) */
        gg_stored_populate(z, end, size);
        s->end = end;
        s->size = size;
        s->blk[0].b = z + 2;
        s->blk[0].pos = 0;
        s->n = 1;
        return 1;
    }
    return 0;
}


/* block i's length: 0 (a stored block's header, its bytes in the pack,
 * none past the blob's size), or -1 */
static int
gg_stored_block(const gg_stored_t *s, size_t i, uint64_t *blen)
{
    const unsigned char  *b;

    /* BFINAL, BTYPE 00, padding to the byte; LEN, NLEN; LEN bytes */
    b = s->blk[i].b;
    if (s->end - b < 5 || (b[0] & 0x06) != 0 || (b[1] ^ b[3]) != 0xff
        || (b[2] ^ b[4]) != 0xff)
    {
        return -1;
    }
    *blen = (uint64_t) b[1] | (uint64_t) b[2] << 8;
    return (uint64_t) (s->end - b - 5) < *blen
           || *blen > s->size - s->blk[i].pos ? -1 : 0;
}


int
gg_stored_read(gg_stored_t *s, uint64_t off, uint64_t len,
    unsigned char *dst)
{
    size_t            i, lo, hi, mid;
    uint64_t          blen, k, pos;
    gg_stored_blk_t  *nb;

    if (off > s->size || len > s->size - off) {
        return -1;
    }

    /* the last block seen that starts at or before off */
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
        if (gg_stored_block(s, i, &blen) != 0) {
            return -1;
        }
        pos = s->blk[i].pos;
        if (off < pos + blen) {
            k = pos + blen - off < len ? pos + blen - off : len;
            memcpy(dst, s->blk[i].b + 5 + (off - pos), (size_t) k);
            dst += k;
            off += k;
            len -= k;
        }
        if (len == 0 || i + 1 < s->n) {
            continue;
        }
        /* the next block, seen for the first time (none after the last;
         * more than one a KB: not what zlib writes) */
        if ((s->blk[i].b[0] & 1) || s->n > (s->size >> 10) + 64) {
            return -1;
        }
        if (s->n == s->cap) {
            nb = realloc(s->blk, 2 * s->cap * sizeof(s->blk[0]));
            if (nb == NULL) {
                return -1;
            }
            s->blk = nb;
            s->cap *= 2;
        }
        s->blk[s->n].b = s->blk[i].b + 5 + blen;
        s->blk[s->n].pos = pos + blen;
        s->n++;
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
}
