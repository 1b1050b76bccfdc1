/*
 * git-gate's pack reader: a push's blobs straight from the packs of the
 * quarantine and of the repository (idx v2 + pack v2/v3, mmapped), each
 * delta chain's bases applied once and kept in an LRU cache of resolved
 * objects with a byte budget, the object asked for kept too (git's delta
 * base cache does not keep it: every blob of a fast-import chain was
 * resolved twice; gitgate-helper/README.md, "Speed").  Inflated with
 * ISA-L (whole buffers, the size is in the entry's header).
 *
 * A pack is agent input: index-pack checked it, but every read here is
 * bounded all the same (offsets inside the mapping, sizes agreeing with
 * the headers, a delta's result exactly its declared size, chains at most
 * GG_PACK_DEPTH deep and walked without recursion, GG_BLOB_MAX); a
 * corrupt entry fails the read.  An object in no pack we could open
 * (loose objects, alternates, an idx that is not v2) is the caller's to
 * read another way (gg_blob.h's git cat-file).  Fuzzed:
 * fuzz/gg_pack_fuzz.c.
 */

#ifndef GG_PACK_H
#define GG_PACK_H

#include <stddef.h>
#include <stdint.h>


#define GG_PACK_OIDSZ           20
/* the resolved objects kept, bytes (GITGATE_PACK_CACHE_MB overrides) */
#define GG_PACK_CACHE_DEFAULT   (256ULL * 1024 * 1024)
/* the longest delta chain read (git's own pack.depth is at most 4095) */
#define GG_PACK_DEPTH           4096
/* the most packs opened per directory */
#define GG_PACK_MAX_PACKS       256
/* a quarantine's pack up to this size is read into memory (gg_map()); a
 * bigger one is mapped (a thin push's holds its bases whole, index-pack
 * --fix-thin appends them, and a scan that reads only its deltas
 * (gg_tail.c) would pay for them) */
#define GG_PACK_COPY            (4ULL * 1024 * 1024)
/* the most extents a version is built of (gg_pack_extents()); over it,
 * the version is read whole instead */
#define GG_EXT_MAX              (1024 * 1024)

/* object types, as a pack's entry header has them */
#define GG_OBJ_COMMIT           1
#define GG_OBJ_TREE             2
#define GG_OBJ_BLOB             3
#define GG_OBJ_TAG              4
#define GG_OBJ_OFS_DELTA        6
#define GG_OBJ_REF_DELTA        7


typedef struct gg_pack_s  gg_pack_t;

/* a resolved object, held until gg_pack_put() */
typedef struct gg_pobj_s {
    struct gg_pobj_s   *hnext;      /* hash chain */
    struct gg_pobj_s   *prev;       /* LRU, most recent first */
    struct gg_pobj_s   *next;
    uint32_t            pack;
    uint64_t            off;
    int                 type;       /* GG_OBJ_COMMIT .. GG_OBJ_TAG */
    unsigned            refs;
    size_t              len;
    unsigned char      *data;       /* len bytes and a NUL */
    uint32_t           *nl;         /* the scan's newline counts of data,
                                       per block (gg_view.c), or NULL */
    unsigned            pem;        /* the scan's: which bytes of a PEM
                                       header data holds (gg_view.c) */
    unsigned            nul;        /* the scan's: 1 looked at, 2 a NUL
                                       byte in its bytes (gg_decode.c) */
    size_t              dlen;       /* a delta's bytes (gg_pack_ext.c):
                                       its length; its inserts' literals
                                       follow, one after the other */
    /* a whole entry's inflated bytes, of GG_WHOLE_MIN and more: also on
     * the list of those, most recent first (gg_cache_whole()) */
    unsigned            whole;
    struct gg_pobj_s   *wprev;
    struct gg_pobj_s   *wnext;
} gg_pobj_t;


/*
 * A stretch of a version: len bytes of a source, an object the reader
 * holds that is immutable bytes already there: a whole entry's inflated
 * data or a delta's inflated bytes (its inserts point into them).  Two
 * extents with the same src are the same bytes where their src ranges
 * overlap.  p is src->data + soff.
 */
typedef struct {
    gg_pobj_t          *src;
    const unsigned char *p;
    uint64_t            soff;
    uint64_t            pos;        /* in the version */
    uint64_t            len;
} gg_ext_t;

/*
 * The extent of e[0, n) (in order, end to end) holding pos, searched from
 * hint (the one found last: walks and a delta's copies mostly go forward
 * a little): steps that double to a bracket (a galloping search), then a
 * binary search inside it.
 */
