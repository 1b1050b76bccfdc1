/*
 * git-gate's pack reader (gg_pack.h).  Formats, as git's
 * Documentation/gitformat-pack.txt describes them:
 *
 *   idx v2    "\377tOc", version 2, a fanout of 256 big-endian counts,
 *             the sorted oids, their CRCs, 4-byte offsets (the high bit
 *             set: an index into the 8-byte offsets that follow), the
 *             pack's checksum, the idx's checksum
 *   pack      "PACK", version 2 or 3, the object count, the entries, a
 *             checksum; an entry is a type and size varint, for an
 *             OFS_DELTA a negative offset to its base, for a REF_DELTA its
 *             base's oid, then zlib data inflating to exactly size bytes
 *   delta     the base's size and the result's (7-bit varints), then ops:
 *             0x80 | which offset and size bytes follow (a copy from the
 *             base; size 0 means 0x10000), 1-127 (an insert of that many
 *             literal bytes), 0 (invalid)
 *
 * Nothing here trusts the bytes: every offset is checked against its
 * mapping before it is read, every size against the header that declared
 * it.
 */

#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>

#include "gg_blob.h"
#include "gg_pack.h"


#define GG_IDX_HDR      (8 + 256 * 4)
#define GG_PACK_HDR     12
#define GG_PACK_TRAILER GG_PACK_OIDSZ
/* bytes past the end of every buffer the reader allocates: an insert
 * (at most 127 bytes) or a short copy is moved as one block of this */
#define GG_SLACK        128
/* zlib's deflate never does better than about 1032:1 */
#define GG_ZLIB_RATIO   1040


typedef struct {
    const unsigned char *idx;
    size_t              idx_len;
    const unsigned char *pack;
    size_t              pack_len;
    int                 mapped;     /* munmap on close */
    uint32_t            n;          /* objects */
    const unsigned char *oids;
    const unsigned char *off32;
    const unsigned char *off64;
    size_t              n64;
} gg_packfile_t;


struct gg_pack_s {
    gg_packfile_t      *f;
    size_t              n;
    size_t              cap;
    struct libdeflate_decompressor *dec;

    gg_pobj_t         **hash;
    size_t              hsize;      /* a power of 2 */
    gg_pobj_t          *head;       /* LRU: most recent */
    gg_pobj_t          *tail;
    uint64_t            used;
    uint64_t            budget;

    unsigned char      *scratch;    /* a delta, inflated, while applied */
    size_t              scap;
    unsigned char      *dbuf;       /* gg_pack_delta_base()'s, two slots */
    size_t              dcap;
    unsigned char      *dbuf2;
    size_t              dcap2;

    /* a chain being resolved: its deltas, nearest to the object first */
    uint32_t           *cpack;
    uint64_t           *coff;
};


static uint32_t
gg_be32(const unsigned char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}


static uint64_t
gg_be64(const unsigned char *p)
{
    return ((uint64_t) gg_be32(p) << 32) | gg_be32(p + 4);
}


/* entries */

int
gg_pack_entry(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    const unsigned char *pack, size_t pack_len, uint64_t off)
{
    int       shift;
    uint64_t  end, i, s, d;
    unsigned  c;

    if (pack_len < GG_PACK_HDR + GG_PACK_TRAILER) {
        return -1;
    }
    end = pack_len - GG_PACK_TRAILER;
    if (off < GG_PACK_HDR || off >= end) {
        return -1;
    }

    i = off;
    c = pack[i++];
    *type = (c >> 4) & 7;
    s = c & 15;
    shift = 4;
    while (c & 0x80) {
        if (i >= end || shift > 57) {
            return -1;
        }
        c = pack[i++];
        s |= (uint64_t) (c & 0x7f) << shift;
        shift += 7;
    }
    *size = s;
    *base_off = 0;
    *base_oid = NULL;

    switch (*type) {

    case GG_OBJ_COMMIT:
    case GG_OBJ_TREE:
    case GG_OBJ_BLOB:
    case GG_OBJ_TAG:
        break;

    case GG_OBJ_OFS_DELTA:
        /* big-endian 7-bit groups, each continuation adding one */
        if (i >= end) {
            return -1;
        }
        c = pack[i++];
        d = c & 0x7f;
        while (c & 0x80) {
            if (i >= end || d >= (UINT64_C(1) << 56)) {
                return -1;
            }
            c = pack[i++];
            d = ((d + 1) << 7) | (c & 0x7f);
        }
        /* strictly before this entry: an ofs-delta chain cannot loop */
        if (d == 0 || d > off - GG_PACK_HDR) {
            return -1;
        }
        *base_off = off - d;
        break;

    case GG_OBJ_REF_DELTA:
        if (end - i < GG_PACK_OIDSZ) {
            return -1;
        }
        *base_oid = pack + i;
        i += GG_PACK_OIDSZ;
        break;

    default:
        return -1;
    }

    if (i >= end) {
        return -1;
    }
    *data_off = i;
    return 0;
}


