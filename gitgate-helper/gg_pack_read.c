/*
 * git-gate's pack reader (gg_pack.h): reading an object, its delta chain
 * resolved through the cache (gg_pack_get()), and a delta's own bytes
 * (gg_pack_delta_base(), gg_pack_delta_of()).  Every size is checked
 * against the entry's header and the pack before anything is allocated.
 */

#define _DEFAULT_SOURCE             /* madvise */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <isa-l/igzip_lib.h>

#include "gg_blob.h"
#include "gg_pack_int.h"


/* a zlib stream to inflate into out, exactly size bytes (at most 4 GB) */
static void
gg_zstart(struct inflate_state *st, unsigned char *out, size_t size)
{
    isal_inflate_init(st);
    st->crc_flag = ISAL_ZLIB;
    st->next_out = out;
    st->avail_out = (uint32_t) size;
}


/* the stream's next n bytes at in: 1 (it ended, exactly its size, its
 * Adler-32 right), 0 (it wants more), -1 (broken; more stream than its
 * size) */
static int
gg_zfeed(struct inflate_state *st, const unsigned char *in, uint32_t n)
{
    st->next_in = (uint8_t *) (uintptr_t) in;
    st->avail_in = n;
    if (isal_inflate(st) != ISAL_DECOMP_OK) {
        return -1;
    }
    if (st->block_state == ISAL_BLOCK_FINISH) {
        return st->avail_out == 0 ? 1 : -1;
    }
    return st->avail_out == 0 && st->avail_in > 0 ? -1 : 0;
}


int
gg_zinflate(struct inflate_state *st, const unsigned char *in,
    uint64_t in_len, unsigned char *out, size_t size, uint64_t *used)
{
    if (size > UINT32_MAX) {
        return -1;
    }
    gg_zstart(st, out, size);
    if (gg_zfeed(st, in, in_len > UINT32_MAX ? UINT32_MAX : (uint32_t) in_len)
        != 1)
    {
        return -1;
    }
    if (used != NULL) {
        /* the input it read, less what it buffered past the stream */
        *used = (uint64_t) (st->next_in - in) - st->read_in_length / 8;
    }
    return 0;
}


/*
 * The zlib data at data_off of f inflated into out, exactly size bytes
 * (its header's); it stops at the stream's end, wherever the next entry
 * begins.  Nothing inflates beyond about 1032 times its size: no
 * allocation bigger than the pack can fill was made (checked by the
 * callers).
 */
int
gg_inflate(gg_pack_t *p, const gg_packfile_t *f, uint64_t data_off,
    unsigned char *out, size_t size)
{
    int       rc;
    ssize_t   n;
    uint64_t  off, end, want;

    end = f->pack_len - GG_PACK_TRAILER;
    if (f->fd < 0) {
        return gg_zinflate(p->dec, f->pack + data_off, end - data_off, out,
                           size, NULL);
    }
    if (size > UINT32_MAX) {
        return -1;
    }

    /* from the file, a chunk at a time (GG_PREAD_CHUNK): the same bytes
     * as the mapping's, the same checks as gg_zinflate()'s */
    if (p->zin == NULL) {
        p->zin = malloc(GG_PREAD_CHUNK);
        if (p->zin == NULL) {
            return -1;
        }
    }
    gg_zstart(p->dec, out, size);
    /* (the first read about as much as the object: most are smaller
     * deflated, stored blocks add 5 bytes to each of at least 1 KB) */
    want = size + size / 128 + 64;
    for (off = data_off; off < end; off += (uint64_t) n) {
        want = want < GG_PREAD_CHUNK ? want : GG_PREAD_CHUNK;
        n = pread(f->fd, p->zin, end - off < want ? end - off : want,
                  (off_t) off);
        want = GG_PREAD_CHUNK;
        if (n <= 0) {
            return -1;
        }
        rc = gg_zfeed(p->dec, p->zin, (uint32_t) n);
        if (rc != 0) {
            return rc == 1 ? 0 : -1;
        }
    }
    return -1;
}


/*
 * An object's buffer: size bytes.  One of megabytes is first written
 * when it is inflated or built, a page fault every 4 KB; asking for huge
 * pages (where the kernel gives them on madvise) makes that one every
 * 2 MB, a fifth of an append push's CPU (README "Speed").
 */
#ifdef MADV_POPULATE_WRITE
static uintptr_t  gg_populated;
#endif


