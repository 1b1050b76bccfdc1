/*
 * git-gate's pack reader (gg_pack.h): the packs and their idx files,
 * opened and searched, the cache of resolved objects.  An entry's header
 * is gg_pack_entry.c's, the delta format gg_pack_delta.c's, reading an
 * object (a delta chain resolved) gg_pack_read.c's.  Formats, as git's
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

#include <isa-l/igzip_lib.h>

#include "gg_blob.h"
#include "gg_pack_int.h"


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


/* idx files */

/* 0: usable; -1: not an idx v2 of this pack (left out) */
static int
gg_packfile_check(gg_packfile_t *f)
{
    int                   i;
    size_t                min, rest;
    uint32_t              prev, v;
    unsigned char         hb[GG_PACK_HDR], tb[GG_PACK_TRAILER];
    const unsigned char  *h, *t;

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

    if (f->pack_len < GG_PACK_HDR + GG_PACK_TRAILER) {
        return -1;
    }
    /* a pack with its file open: its first and last bytes read from it
     * (it has no mapping: gg_packfile_entry()) */
    if (f->fd < 0) {
        h = f->pack;
        t = f->pack + f->pack_len - GG_PACK_TRAILER;
    } else {
        if (pread(f->fd, hb, GG_PACK_HDR, 0) != GG_PACK_HDR
            || pread(f->fd, tb, GG_PACK_TRAILER,
                     (off_t) (f->pack_len - GG_PACK_TRAILER))
               != GG_PACK_TRAILER)
        {
            return -1;
        }
        h = hb;
        t = tb;
    }
    if (memcmp(h, "PACK", 4) != 0
        || (gg_be32(h + 4) != 2 && gg_be32(h + 4) != 3)
        || gg_be32(h + 8) != f->n
        /* the idx names its pack by the pack's checksum */
        || memcmp(f->idx + f->idx_len - 2 * GG_PACK_OIDSZ, t, GG_PACK_OIDSZ)
           != 0)
    {
        return -1;
    }
    return 0;
}


int
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
int
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