/* deltas */

static int
gg_varint(uint64_t *out, const unsigned char **pp, const unsigned char *end)
{
    int                   shift;
    uint64_t              v;
    unsigned              c;
    const unsigned char  *p;

    p = *pp;
    v = 0;
    shift = 0;
    do {
        if (p == end || shift > 63 - 7) {
            return -1;
        }
        c = *p++;
        v |= (uint64_t) (c & 0x7f) << shift;
        shift += 7;
    } while (c & 0x80);

    *out = v;
    *pp = p;
    return 0;
}


int
gg_delta_init(gg_delta_iter_t *it, const unsigned char *delta, size_t len)
{
    it->p = delta;
    it->end = delta + len;
    it->done = 0;
    if (gg_varint(&it->src_size, &it->p, it->end) != 0
        || gg_varint(&it->dst_size, &it->p, it->end) != 0)
    {
        return -1;
    }
    return 0;
}


int
gg_delta_next(gg_delta_iter_t *it, gg_delta_op_t *op)
{
    int       b;
    unsigned  c;
    uint64_t  off, size;

    if (it->p == it->end) {
        return it->done == it->dst_size ? 0 : -1;
    }

    c = *it->p++;

    if (c & 0x80) {
        off = 0;
        size = 0;
        for (b = 0; b < 4; b++) {
            if (c & (1u << b)) {
                if (it->p == it->end) {
                    return -1;
                }
                off |= (uint64_t) *it->p++ << (8 * b);
            }
        }
        for (b = 0; b < 3; b++) {
            if (c & (0x10u << b)) {
                if (it->p == it->end) {
                    return -1;
                }
                size |= (uint64_t) *it->p++ << (8 * b);
            }
        }
        if (size == 0) {
            size = 0x10000;
        }
        if (off > it->src_size || size > it->src_size - off
            || size > it->dst_size - it->done)
        {
            return -1;
        }
        op->copy = 1;
        op->off = off;
        op->len = (size_t) size;
        op->data = NULL;

    } else if (c != 0) {
        if ((size_t) (it->end - it->p) < c
            || c > it->dst_size - it->done)
        {
            return -1;
        }
        op->copy = 0;
        op->off = 0;
        op->len = c;
        op->data = it->p;
        it->p += c;

    } else {
        /* reserved: git refuses it too */
        return -1;
    }

    it->done += op->len;
    return 1;
}


int
gg_delta_apply(unsigned char *dst, size_t dst_len, const unsigned char *base,
    size_t base_len, const unsigned char *delta, size_t delta_len)
{
    int              rc;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    if (gg_delta_init(&it, delta, delta_len) != 0
        || it.src_size != base_len || it.dst_size != dst_len)
    {
        return -1;
    }

    /* every op checked against both sizes: dst + done stays in dst */
    while ((rc = gg_delta_next(&it, &op)) == 1) {
        memcpy(dst + (it.done - op.len),
               op.copy ? base + op.off : op.data, op.len);
    }
    return rc;
}


/*
 * gg_delta_apply() for the reader's own buffers, which all have
 * GG_SLACK bytes past their end (the object's, the base's, the inflated
 * delta's): an op of up to GG_SLACK bytes is copied as a fixed-size block
 * (a few vector moves, where most ops of a delta are short), its excess
 * overwritten by the next op or landing in the slack.  The same checks as
 * gg_delta_next(), op by op.
 */