void *
gg_alloc(size_t size)
{
    void       *d;
    uintptr_t   a, b;

    d = malloc(size);
#ifdef MADV_HUGEPAGE
    if (d != NULL && size >= GG_HUGE) {
        a = ((uintptr_t) d + GG_HUGE - 1) & ~(uintptr_t) (GG_HUGE - 1);
        b = ((uintptr_t) d + size) & ~(uintptr_t) (GG_HUGE - 1);
        if (b > a) {
            (void) madvise((void *) a, b - a, MADV_HUGEPAGE);
        }
    }
#endif
#ifdef MADV_POPULATE_WRITE
    /* the pages it is written to, mapped in one call rather than a fault
     * each (where the kernel has it, 5.14 on; a VM's fault costs most);
     * only above the highest end seen yet: below it, malloc hands back
     * memory already mapped */
    if (d != NULL && size >= GG_POPULATE
        && (uintptr_t) d + size > gg_populated)
    {
        a = (uintptr_t) d > gg_populated ? (uintptr_t) d : gg_populated;
        a = (a + 4095) & ~(uintptr_t) 4095;
        b = ((uintptr_t) d + size) & ~(uintptr_t) 4095;
        if (b > a) {
            (void) madvise((void *) a, b - a, MADV_POPULATE_WRITE);
        }
        gg_populated = (uintptr_t) d + size;
    }
#endif
#if !defined MADV_HUGEPAGE && !defined MADV_POPULATE_WRITE
    (void) a;
    (void) b;
#endif
    return d;
}


static int
gg_scratch(gg_pack_t *p, size_t size)
{
    unsigned char  *d;

    if (p->scap < size + GG_SLACK) {
        d = realloc(p->scratch, size + GG_SLACK);
        if (d == NULL) {
            return -1;
        }
        p->scratch = d;
        p->scap = size + GG_SLACK;
    }
    return 0;
}


/*
 * The object at (pack, off), resolved: walks down its chain (no
 * recursion) to a cached object or a whole one, then applies the deltas
 * back up, keeping each result in the cache.  0 and *out held; 1 a
 * REF_DELTA's base in no pack; -1 corrupt.
 */
static int
gg_resolve(gg_pobj_t **out, gg_pack_t *p, uint32_t pack, uint64_t off,
    char *err, size_t errlen)
{
    int                   type, depth, i;
    uint32_t              cp;
    uint64_t              co, size, data_off, base_off, dsize;
    gg_pobj_t            *base, *o;
    unsigned char        *d;
    gg_delta_iter_t       it;
    const gg_packfile_t  *f;
    const unsigned char  *base_oid;
    unsigned char        hdr[GG_ENTRY_MAX];

    cp = pack;
    co = off;
    depth = 0;
    base = NULL;

    for ( ;; ) {
        base = gg_cache_find(p, cp, co);
        if (base != NULL) {
            base->refs++;
            break;
        }

        f = &p->f[cp];
        if (gg_packfile_entry(&type, &size, &data_off, &base_off,
                              &base_oid, hdr, f, co)
            != 0)
        {
            snprintf(err, errlen, "a pack entry is corrupt");
            return -1;
        }

        if (type != GG_OBJ_OFS_DELTA && type != GG_OBJ_REF_DELTA) {
            if (size > GG_BLOB_MAX) {
                goto too_big;
            }
            if (size / GG_ZLIB_RATIO > f->pack_len - data_off) {
                snprintf(err, errlen, "a pack entry is corrupt");
                return -1;
            }
            d = gg_alloc((size_t) size + GG_SLACK);
            if (d == NULL) {
                goto oom;
            }
            d[size] = '\0';
            if (gg_inflate(p, f, data_off, d, (size_t) size) != 0) {
                free(d);
                snprintf(err, errlen, "a pack entry does not inflate to "
                         "its size");
                return -1;
            }
            base = gg_cache_add(p, cp, co, type, d, (size_t) size);
            if (base == NULL) {
                free(d);
                goto oom;
            }
            gg_cache_whole(p, base);
            break;
        }

        if (depth == GG_PACK_DEPTH) {
            snprintf(err, errlen, "a delta chain deeper than %d",
                     GG_PACK_DEPTH);
            return -1;
        }
        p->cpack[depth] = cp;
        p->coff[depth] = co;
        depth++;

        if (type == GG_OBJ_OFS_DELTA) {
            co = base_off;
        } else if (gg_pack_find(&cp, &co, p, base_oid, cp) != 0) {
            /* loose, or in an alternate: git cat-file's to read */
            return 1;
        }
    }

    /* back up the chain, each delta onto the result before it */
    for (i = depth - 1; i >= 0; i--) {
        cp = p->cpack[i];
        co = p->coff[i];
        f = &p->f[cp];

        if (gg_packfile_entry(&type, &dsize, &data_off, &base_off,
                              &base_oid, hdr, f, co)
            != 0
            || dsize > GG_BLOB_MAX + GG_BLOB_MAX / 64 + 64
            || dsize / GG_ZLIB_RATIO > f->pack_len - data_off)
        {
            snprintf(err, errlen, "a pack entry is corrupt");
            goto fail;
        }
        if (gg_scratch(p, (size_t) dsize) != 0) {
            goto oom_base;
        }
        if (gg_inflate(p, f, data_off, p->scratch, (size_t) dsize) != 0
            || gg_delta_init(&it, p->scratch, (size_t) dsize) != 0
            || it.src_size != base->len)
        {
            snprintf(err, errlen, "a delta in a pack is corrupt");
            goto fail;
        }

        size = it.dst_size;
        if (size > GG_BLOB_MAX) {
            goto too_big_base;
        }
        d = gg_alloc((size_t) size + GG_SLACK);
        if (d == NULL) {
            goto oom_base;
        }
        if (gg_delta_apply_slack(d, (size_t) size, base->data, base->len,
                                 p->scratch, (size_t) dsize)
            != 0)
        {
            free(d);
            snprintf(err, errlen, "a delta in a pack is corrupt");
            goto fail;
        }

        d[size] = '\0';

        o = gg_cache_find(p, cp, co);
        if (o != NULL) {
            /* the same entry twice in one chain cannot be: corrupt */
            free(d);
            snprintf(err, errlen, "a delta chain loops");
            goto fail;
        }
        o = gg_cache_add(p, cp, co, base->type, d, (size_t) size);
        if (o == NULL) {
            free(d);
            goto oom_base;
        }
        gg_pack_put(p, base);
        base = o;
    }

    *out = base;
    return 0;

too_big_base:

    gg_pack_put(p, base);

too_big:

    snprintf(err, errlen, "an object in a pack is over %llu MB",
             (unsigned long long) (GG_BLOB_MAX >> 20));
    return -2;

oom_base:

    gg_pack_put(p, base);

oom:

    snprintf(err, errlen, "out of memory");
    return -1;

fail:

    gg_pack_put(p, base);
    return -1;
}