int
gg_pack_find_whole(uint32_t *pack, uint64_t *off, const gg_pack_t *p,
    const unsigned char *oid)
{
    int                   type;
    size_t                i;
    uint64_t              o, size, data_off, base_off;
    const unsigned char  *base_oid;
    unsigned char        hdr[GG_ENTRY_MAX];

    for (i = 0; i < p->n; i++) {
        if (gg_packfile_find(&o, &p->f[i], oid) == 0
            && gg_packfile_entry(&type, &size, &data_off, &base_off,
                                 &base_oid, hdr, &p->f[i], o) == 0
            && type != GG_OBJ_OFS_DELTA && type != GG_OBJ_REF_DELTA)
        {
            *pack = (uint32_t) i;
            *off = o;
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
    p->wbudget = p->budget / 4 < GG_WHOLE_BUDGET ? p->budget / 4
                                                 : GG_WHOLE_BUDGET;
    p->hsize = 4096;
    p->hash = calloc(p->hsize, sizeof(gg_pobj_t *));
    p->cpack = malloc(GG_PACK_DEPTH * sizeof(uint32_t));
    p->coff = malloc(GG_PACK_DEPTH * sizeof(uint64_t));
    p->dec = malloc(sizeof(struct inflate_state));
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


/*
 * path read: mapped read-only, or, with copy and up to GG_PACK_COPY bytes
 * (a quarantine's idx and pack, read mostly whole by the scan), read into
 * memory of the process's (malloc(), *heap set: a warm child's next
 * pushes get pages it already touched back).  A VM's first touch of
 * a file mapping's page costs 7-14 us however its page table was filled
 * (MAP_POPULATE too), 3.5 ms a MB; pread() copies a MB in about 0.15 ms.
 * With copy and keep, a bigger file is kept open (*keep, else -1) and
 * not mapped (*out NULL): what the scan reads of it is read with pread()
 * (GG_PREAD_CHUNK); only a stored blob over GG_STORED_PREAD maps it
 * (gg_packfile_map()).  Its mmap() and munmap() cost 50-60 us a push,
 * the mapping untouched.
 */
static int
gg_map(const unsigned char **out, size_t *len, const char *path,
    struct stat *st, int copy, int *heap, int *keep)
{
    int             fd;
    void           *m;
    size_t          size, got;
    ssize_t         n;
    unsigned char  *d;

    *heap = 0;
    if (keep != NULL) {
        *keep = -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size <= 0) {
        close(fd);
        return -1;
    }
    size = (size_t) st->st_size;

    if (copy && (uint64_t) st->st_size <= GG_PACK_COPY) {
        d = malloc(size);
        if (d == NULL) {
            close(fd);
            return -1;
        }
        for (got = 0; got < size; got += (size_t) n) {
            n = pread(fd, d + got, size - got, (off_t) got);
            if (n <= 0) {
                free(d);
                close(fd);
                return -1;
            }
        }
        close(fd);
        *out = d;
        *len = size;
        *heap = 1;
        return 0;
    }

    if (copy && keep != NULL) {
        /* not mapped: read with pread() alone (gg_packfile_map() maps it
         * for a stored blob over GG_STORED_PREAD, its one use) */
        *keep = fd;
        *out = NULL;
        *len = size;
        return 0;
    }

    m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        return -1;
    }
    *out = m;
    *len = size;
    return 0;
}


int
gg_packfile_map(gg_packfile_t *f)
{
    void  *m;

    if (f->pack != NULL) {
        return 0;
    }
    if (f->fd < 0) {
        return -1;
    }
    m = mmap(NULL, f->pack_len, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (m == MAP_FAILED) {
        return -1;
    }
    f->pack = m;
    f->heap |= 4;
    return 0;
}


/* what gg_map() gave back: freed (heap) or unmapped */
static void
gg_unmap_one(const unsigned char *d, size_t len, int heap)
{
    if (d == NULL) {
        return;
    }
    if (heap) {
        free((void *) d);
    } else {
        munmap((void *) d, len);
    }
}


/* f's idx and pack let go */
static void
gg_unmap(const gg_packfile_t *f)
{
    gg_unmap_one(f->idx, f->idx_len, f->heap & 1);
    gg_unmap_one(f->pack, f->pack_len, f->heap & 2);
    if (f->fd >= 0) {
        close(f->fd);
    }
}


/*
 * The packs kept mapped (gg_pack_keep()): one repository's, the last
 * one opened, each known by its idx's name and both files' inode, size
 * and change time.  A pack is never written in place (git writes a new
 * one and renames it in), so the same name and stat is the same bytes;
 * one listed no more is unmapped at the next open of its directory.
 */
typedef struct {
    char           name[256];
    dev_t          dev[2];
    ino_t          ino[2];
    off_t          size[2];
    struct timespec ctime[2];
    gg_packfile_t  f;
    int            seen;
} gg_kept_t;

static int         gg_keep;
static char        gg_kept_dir[4096];
static gg_kept_t  *gg_kept;
static size_t      gg_nkept;


void
gg_pack_keep(int on)
{
    gg_keep = on;
}


static void
gg_kept_drop(size_t i)
{
    gg_unmap(&gg_kept[i].f);
    gg_kept[i] = gg_kept[--gg_nkept];
}


static int
gg_kept_same(const gg_kept_t *k, int i, const struct stat *st)
{
    return k->dev[i] == st->st_dev && k->ino[i] == st->st_ino
           && k->size[i] == st->st_size
           && k->ctime[i].tv_sec == st->st_ctim.tv_sec
           && k->ctime[i].tv_nsec == st->st_ctim.tv_nsec;
}


static void
gg_kept_stat(gg_kept_t *k, int i, const struct stat *st)
{
    k->dev[i] = st->st_dev;
    k->ino[i] = st->st_ino;
    k->size[i] = st->st_size;
    k->ctime[i] = st->st_ctim;
}


/*
 * dir's pack idx name (path: dir/name): 1 and *f when kept and unchanged;
 * 0 when not kept (or changed: then unmapped)
 */
static int
gg_kept_find(gg_packfile_t *f, const char *path, const char *name)
{
    size_t       i, len;
    struct stat  st[2];
    char         pack[4096];

    for (i = 0; i < gg_nkept; i++) {
        if (strcmp(gg_kept[i].name, name) == 0) {
            break;
        }
    }
    if (i == gg_nkept) {
        return 0;
    }
    len = strlen(path);
    memcpy(pack, path, len - 4);
    memcpy(pack + len - 4, ".pack", 6);
    if (stat(path, &st[0]) != 0 || stat(pack, &st[1]) != 0
        || !gg_kept_same(&gg_kept[i], 0, &st[0])
        || !gg_kept_same(&gg_kept[i], 1, &st[1]))
    {
        gg_kept_drop(i);
        return 0;
    }
    gg_kept[i].seen = 1;
    *f = gg_kept[i].f;
    return 1;
}


/* f (checked, mapped) kept for the next open; not kept: no room */
static void
gg_kept_add(gg_packfile_t *f, const char *name, const struct stat st[2])
{
    gg_kept_t  *k;

    if (strlen(name) >= sizeof(gg_kept[0].name)
        || gg_nkept == GG_PACK_MAX_PACKS)
    {
        return;
    }
    if (gg_kept == NULL) {
        gg_kept = calloc(GG_PACK_MAX_PACKS, sizeof(*gg_kept));
        if (gg_kept == NULL) {
            return;
        }
    }
    k = &gg_kept[gg_nkept++];
    memcpy(k->name, name, strlen(name) + 1);
    gg_kept_stat(k, 0, &st[0]);
    gg_kept_stat(k, 1, &st[1]);
    k->seen = 1;
    f->mapped = 2;
    k->f = *f;
}


/* the packs kept of another directory than dir unmapped; dir's unseen */
static void
gg_kept_begin(const char *dir)
{
    size_t  i;

    if (strcmp(gg_kept_dir, dir) != 0) {
        while (gg_nkept > 0) {
            gg_kept_drop(0);
        }
        snprintf(gg_kept_dir, sizeof(gg_kept_dir), "%s", dir);
    }
    for (i = 0; i < gg_nkept; i++) {
        gg_kept[i].seen = 0;
    }
}


/* dir's packs kept no more (renamed away, repacked) unmapped */
static void
gg_kept_end(void)
{
    size_t  i;

    for (i = gg_nkept; i > 0; i--) {
        if (!gg_kept[i - 1].seen) {
            gg_kept_drop(i - 1);
        }
    }
}


/*
 * every <name>.idx with its <name>.pack in dir that is ours; repo: the
 * repository's own packs (kept mapped across opens when gg_pack_keep()
 * says so), else a quarantine's (mapped with their page tables filled)
 */
static int
gg_pack_dir(gg_pack_t *p, const char *dir, int repo)
{
    int             rc, count, keep, heap;
    char            path[4096];
    size_t          len;
    DIR            *d;
    struct stat     st[2];
    struct dirent  *e;
    gg_packfile_t   f;

    keep = repo && gg_keep;
    if (keep) {
        gg_kept_begin(dir);
    }

    d = opendir(dir);
    if (d == NULL) {
        if (keep) {
            gg_kept_end();
        }
        return 0;
    }

    rc = 0;
    count = 0;
    while ((e = readdir(d)) != NULL && count < GG_PACK_MAX_PACKS) {
        len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".idx") != 0
            || (size_t) snprintf(path, sizeof(path), "%s/%s", dir, e->d_name)
               >= sizeof(path) - 1)
        {
            continue;
        }

        memset(&f, 0, sizeof(f));
        f.fd = -1;
        if (keep && gg_kept_find(&f, path, e->d_name)) {
            goto add;
        }

        if (gg_map(&f.idx, &f.idx_len, path, &st[0], !repo, &heap, NULL)
            != 0)
        {
            continue;
        }
        f.heap = heap;
        memcpy(path + strlen(path) - 4, ".pack", 6);
        if (gg_map(&f.pack, &f.pack_len, path, &st[1], !repo, &heap, &f.fd)
            != 0)
        {
            gg_unmap_one(f.idx, f.idx_len, f.heap);
            continue;
        }
        f.heap |= heap << 1;
        f.mapped = 1;

        if (gg_packfile_check(&f) != 0) {
            gg_unmap(&f);
            continue;
        }
        if (keep) {
            gg_kept_add(&f, e->d_name, st);
        }

    add:

        if (gg_pack_add(p, &f) != 0) {
            if (f.mapped == 1) {
                gg_unmap(&f);
            }
            rc = -1;
            break;
        }
        count++;
    }

    closedir(d);
    if (keep) {
        gg_kept_end();
    }
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
        && gg_pack_dir(p, dir, 0) != 0)
    {
        goto oom;
    }
    if ((size_t) snprintf(dir, sizeof(dir), "%s/objects/pack", repo)
        < sizeof(dir)
        && gg_pack_dir(p, dir, 1) != 0)
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
    const unsigned char *pack, size_t pack_len, int fd, uint64_t cache,
    char *err, size_t errlen)
{
    gg_pack_t      *p;
    gg_packfile_t   f;

    if (gg_pack_alloc(&p, cache, err, errlen) != 0) {
        return -1;
    }

    memset(&f, 0, sizeof(f));
    f.fd = fd;
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


static void
gg_whole_unlink(gg_pack_t *p, gg_pobj_t *o)
{
    if (o->wprev) {
        o->wprev->wnext = o->wnext;
    } else {
        p->whead = o->wnext;
    }
    if (o->wnext) {
        o->wnext->wprev = o->wprev;
    } else {
        p->wtail = o->wprev;
    }
    o->wprev = NULL;
    o->wnext = NULL;
}


static void
gg_whole_front(gg_pack_t *p, gg_pobj_t *o)
{
    o->wprev = NULL;
    o->wnext = p->whead;
    if (p->whead) {
        p->whead->wprev = o;
    } else {
        p->wtail = o;
    }
    p->whead = o;
}


gg_pobj_t *
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
            if (o->whole && p->whead != o) {
                gg_whole_unlink(p, o);
                gg_whole_front(p, o);
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
    if (o->whole) {
        gg_whole_unlink(p, o);
        p->wused -= o->len;
    }
    free(o->data);
    free(o->nl);
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

    /* only whole entries' objects on that list: the held ones at most
     * are passed over */
    for (o = p->wtail; o != NULL && p->wused > p->wbudget; o = prev) {
        prev = o->wprev;
        if (o->refs == 0) {
            gg_cache_drop(p, o);
        }
    }
}


/* o, just added, is a whole entry's inflated bytes */
void
gg_cache_whole(gg_pack_t *p, gg_pobj_t *o)
{
    if (o->len < GG_WHOLE_MIN || o->whole) {
        return;
    }
    o->whole = 1;
    p->wused += o->len;
    gg_whole_front(p, o);
    gg_cache_trim(p);
}


/* a new object, held once, data taken over */
gg_pobj_t *
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
    if (p->xc_free) {
        p->xc_free(p);
    }
    for (o = p->head; o != NULL; o = next) {
        next = o->next;
        free(o->data);
        free(o->nl);
        free(o);
    }
    for (i = 0; i < p->n; i++) {
        if (p->f[i].mapped == 1) {
            gg_unmap(&p->f[i]);
        } else if (p->f[i].heap & 4) {
            /* (one from memory given its file, mapped here) */
            gg_unmap_one(p->f[i].pack, p->f[i].pack_len, 0);
        }
    }
    free(p->dec);
    free(p->f);
    free(p->hash);
    free(p->zin);
    free(p->scratch);
    free(p->dbuf);
    free(p->dbuf2);
    free(p->cpack);
    free(p->coff);
    free(p->xt);
    free(p);
}
