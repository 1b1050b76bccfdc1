/*
 * libFuzzer target for git-gate's pack reader (gitgate-helper/gg_pack.c).
 * The first byte picks what the rest is:
 *
 *   even   a delta and its base: two bytes of base length, the base, the
 *          delta; applied (when it declares at most 1 MB) and walked op by
 *          op: every copy inside the base, the ops making exactly the
 *          declared size, the two agreeing
 *   odd    a pack's entries: a count n (1 to 8), n two-byte offsets into
 *          the entries, then the entries; a "PACK" header and a trailer
 *          around them and an idx v2 naming n made-up oids (oid i starts
 *          with byte 16 * i, the rest 0) at those offsets; every oid read,
 *          and each pair asked for a delta between them: an object read
 *          is at most GG_BLOB_MAX and its bytes readable, every error an
 *          error (never a crash), a tiny cache (the second byte) and the
 *          default one giving the same bytes, the first reading the pack
 *          through memory, the second from a file with pread() as a big
 *          quarantine's is (gg_inflate()); and every oid as extents
 *          (gg_pack_extents(), nothing built): built exactly when it was
 *          read, its bytes through the extents the read's, every extent
 *          inside its source; and every blob as stored blocks
 *          (gg_pack_stored(), gg_stored_read()), through memory and
 *          from the file: whatever range reads without an error the
 *          read's bytes
 */

#define _GNU_SOURCE                 /* memfd_create */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gg_blob.h"
#include "gg_pack.h"
#include "fuzz.h"


static void
put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}


static void
fuzz_delta(const uint8_t *data, size_t size)
{
    int              rc, rc2;
    size_t           blen;
    uint64_t         done;
    unsigned char   *base, *dst;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    if (size < 2) {
        return;
    }
    blen = ((size_t) data[0] << 8 | data[1]) % (size - 1);
    data += 2;
    size -= 2;

    /* exact-size copies: ASan sees a read past either */
    base = malloc(blen ? blen : 1);
    CHECK(base != NULL);
    memcpy(base, data, blen);
    data += blen;
    size -= blen;

    if (gg_delta_init(&it, data, size) != 0) {
        free(base);
        return;
    }

    done = 0;
    while ((rc = gg_delta_next(&it, &op)) == 1) {
        CHECK(op.len > 0 && op.len <= it.dst_size);
        if (op.copy) {
            CHECK(op.off + op.len <= it.src_size);
        } else {
            CHECK(op.data >= data && op.data + op.len <= data + size);
        }
        done += op.len;
        CHECK(done == it.done && done <= it.dst_size);
    }
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(done == it.dst_size);
    }

    if (it.dst_size <= (1 << 20)) {
        dst = malloc(it.dst_size ? it.dst_size : 1);
        CHECK(dst != NULL);
        rc2 = gg_delta_apply(dst, (size_t) it.dst_size, base, blen, data,
                             size);
        /* the ops are good exactly when applying them works, if the
         * declared base size is this base's */
        if (it.src_size == blen) {
            CHECK(rc2 == rc);
        } else {
            CHECK(rc2 == -1);
        }
        free(dst);
    }
    free(base);
}


/* oid as extents on pk against the read (rc, o) */
static void
fuzz_extents(gg_pack_t *pk, const unsigned char *oid, int rc,
    const gg_pobj_t *o, size_t max)
{
    int            xrc;
    char           err[256];
    size_t         i;
    uint64_t       at;
    gg_extents_t   x;

    memset(&x, 0, sizeof(x));
    xrc = gg_pack_extents(&x, pk, oid, max, err, sizeof(err));
    CHECK(xrc >= -1 && xrc <= 1);
    if (rc != 0) {
        CHECK(xrc != 0);
    }
    if (xrc == 0) {
        CHECK(rc == 0 && o->type == GG_OBJ_BLOB);
        at = 0;
        for (i = 0; i < x.n; i++) {
            CHECK(x.e[i].pos == at && x.e[i].len > 0);
            CHECK(x.e[i].soff + x.e[i].len <= x.e[i].src->len);
            CHECK(x.e[i].len <= o->len - at);
            CHECK(memcmp(x.e[i].p, o->data + at, x.e[i].len) == 0);
            at += x.e[i].len;
        }
        CHECK(at == o->len && x.len == o->len);
        CHECK(max == 0 || x.n <= max);
    }
    gg_extents_release(pk, &x);
    gg_extents_free(&x);
}



/* oid as stored blocks: each range read, forwards and backwards, the
 * bytes o has (o: oid read, or NULL: not readable, any size tried) */
static void
fuzz_stored(gg_pack_t *pk, const unsigned char *oid, const gg_pobj_t *o)
{
    int            rc, k;
    uint64_t       size, a, b;
    gg_stored_t    st;
    unsigned char  buf[512];

    memset(&st, 0, sizeof(st));
    size = o != NULL ? o->len : 64;
    rc = gg_pack_stored(&st, pk, oid, size);
    CHECK(rc >= -1 && rc <= 1);
    if (rc == 1) {
        for (k = 7; k >= 0; k--) {
            a = size * (uint64_t) k / 8;
            b = a + (size - a < sizeof(buf) ? size - a : sizeof(buf));
            rc = gg_stored_read(&st, a, b - a, buf);
            CHECK(rc == 0 || rc == -1);
            if (rc == 0 && o != NULL) {
                CHECK(memcmp(buf, o->data + a, (size_t) (b - a)) == 0);
            }
        }
        CHECK(gg_stored_read(&st, size, 1, buf) == -1);
    }
    gg_stored_free(&st);
}