size_t gg_ext_find(const gg_ext_t *e, size_t n, uint64_t pos, size_t hint);


/* a version as extents, in order, and the sources they hold */
typedef struct {
    gg_ext_t           *e;
    size_t              n;
    size_t              cap;
    uint64_t            len;        /* the version's size */
    gg_pobj_t         **held;
    size_t              nheld;
    size_t              hcap;
} gg_extents_t;


/* one op of a delta: a copy of the base's [off, off + len) or an insert
 * of len literal bytes at data */
typedef struct {
    int                 copy;
    uint64_t            off;
    size_t              len;
    const unsigned char *data;
} gg_delta_op_t;


typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    uint64_t            src_size;
    uint64_t            dst_size;
    uint64_t            done;       /* result bytes the ops so far make */
} gg_delta_iter_t;


/*
 * Opens the packs of quarantine/pack (if quarantine is not NULL) and of
 * repo/objects/pack.  A pack whose idx is not v2 or does not match its
 * pack is left out (its objects: not found).  cache: bytes, 0 for
 * GG_PACK_CACHE_DEFAULT.  Returns 0 (with no pack at all too), -1 out of
 * memory.
 */
int gg_pack_open(gg_pack_t **out, const char *repo, const char *quarantine,
    uint64_t cache, char *err, size_t errlen);

/*
 * on: from now on the repository's own packs (not the quarantine's) stay
 * mapped after gg_pack_close(), for the next gg_pack_open() of the same
 * repository (a warm child's next push: no mmap, no check, no page
 * faults again); those of one repository only, the last opened
 */
void gg_pack_keep(int on);

/*
 * One zlib stream at in (in_len bytes available, at most 4 GB of them
 * read) inflated by ISA-L into out, exactly size bytes: the stream must
 * end there, its Adler-32 right; st: ISA-L's state, the caller's.  0 and
 * *used (when not NULL) the input bytes the stream took; -1 otherwise.
 */
struct inflate_state;
int gg_zinflate(struct inflate_state *st, const unsigned char *in,
    uint64_t in_len, unsigned char *out, size_t size, uint64_t *used);

/* one pack from memory (tests, fuzzing): idx and pack, not copied; fd:
 * a file holding the same pack bytes, its entries then read from it with
 * pread() as a big quarantine's are (not closed here; pack may then be
 * NULL, as a big quarantine's is never mapped), or -1 */
int gg_pack_open_mem(gg_pack_t **out, const unsigned char *idx,
    size_t idx_len, const unsigned char *pack, size_t pack_len, int fd,
    uint64_t cache, char *err, size_t errlen);

void gg_pack_close(gg_pack_t *p);

/* how many packs are open */
size_t gg_pack_count(const gg_pack_t *p);

/*
 * The object oid (GG_PACK_OIDSZ raw bytes), resolved: 0 and *out held
 * (gg_pack_put() it; its data stays until then), 1 when no open pack has
 * it (or a delta's base is in none: read it another way), -2 when it
 * (or a base in its chain) is over GG_BLOB_MAX, -1 when its entry or
 * chain is corrupt or too deep, or memory ran out (err says why).
 */
int gg_pack_get(gg_pobj_t **out, gg_pack_t *p, const unsigned char *oid,
    char *err, size_t errlen);

void gg_pack_put(gg_pack_t *p, gg_pobj_t *o);

/*
 * Whether a's entry is stored as a delta whose base is b (same pack by
 * offset, or by oid): 1 and the delta's bytes in *delta, *len (the
 * reader's, slot 0 of gg_pack_delta_base()), 0 when not (or a or b in no
 * pack), -1 when a's entry is corrupt.
 */
int gg_pack_delta_of(const unsigned char **delta, size_t *len,
    gg_pack_t *p, const unsigned char *a, const unsigned char *b, char *err,
    size_t errlen);


/*
 * Whether a's entry is stored as a delta: 1, its bytes in *delta, *len
 * (the reader's, slot 0 or 1, valid until the next call with that slot)
 * and where its base's entry is (*bpack, *boff: two deltas with the same
 * are on the same base); 0 when not (or a is in no pack, or a
 * REF_DELTA's base is in none), -1 when a's entry is corrupt.  delta
 * NULL: only where the base is, nothing inflated.
 */
int gg_pack_delta_base(const unsigned char **delta, size_t *len,
    uint32_t *bpack, uint64_t *boff, gg_pack_t *p, const unsigned char *a,
    int slot, char *err, size_t errlen);

