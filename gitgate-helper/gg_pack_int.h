/*
 * git-gate's pack reader, internal: the packs and the cache (gg_pack.c),
 * entry headers (gg_pack_entry.c), the delta format (gg_pack_delta.c),
 * the reading of objects (gg_pack_read.c, gg_pack_ext.c,
 * gg_pack_stored.c) share these.
 */

#ifndef GG_PACK_INT_H
#define GG_PACK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gg_pack.h"


#define GG_IDX_HDR      (8 + 256 * 4)
#define GG_PACK_HDR     12
#define GG_PACK_TRAILER GG_PACK_OIDSZ
/* bytes past the end of every buffer the reader allocates: an insert
 * (at most 127 bytes) or a short copy is moved as one block of this */
#define GG_SLACK        128
/* zlib's deflate never does better than about 1032:1 */
#define GG_ZLIB_RATIO   1040


/*
 * Versions' extents kept (gg_pack_ext.c): a version asked for and its
 * base, so that the next version on the same chain applies one delta,
 * not the whole chain; at most GG_XCACHE_N of them and GG_XCACHE_EXT
 * extents, the least recently used out first
 */
#define GG_XCACHE_N     64
#define GG_XCACHE_EXT   (2 * 1024 * 1024)

typedef struct {
    uint32_t            pack;
    uint64_t            off;
    uint64_t            used;
    gg_extents_t        x;
} gg_xcache_t;


typedef struct {
    const unsigned char *idx;
    size_t              idx_len;
    const unsigned char *pack;      /* NULL: not mapped (fd) */
    size_t              pack_len;
    int                 mapped;     /* 1: munmap on close; 2: kept
                                       (gg_pack_keep()) */
    int                 heap;       /* 1: idx, 2: pack read into memory
                                       (malloc()), freed on close; 4:
                                       pack mapped by gg_packfile_map(),
                                       unmapped on close */
    int                 fd;         /* a quarantine's pack over
                                       GG_PACK_COPY: its file, open, read
                                       with pread() alone, not mapped
                                       (gg_packfile_map()); else -1 */
    uint32_t            n;          /* objects */
    const unsigned char *oids;
    const unsigned char *off32;
    const unsigned char *off64;
    size_t              n64;
} gg_packfile_t;


/* a delta entry's header as gg_pack_delta_base() parsed it */
typedef struct {
    uint64_t            off;
    uint64_t            size;
    uint64_t            data_off;
    uint64_t            base_off;
    uint32_t            pack;
    int                 type;       /* 0: none yet */
    unsigned char       base_oid[20];
} gg_dhdr_t;


struct gg_pack_s {
    gg_packfile_t      *f;
    size_t              n;
    size_t              cap;
    struct inflate_state *dec;     /* ISA-L's */

    gg_pobj_t         **hash;
    size_t              hsize;      /* a power of 2 */
    gg_pobj_t          *head;       /* LRU: most recent */
    gg_pobj_t          *tail;
    uint64_t            used;
    uint64_t            budget;
    gg_pobj_t          *whead;      /* whole entries: most recent */
    gg_pobj_t          *wtail;
    uint64_t            wused;
    uint64_t            wbudget;    /* GG_WHOLE_BUDGET, at most a quarter
                                       of budget */

    unsigned char      *zin;        /* gg_inflate()'s input, read with
                                       pread(): GG_PREAD_CHUNK */
    unsigned char      *scratch;    /* a delta, inflated, while applied */
    size_t              scap;
    gg_dhdr_t           dh[2];      /* gg_pack_delta_base()'s last two
                                       headers: each is asked for twice,
                                       where its base is, then inflated
                                       (a pread() of a pack's file each) */
    unsigned            dh_next;
    unsigned char      *dbuf;       /* gg_pack_delta_base()'s, two slots */
    size_t              dcap;
    unsigned char      *dbuf2;
    size_t              dcap2;

    /* a chain being resolved: its deltas, nearest to the object first */
    uint32_t           *cpack;
    uint64_t           *coff;