int
gg_pack_get(gg_pobj_t **out, gg_pack_t *p, const unsigned char *oid,
    char *err, size_t errlen)
{
    uint32_t  pack;
    uint64_t  off;

    if (gg_pack_find(&pack, &off, p, oid, 0) != 0) {
        return 1;
    }
    return gg_resolve(out, p, pack, off, err, errlen);
}


int
gg_pack_delta_base(const unsigned char **delta, size_t *len, uint32_t *bpack,
    uint64_t *boff, gg_pack_t *p, const unsigned char *a, int slot,
    char *err, size_t errlen)
{
    size_t               *cap, i;
    uint32_t              pack;
    uint64_t              off;
    unsigned char        *d, **buf;
    gg_dhdr_t            *h;
    const gg_packfile_t  *f;
    const unsigned char  *base_oid;
    unsigned char        hdr[GG_ENTRY_MAX];

    if (gg_pack_find(&pack, &off, p, a, 0) != 0) {
        return 0;
    }
    f = &p->f[pack];

    for (i = 0; i < 2; i++) {
        h = &p->dh[i];
        if (h->type != 0 && h->pack == pack && h->off == off) {
            break;
        }
    }
    if (i == 2) {
        /* parsed into the older of the two */
        h = &p->dh[p->dh_next];
        if (gg_packfile_entry(&h->type, &h->size, &h->data_off, &h->base_off,
                              &base_oid, hdr, f, off)
            != 0)
        {
            h->type = 0;
            snprintf(err, errlen, "a pack entry is corrupt");
            return -1;
        }
        p->dh_next ^= 1;
        h->pack = pack;
        h->off = off;
        if (h->type == GG_OBJ_REF_DELTA) {
            memcpy(h->base_oid, base_oid, sizeof(h->base_oid));
        }
    }

    if (h->type == GG_OBJ_OFS_DELTA) {
        *bpack = pack;
        *boff = h->base_off;
    } else if (h->type != GG_OBJ_REF_DELTA
               || gg_pack_find(bpack, boff, p, h->base_oid, pack) != 0)
    {
        return 0;
    }
    if (delta == NULL) {
        /* where its base is, nothing inflated */
        return 1;
    }

    if (h->size > GG_BLOB_MAX + GG_BLOB_MAX / 64 + 64
        || h->size / GG_ZLIB_RATIO > f->pack_len - h->data_off)
    {
        snprintf(err, errlen, "a pack entry is corrupt");
        return -1;
    }
    buf = slot ? &p->dbuf2 : &p->dbuf;
    cap = slot ? &p->dcap2 : &p->dcap;
    if (*cap < h->size + 1) {
        d = realloc(*buf, (size_t) h->size + 1);
        if (d == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        *buf = d;
        *cap = (size_t) h->size + 1;
    }
    if (gg_inflate(p, f, h->data_off, *buf, (size_t) h->size) != 0) {
        snprintf(err, errlen, "a delta in a pack is corrupt");
        return -1;
    }

    *delta = *buf;
    *len = (size_t) h->size;
    return 1;
}


int
gg_pack_delta_of(const unsigned char **delta, size_t *len, gg_pack_t *p,
    const unsigned char *a, const unsigned char *b, char *err, size_t errlen)
{
    int       rc;
    uint32_t  bpack, pack;
    uint64_t  boff, off;

    rc = gg_pack_delta_base(NULL, NULL, &bpack, &boff, p, a, 0, err,
                            errlen);
    if (rc != 1) {
        return rc;
    }
    /* b where the delta's base is: the same entry (before inflating it) */
    if (gg_pack_find(&pack, &off, p, b, bpack) != 0 || pack != bpack
        || off != boff)
    {
        return 0;
    }
    return gg_pack_delta_base(delta, len, &bpack, &boff, p, a, 0, err,
                              errlen);
}