static int
gg_delta_apply_slack(unsigned char *dst, size_t dst_len,
    const unsigned char *base, size_t base_len,
    const unsigned char *delta, size_t delta_len)
{
    int                   b;
    size_t                done;
    unsigned              c;
    uint64_t              off, size;
    gg_delta_iter_t       it;
    const unsigned char  *p, *end;

    if (gg_delta_init(&it, delta, delta_len) != 0
        || it.src_size != base_len || it.dst_size != dst_len)
    {
        return -1;
    }
    p = it.p;
    end = it.end;
    done = 0;

    while (p < end) {
        c = *p++;

        if (c & 0x80) {
            off = 0;
            size = 0;
            for (b = 0; b < 4; b++) {
                if (c & (1u << b)) {
                    if (p == end) {
                        return -1;
                    }
                    off |= (uint64_t) *p++ << (8 * b);
                }
            }
            for (b = 0; b < 3; b++) {
                if (c & (0x10u << b)) {
                    if (p == end) {
                        return -1;
                    }
                    size |= (uint64_t) *p++ << (8 * b);
                }
            }
            if (size == 0) {
                size = 0x10000;
            }
            if (off > base_len || size > base_len - off
                || size > dst_len - done)
            {
                return -1;
            }
            if (size <= GG_SLACK) {
                memcpy(dst + done, base + off, GG_SLACK);
            } else {
                memcpy(dst + done, base + off, (size_t) size);
            }
            done += (size_t) size;

        } else if (c != 0) {
            if ((size_t) (end - p) < c || c > dst_len - done) {
                return -1;
            }
            memcpy(dst + done, p, GG_SLACK);
            p += c;
            done += c;

        } else {
            return -1;
        }
    }

    return done == dst_len ? 0 : -1;
}


/* idx files */

/* 0: usable; -1: not an idx v2 of this pack (left out) */
static int
gg_packfile_check(gg_packfile_t *f)
{
    int       i;
    size_t    min, rest;
    uint32_t  prev, v;

    if (f->idx_len < GG_IDX_HDR + 2 * GG_PACK_OIDSZ
        || memcmp(f->idx, "\377tOc", 4) != 0 || gg_be32(f->idx + 4) != 2)
    {
        return -1;
    }

    prev = 0;
    for (i = 0; i < 256; i++) {
        v = gg_be32(f->idx + 8 + 4 * i);
        if (v < prev) {
            return -1;
        }
        prev = v;
    }
    f->n = prev;

    /* oids, crcs, offsets, two checksums; then 8-byte offsets */
    min = GG_IDX_HDR + (size_t) f->n * (GG_PACK_OIDSZ + 8)
          + 2 * GG_PACK_OIDSZ;
    if (f->idx_len < min || (f->idx_len - min) % 8 != 0) {
        return -1;
    }
    rest = f->idx_len - min;

    f->oids = f->idx + GG_IDX_HDR;
    f->off32 = f->oids + (size_t) f->n * (GG_PACK_OIDSZ + 4);
    f->off64 = f->off32 + (size_t) f->n * 4;
    f->n64 = rest / 8;

    if (f->pack_len < GG_PACK_HDR + GG_PACK_TRAILER
        || memcmp(f->pack, "PACK", 4) != 0
        || (gg_be32(f->pack + 4) != 2 && gg_be32(f->pack + 4) != 3)
        || gg_be32(f->pack + 8) != f->n
        /* the idx names its pack by the pack's checksum */
        || memcmp(f->idx + f->idx_len - 2 * GG_PACK_OIDSZ,
                  f->pack + f->pack_len - GG_PACK_TRAILER, GG_PACK_OIDSZ)
           != 0)
    {
        return -1;
    }
    return 0;
}