static void
fuzz_pack(const uint8_t *data, size_t size)
{
    int             rc, rc2, i, j, n, fd;
    char            err[256];
    size_t          plen, ilen, k, dlen;
    uint32_t        off[8];
    unsigned char  *pack, *idx, oid[8][GG_PACK_OIDSZ], *p;
    gg_pack_t      *pk, *tiny;
    gg_pobj_t      *o, *o2;
    uint64_t        cache;
    const unsigned char *delta;

    if (size < 4) {
        return;
    }
    n = 1 + data[0] % 8;
    cache = 1 + data[1] * 64;
    data += 2;
    size -= 2;
    if (size < (size_t) n * 2 + 1) {
        return;
    }

    plen = 12 + (size - (size_t) n * 2) + GG_PACK_OIDSZ;
    for (i = 0; i < n; i++) {
        /* offsets inside the entries, in order, distinct */
        off[i] = 12 + ((uint32_t) data[2 * i] << 8 | data[2 * i + 1])
                      % (uint32_t) (size - (size_t) n * 2);
        for (j = 0; j < i; j++) {
            if (off[j] == off[i]) {
                return;
            }
        }
    }

    pack = malloc(plen);
    CHECK(pack != NULL);
    memcpy(pack, "PACK", 4);
    put32(pack + 4, 2);
    put32(pack + 8, (uint32_t) n);
    memcpy(pack + 12, data + n * 2, size - (size_t) n * 2);
    memset(pack + plen - GG_PACK_OIDSZ, 0x5a, GG_PACK_OIDSZ);

    ilen = 8 + 1024 + (size_t) n * (GG_PACK_OIDSZ + 8) + 2 * GG_PACK_OIDSZ;
    idx = calloc(1, ilen);
    CHECK(idx != NULL);
    memcpy(idx, "\377tOc", 4);
    put32(idx + 4, 2);
    for (k = 0; k < 256; k++) {
        uint32_t  c = 0;

        for (i = 0; i < n; i++) {
            c += (uint32_t) (16 * i) <= k;
        }
        put32(idx + 8 + 4 * k, c);
    }
    p = idx + 8 + 1024;
    for (i = 0; i < n; i++) {
        memset(oid[i], 0, GG_PACK_OIDSZ);
        oid[i][0] = (unsigned char) (16 * i);
        memcpy(p + (size_t) i * GG_PACK_OIDSZ, oid[i], GG_PACK_OIDSZ);
    }
    p += (size_t) n * (GG_PACK_OIDSZ + 4);
    for (i = 0; i < n; i++) {
        put32(p + 4 * i, off[i]);
    }
    memset(idx + ilen - 2 * GG_PACK_OIDSZ, 0x5a, GG_PACK_OIDSZ);

    /* the second reader's entries from a file of the same bytes */
    fd = memfd_create("gg_pack_fuzz", MFD_CLOEXEC);
    CHECK(fd >= 0 && write(fd, pack, plen) == (ssize_t) plen);
    CHECK(gg_pack_open_mem(&pk, idx, ilen, pack, plen, -1, 0, err,
                           sizeof(err))
          == 0);
    /* (its pack bytes not given: every read of it must be the file's) */
    CHECK(gg_pack_open_mem(&tiny, idx, ilen, NULL, plen, fd, cache, err,
                           sizeof(err))
          == 0);
    CHECK(gg_pack_count(pk) == 1);

    for (i = 0; i < n; i++) {
        rc = gg_pack_get(&o, pk, oid[i], err, sizeof(err));
        CHECK(rc >= -2 && rc <= 1);
        rc2 = gg_pack_get(&o2, tiny, oid[i], err, sizeof(err));
        CHECK(rc2 == rc);
        if (rc == 0) {
            CHECK(o->len <= GG_BLOB_MAX);
            CHECK(o->type >= 1 && o->type <= 4);
            CHECK(o->data[o->len] == '\0');
            CHECK(o2->len == o->len && o2->type == o->type
                  && memcmp(o2->data, o->data, o->len) == 0);
            fuzz_extents(tiny, oid[i], rc, o, 0);
            fuzz_extents(pk, oid[i], rc, o, 2);
            fuzz_stored(pk, oid[i], o);
            fuzz_stored(tiny, oid[i], o);
            gg_pack_put(pk, o);
            gg_pack_put(tiny, o2);
        } else {
            fuzz_extents(tiny, oid[i], rc, NULL, 0);
            fuzz_stored(pk, oid[i], NULL);
            fuzz_stored(tiny, oid[i], NULL);
        }
        for (j = 0; j < n; j++) {
            rc = gg_pack_delta_of(&delta, &dlen, pk, oid[i], oid[j], err,
                                  sizeof(err));
            CHECK(rc >= -1 && rc <= 1);
            if (rc == 1 && dlen > 0) {
                /* readable to its end (ASan) */
                CHECK(delta[dlen - 1] == delta[dlen - 1] || dlen == 0);
            }
        }
    }

    gg_pack_close(tiny);
    gg_pack_close(pk);
    close(fd);
    free(idx);
    free(pack);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    if (data[0] % 2 == 0) {
        fuzz_delta(data + 1, size - 1);
    } else {
        fuzz_pack(data + 1, size - 1);
    }
    return 0;
}