    gg_ext_t           *xt;         /* gg_pack_extents()'s other list */
    size_t              xtcap;
    gg_xcache_t        *xc;         /* versions' extents, GG_XCACHE_N */
    size_t              nxc;
    /* frees xc on close: set by gg_pack_ext.c, which owns it, when it
     * allocates xc (the packs and the cache call no layer above them) */
    void              (*xc_free)(gg_pack_t *p);
    uint64_t            xtick;
    size_t              xcext;      /* extents they hold */
};


/* a delta's inflated bytes in the cache: its entry's offset with this */
#define GG_OFF_DELTA    (UINT64_C(1) << 63)

/* the whole entry oid in the first pack holding it whole: 0, or -1 */
int gg_pack_find_whole(uint32_t *pack, uint64_t *off, const gg_pack_t *p,
    const unsigned char *oid);

/* huge pages: objects' buffers of at least this are advised to use them */
#define GG_HUGE         (2 * 1024 * 1024)
/*
 * Whole entries' objects (inflated, no delta applied) of GG_WHOLE_MIN
 * bytes and more are kept up to GG_WHOLE_BUDGET of them, within the
 * cache's budget: one costs only its inflate to have again, and their
 * buffers, freed, are what the next ones are inflated into, pages already
 * mapped and in the CPU's caches (a push of new files reads each one
 * once).  Objects built from deltas keep the whole budget.  A cache of
 * less than 4 * GG_WHOLE_BUDGET keeps a quarter of it for them.
 */
#define GG_WHOLE_MIN    (64 * 1024)
#define GG_WHOLE_BUDGET (4 * 1024 * 1024)

/*
 * An entry of a pack with a file open (gg_packfile_t fd) is read from the
 * file with pread(), its header (gg_packfile_entry()) and its zlib data
 * GG_PREAD_CHUNK at a time into one buffer that stays in the CPU's caches
 * (the first read about the object's size), not through its mapping: on
 * a VM the first touch of a mapped page costs 7-14 us (3.5 ms a MB), its
 * unmapping more, pread() about 0.15 ms a MB.
 */
#define GG_PREAD_CHUNK  (128 * 1024)

/* gg_alloc() maps a buffer's pages at once from this size up */
#define GG_POPULATE     (64 * 1024)

/* an object's buffer, malloc()'s, huge pages asked for when big */
void *gg_alloc(size_t size);

/* zlib data at data_off of pack f inflated into out, exactly size */
int gg_inflate(gg_pack_t *p, const gg_packfile_t *f, uint64_t data_off,
    unsigned char *out, size_t size);


/*
 * gg_pack_entry() for the entry at off of f (its one bounds check and
 * parser): for a pack with its file open (fd), its header read from the
 * file into hdr, at most GG_ENTRY_MAX bytes (*base_oid then points into
 * hdr); hdr may be NULL when fd is -1
 */
#define GG_ENTRY_MAX    32
int gg_packfile_entry(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    unsigned char hdr[GG_ENTRY_MAX], const gg_packfile_t *f, uint64_t off);

/* f's file (fd) mapped, for a stored blob over GG_STORED_PREAD read in
 * place (gg_pack_stored()): 0 (mapped till the pack is closed), or -1 */
int gg_packfile_map(gg_packfile_t *f);

/* the offset of oid in f: 0, or -1 when not there or its offset is bad */
int gg_packfile_find(uint64_t *off, const gg_packfile_t *f,
    const unsigned char *oid);

/* the first open pack holding oid, the pack "prefer" first */
int gg_pack_find(uint32_t *pack, uint64_t *off, const gg_pack_t *p,
    const unsigned char *oid, uint32_t prefer);

/* the cached object at (pack, off), made the most recent; or NULL */
gg_pobj_t *gg_cache_find(gg_pack_t *p, uint32_t pack, uint64_t off);
/* a new object, held once, data taken over */
void gg_cache_whole(gg_pack_t *p, gg_pobj_t *o);
gg_pobj_t *gg_cache_add(gg_pack_t *p, uint32_t pack, uint64_t off, int type,
    unsigned char *data, size_t len);

/* gg_delta_apply() for buffers with GG_SLACK bytes past their end */
int gg_delta_apply_slack(unsigned char *dst, size_t dst_len,
    const unsigned char *base, size_t base_len,
    const unsigned char *delta, size_t delta_len);


#endif /* GG_PACK_INT_H */