/* the offset of oid in f: 0, or -1 when not there or its offset is bad */
static int
gg_packfile_find(uint64_t *off, const gg_packfile_t *f,
    const unsigned char *oid)
{
    int       c;
    uint32_t  lo, hi, mid, o;
    uint64_t  v;

    lo = oid[0] ? gg_be32(f->idx + 8 + 4 * (oid[0] - 1)) : 0;
    hi = gg_be32(f->idx + 8 + 4 * oid[0]);

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        c = memcmp(f->oids + (size_t) mid * GG_PACK_OIDSZ, oid,
                   GG_PACK_OIDSZ);
        if (c == 0) {
            o = gg_be32(f->off32 + (size_t) mid * 4);
            if (o & 0x80000000u) {
                o &= 0x7fffffffu;
                if (o >= f->n64) {
                    return -1;
                }
                v = gg_be64(f->off64 + (size_t) o * 8);
            } else {
                v = o;
            }
            if (v < GG_PACK_HDR || v >= f->pack_len - GG_PACK_TRAILER) {
                return -1;
            }
            *off = v;
            return 0;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}


/* the first open pack holding oid, the pack "prefer" first */
static int
gg_pack_find(uint32_t *pack, uint64_t *off, const gg_pack_t *p,
    const unsigned char *oid, uint32_t prefer)
{
    size_t  i;

    if (prefer < p->n && gg_packfile_find(off, &p->f[prefer], oid) == 0) {
        *pack = prefer;
        return 0;
    }
    for (i = 0; i < p->n; i++) {
        if (i != prefer && gg_packfile_find(off, &p->f[i], oid) == 0) {
            *pack = (uint32_t) i;
            return 0;
        }
    }
    return -1;
}


/* opening */

static int
gg_pack_alloc(gg_pack_t **out, uint64_t cache, char *err, size_t errlen)
{
    gg_pack_t  *p;

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        goto oom;
    }
    p->budget = cache ? cache : GG_PACK_CACHE_DEFAULT;
    p->hsize = 4096;
    p->hash = calloc(p->hsize, sizeof(gg_pobj_t *));
    p->cpack = malloc(GG_PACK_DEPTH * sizeof(uint32_t));
    p->coff = malloc(GG_PACK_DEPTH * sizeof(uint64_t));
    p->dec = libdeflate_alloc_decompressor();
    if (p->hash == NULL || p->cpack == NULL || p->coff == NULL
        || p->dec == NULL)
    {
        gg_pack_close(p);
        goto oom;
    }
    *out = p;
    return 0;

oom:

    snprintf(err, errlen, "out of memory");
    return -1;
}


static int
gg_pack_add(gg_pack_t *p, const gg_packfile_t *f)
{
    size_t          cap;
    gg_packfile_t  *n;

    if (p->n == p->cap) {
        cap = p->cap ? 2 * p->cap : 8;
        n = realloc(p->f, cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        p->f = n;
        p->cap = cap;
    }
    p->f[p->n++] = *f;
    return 0;
}


static int
gg_map(const unsigned char **out, size_t *len, const char *path)
{
    int          fd;
    void        *m;
    struct stat  st;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return -1;
    }
    m = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        return -1;
    }
    *out = m;
    *len = (size_t) st.st_size;
    return 0;
}


/* every <name>.idx with its <name>.pack in dir that is ours */
static int
gg_pack_dir(gg_pack_t *p, const char *dir)
{
    int             rc, count;
    char            path[4096];
    size_t          len;
    DIR            *d;
    struct dirent  *e;
    gg_packfile_t   f;

    d = opendir(dir);
    if (d == NULL) {
        return 0;
    }

    rc = 0;
    count = 0;
    while ((e = readdir(d)) != NULL && count < GG_PACK_MAX_PACKS) {
        len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".idx") != 0
            || (size_t) snprintf(path, sizeof(path), "%s/%s", dir, e->d_name)
               >= sizeof(path))
        {
            continue;
        }

        memset(&f, 0, sizeof(f));
        if (gg_map(&f.idx, &f.idx_len, path) != 0) {
            continue;
        }
        memcpy(path + strlen(path) - 4, ".pack", 6);
        if (strlen(path) >= sizeof(path) - 1
            || gg_map(&f.pack, &f.pack_len, path) != 0)
        {
            munmap((void *) f.idx, f.idx_len);
            continue;
        }
        f.mapped = 1;

        if (gg_packfile_check(&f) != 0) {
            munmap((void *) f.idx, f.idx_len);
            munmap((void *) f.pack, f.pack_len);
            continue;
        }
        if (gg_pack_add(p, &f) != 0) {
            munmap((void *) f.idx, f.idx_len);
            munmap((void *) f.pack, f.pack_len);
            rc = -1;
            break;
        }
        count++;
    }

    closedir(d);
    return rc;
}


int
gg_pack_open(gg_pack_t **out, const char *repo, const char *quarantine,
    uint64_t cache, char *err, size_t errlen)
{
    char        dir[4096];
    gg_pack_t  *p;

    if (gg_pack_alloc(&p, cache, err, errlen) != 0) {
        return -1;
    }

    /* the pushed objects first, as git's hook sees them */
    if (quarantine != NULL && *quarantine != '\0'
        && (size_t) snprintf(dir, sizeof(dir), "%s/pack", quarantine)
           < sizeof(dir)
        && gg_pack_dir(p, dir) != 0)
    {
        goto oom;
    }
    if ((size_t) snprintf(dir, sizeof(dir), "%s/objects/pack", repo)
        < sizeof(dir)
        && gg_pack_dir(p, dir) != 0)
    {
        goto oom;
    }

    *out = p;
    return 0;

oom:

    gg_pack_close(p);
    snprintf(err, errlen, "out of memory");
    return -1;
}