/*
 * The blob oid as extents (gg_ext_t) into *out, nothing applied: a whole
 * entry is one extent over its inflated data, a delta's inserts extents
 * into its inflated bytes and its copies the slices of its base's extents
 * (the chain walked without recursion, at most GG_PACK_DEPTH deep).  A
 * whole entry is keyed by its oid (the first pack that holds that oid
 * whole), so a version read from a thin pack's appended base and one from
 * the repository's pack share it; a delta's bytes by their entry.  0 and
 * *out holding its sources (gg_extents_release()); 1 when it cannot be
 * built (in no pack, a base in none, not a blob, over max extents or
 * GG_BLOB_MAX: read it whole); -1 on a corrupt entry or delta, or out of
 * memory.
 */
int gg_pack_extents(gg_extents_t *out, gg_pack_t *p,
    const unsigned char *oid, size_t max, char *err, size_t errlen);

/*
 * Where the chain of oid ends: its whole entry, as gg_pack_extents()
 * finds it (headers only, nothing inflated).  Two versions' extents
 * share a source only if they share this.  0, 1 (in no pack, a base in
 * none), -1 corrupt.
 */
int gg_pack_root(uint32_t *pack, uint64_t *off, gg_pack_t *p,
    const unsigned char *oid, char *err, size_t errlen);

/* the sources put back; the arrays kept for the next version */
void gg_extents_release(gg_pack_t *p, gg_extents_t *x);
void gg_extents_free(gg_extents_t *x);

/*
 * The delta format, for the pack reader and the scan: the two sizes,
 * then one op at a time.  gg_delta_next(): 1 and *op, 0 at the end (the
 * ops made exactly dst_size bytes), -1 on a bad op (op 0, a copy out of
 * the base, more than dst_size bytes, the delta cut short).
 */
int gg_delta_init(gg_delta_iter_t *it, const unsigned char *delta,
    size_t len);
int gg_delta_next(gg_delta_iter_t *it, gg_delta_op_t *op);

/* the delta applied to base into dst (dst_len == the delta's dst_size):
 * 0 or -1 */
int gg_delta_apply(unsigned char *dst, size_t dst_len,
    const unsigned char *base, size_t base_len,
    const unsigned char *delta, size_t delta_len);

/*
 * A blob's bytes where they lie in a pack: a whole entry whose zlib
 * stream is stored deflate blocks alone (what index-pack --fix-thin
 * writes for a thin pack's bases at core.compression=0, as the gate's
 * receive-pack runs: gitgate-cgi.c), read a range at a time, nothing
 * inflated.  gg_pack_stored(): 1 and *s when oid has such an entry of
 * size bytes (its first block a stored one; the others are checked as
 * they are read), else 0.  gg_stored_read(): dst gets the blob's [off,
 * off + len), the blocks seen kept (where, how long) for the next read's
 * search: 0, or -1 when a block on the way is not a stored one,
 * the blocks are not what the entry says, or they are more than one a
 * KB (zlib writes blocks of tens of KB; read the blob another way).  The
 * bytes are what index-pack hashed: it inflated the same blocks.
 */
typedef struct {
    const unsigned char *b;         /* a block's header */
    uint64_t            pos;        /* where its bytes are in the blob */
    uint32_t            len;        /* how many (LEN) */
    uint32_t            last;       /* BFINAL */
} gg_stored_blk_t;

typedef struct {
    const unsigned char *end;       /* the pack's entries' end */
    uint64_t            size;
    gg_stored_blk_t    *blk;        /* the blocks seen, in order */
    size_t              n;
    size_t              cap;        /* (kept for the next blob) */
    unsigned char      *buf;        /* the entry read with pread(), from
                                       a pack with its file open */
    size_t              bcap;
} gg_stored_t;

int gg_pack_stored(gg_stored_t *s, gg_pack_t *p, const unsigned char *oid,
    uint64_t size);
/* from a pack with its file open, a stored blob of up to this many bytes
 * is read whole with pread() first; a bigger one through a mapping of the
 * file made for it */
#define GG_STORED_PREAD  (64ULL * 1024 * 1024)
int gg_stored_read(gg_stored_t *s, uint64_t off, uint64_t len,
    unsigned char *dst);
void gg_stored_free(gg_stored_t *s);

/*
 * An entry's header at pack[off]: its type, its size (inflated, for a
 * delta the delta's), where its zlib data starts, and a delta's base:
 * *base_off for OFS_DELTA, base_oid for REF_DELTA.  0 or -1.
 */
int gg_pack_entry(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    const unsigned char *pack, size_t pack_len, uint64_t off);


#endif /* GG_PACK_H */