int
gg_pack_open_mem(gg_pack_t **out, const unsigned char *idx, size_t idx_len,
    const unsigned char *pack, size_t pack_len, uint64_t cache, char *err,
    size_t errlen)
{
    gg_pack_t      *p;
    gg_packfile_t   f;

    if (gg_pack_alloc(&p, cache, err, errlen) != 0) {
        return -1;
    }

    memset(&f, 0, sizeof(f));
    f.idx = idx;
    f.idx_len = idx_len;
    f.pack = pack;
    f.pack_len = pack_len;
    if (gg_packfile_check(&f) == 0 && gg_pack_add(p, &f) != 0) {
        gg_pack_close(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    *out = p;
    return 0;
}


size_t
gg_pack_count(const gg_pack_t *p)
{
    return p->n;
}


/* the cache */

static void gg_lru_unlink(gg_pack_t *p, gg_pobj_t *o);
static void gg_lru_front(gg_pack_t *p, gg_pobj_t *o);

static size_t
gg_hash(const gg_pack_t *p, uint32_t pack, uint64_t off)
{
    uint64_t  h;

    h = (off ^ ((uint64_t) pack << 48)) * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t) (h >> 32) & (p->hsize - 1);
}


static gg_pobj_t *
gg_cache_find(gg_pack_t *p, uint32_t pack, uint64_t off)
{
    gg_pobj_t  *o;

    for (o = p->hash[gg_hash(p, pack, off)]; o != NULL; o = o->hnext) {
        if (o->pack == pack && o->off == off) {
            /* used again: the most recent (a base many deltas share,
             * the newest version of a file in a push, stays) */
            if (p->head != o) {
                gg_lru_unlink(p, o);
                gg_lru_front(p, o);
            }
            return o;
        }
    }
    return NULL;
}


static void
gg_lru_unlink(gg_pack_t *p, gg_pobj_t *o)
{
    if (o->prev) {
        o->prev->next = o->next;
    } else {
        p->head = o->next;
    }
    if (o->next) {
        o->next->prev = o->prev;
    } else {
        p->tail = o->prev;
    }
    o->prev = NULL;
    o->next = NULL;
}


static void
gg_lru_front(gg_pack_t *p, gg_pobj_t *o)
{
    o->prev = NULL;
    o->next = p->head;
    if (p->head) {
        p->head->prev = o;
    } else {
        p->tail = o;
    }
    p->head = o;
}


static void
gg_cache_drop(gg_pack_t *p, gg_pobj_t *o)
{
    gg_pobj_t  **pp;

    for (pp = &p->hash[gg_hash(p, o->pack, o->off)]; *pp != NULL;
         pp = &(*pp)->hnext)
    {
        if (*pp == o) {
            *pp = o->hnext;
            break;
        }
    }
    gg_lru_unlink(p, o);
    p->used -= o->len;
    free(o->data);
    free(o);
}


/* the least recently used objects out until the cache fits its budget;
 * held ones stay */
static void
gg_cache_trim(gg_pack_t *p)
{
    gg_pobj_t  *o, *prev;

    for (o = p->tail; o != NULL && p->used > p->budget; o = prev) {
        prev = o->prev;
        if (o->refs == 0) {
            gg_cache_drop(p, o);
        }
    }
}


/* a new object, held once, data taken over */
static gg_pobj_t *
gg_cache_add(gg_pack_t *p, uint32_t pack, uint64_t off, int type,
    unsigned char *data, size_t len)
{
    size_t      h;
    gg_pobj_t  *o;

    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return NULL;
    }
    o->pack = pack;
    o->off = off;
    o->type = type;
    o->data = data;
    o->len = len;
    o->refs = 1;

    h = gg_hash(p, pack, off);
    o->hnext = p->hash[h];
    p->hash[h] = o;
    gg_lru_front(p, o);
    p->used += len;
    gg_cache_trim(p);
    return o;
}


void
gg_pack_put(gg_pack_t *p, gg_pobj_t *o)
{
    if (o == NULL) {
        return;
    }
    if (o->refs > 0) {
        o->refs--;
    }
    if (o->refs == 0) {
        gg_cache_trim(p);
    }
}


void
gg_pack_close(gg_pack_t *p)
{
    size_t      i;
    gg_pobj_t  *o, *next;

    if (p == NULL) {
        return;
    }
    for (o = p->head; o != NULL; o = next) {
        next = o->next;
        free(o->data);
        free(o);
    }
    for (i = 0; i < p->n; i++) {
        if (p->f[i].mapped) {
            munmap((void *) p->f[i].idx, p->f[i].idx_len);
            munmap((void *) p->f[i].pack, p->f[i].pack_len);
        }
    }
    if (p->dec) {
        libdeflate_free_decompressor(p->dec);
    }
    free(p->f);
    free(p->hash);
    free(p->scratch);
    free(p->dbuf);
    free(p->dbuf2);
    free(p->cpack);
    free(p->coff);
    free(p);
}


/* reading */

/*
 * The zlib data at data_off of f inflated into out, exactly size bytes
 * (its header's); libdeflate stops at the stream's end, wherever the next
 * entry begins.
 */
static int
gg_inflate(gg_pack_t *p, const gg_packfile_t *f, uint64_t data_off,
    unsigned char *out, size_t size)
{
    size_t                       in_len, got_in, got;
    enum libdeflate_result       r;

    in_len = f->pack_len - GG_PACK_TRAILER - data_off;

    /* nothing inflates beyond about 1032 times its size: no allocation
     * bigger than the pack can fill was made (checked by the callers) */
    r = libdeflate_zlib_decompress_ex(p->dec, f->pack + data_off, in_len,
                                      out, size, &got_in, &got);
    if (r != LIBDEFLATE_SUCCESS || got != size) {
        return -1;
    }
    return 0;
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
        if (gg_pack_entry(&type, &size, &data_off, &base_off, &base_oid,
                          f->pack, f->pack_len, co)
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
            d = malloc((size_t) size + GG_SLACK);
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

        if (gg_pack_entry(&type, &dsize, &data_off, &base_off, &base_oid,
                          f->pack, f->pack_len, co)
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
        d = malloc((size_t) size + GG_SLACK);
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
    int                   type;
    size_t               *cap;
    uint32_t              pack;
    uint64_t              off, size, data_off, base_off;
    unsigned char        *d, **buf;
    const gg_packfile_t  *f;
    const unsigned char  *base_oid;

    if (gg_pack_find(&pack, &off, p, a, 0) != 0) {
        return 0;
    }
    f = &p->f[pack];
    if (gg_pack_entry(&type, &size, &data_off, &base_off, &base_oid,
                      f->pack, f->pack_len, off)
        != 0)
    {
        snprintf(err, errlen, "a pack entry is corrupt");
        return -1;
    }

    if (type == GG_OBJ_OFS_DELTA) {
        *bpack = pack;
        *boff = base_off;
    } else if (type != GG_OBJ_REF_DELTA
               || gg_pack_find(bpack, boff, p, base_oid, pack) != 0)
    {
        return 0;
    }

    if (size > GG_BLOB_MAX + GG_BLOB_MAX / 64 + 64
        || size / GG_ZLIB_RATIO > f->pack_len - data_off)
    {
        snprintf(err, errlen, "a pack entry is corrupt");
        return -1;
    }
    buf = slot ? &p->dbuf2 : &p->dbuf;
    cap = slot ? &p->dcap2 : &p->dcap;
    if (*cap < size + 1) {
        d = realloc(*buf, (size_t) size + 1);
        if (d == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        *buf = d;
        *cap = (size_t) size + 1;
    }
    if (gg_inflate(p, f, data_off, *buf, (size_t) size) != 0) {
        snprintf(err, errlen, "a delta in a pack is corrupt");
        return -1;
    }

    *delta = *buf;
    *len = (size_t) size;
    return 1;
}


int
gg_pack_delta_of(const unsigned char **delta, size_t *len, gg_pack_t *p,
    const unsigned char *a, const unsigned char *b, char *err, size_t errlen)
{
    int       rc;
    uint32_t  bpack, pack;
    uint64_t  boff, off;

    rc = gg_pack_delta_base(delta, len, &bpack, &boff, p, a, 0, err,
                            errlen);
    if (rc != 1) {
        return rc;
    }
    /* b where the delta's base is: the same entry */
    if (gg_pack_find(&pack, &off, p, b, bpack) != 0 || pack != bpack
        || off != boff)
    {
        return 0;
    }
    return 1;
}
