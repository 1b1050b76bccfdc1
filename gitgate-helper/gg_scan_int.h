/*
 * git-gate's push scanner, internal: the walk (gg_scan.c), the trees,
 * commits and tags read from their raw bytes (gg_raw.c), a file's added
 * lines (gg_lines.c) and the fields and findings (gg_field.c) share these.
 */

#ifndef GG_SCAN_INT_H
#define GG_SCAN_INT_H

#include <git2.h>

#include "gg_blob.h"
#include "gg_pack.h"
#include "gg_scan.h"
#include "bottle_generic.h"


#define GG_SHORT            12      /* hex digits of a sha in a "where" */
/*
 * The last new blobs read, kept for the next commit's diff (the walk goes
 * oldest first: a modified file's old blob is often one just read):
 * GG_CACHE of them, each up to GG_CACHE_BLOB, so 256 MB at most.
 */
#define GG_CACHE            32
#define GG_CACHE_BLOB       (8 * 1024 * 1024)
#define GG_ALLOW_MARKER     "gitleaks:allow"
/* levels of trees below a commit's the walk reads (one call each); one
 * more refuses the push */
#define GG_TREE_DEPTH       2048

/* decoded views (gg_decode.c): the codings found at a blob's start, how
 * many stacked, the caps' defaults (GITGATE_DECODED_MAX_MB, each stage;
 * GITGATE_DECODED_RATIO, times the blob's size) */
#define GG_DEC_GZIP         1
#define GG_DEC_ZLIB         2
#define GG_DEC_STAGES       3
#define GG_DEC_MAX          (64ULL * 1024 * 1024)
#define GG_DEC_RATIO        100
#define GG_RULE_UNDECODABLE "undecodable"

/* the push's scan budget (GITGATE_SCAN_TIMEOUT s, GITGATE_SCAN_MEMORY_MB) */
#define GG_SCAN_TIMEOUT_MS  (300 * 1000)
#define GG_SCAN_MEMORY_MB   2048
#define GG_RULE_BUDGET      "scan_budget"

/*
 * gg_odb.c: pack's objects served to libgit2 (odb's reads: commits, trees,
 * tags), before its own backends; the backend holds pack, which must
 * outlive odb.  0, or -1 out of memory.
 */
int gg_odb_add(git_odb *odb, gg_pack_t *pack);
/*
 * repo's objects and the quarantine's (NULL: none) as libgit2 would read
 * them, its pack backends opened when first asked (gg_odb.c), set as
 * repo's odb: 0; 1 when one of them has an alternates file (nothing set:
 * libgit2's own odb follows it); -1 out of memory
 */
int gg_odb_open(git_repository *repo, const char *quarantine);

/* what a field is, for its "where" */
enum {
    GG_F_REF = 0,
    GG_F_MESSAGE,
    GG_F_AUTHOR,
    GG_F_COMMITTER,
    GG_F_HEADER,
    GG_F_PATH,
    GG_F_FILE,
    GG_F_TAG_NAME,
    GG_F_TAG_MESSAGE,
    GG_F_TAGGER,
    GG_F_TAG_HEADER
};


/*
 * added lines: a run of consecutive lines of the new file from off on; or
 * (ctx) one unchanged line next to added ones, scanned with them so that
 * a secret spanning lines (a PEM key's header and its first line) is
 * seen whole, a match wholly inside it not reported
 */
typedef struct {
    uint64_t            off;        /* in the field */
    uint64_t            pos;        /* in the new file, when lineno is 0 */
    size_t              lineno;     /* in the new file, of the run's first,
                                       once counted (gg_lines_number());
                                       0: counted from pos only when a
                                       finding needs it (gg_v_lineno()) */
    int                 ctx;
} gg_line_t;


typedef struct {
    char               *data;
    size_t              len;
    size_t              cap;
} gg_buf_t;


/* a version read in place: one buffer (gg_view_buf()) or extents */
typedef struct {
    const gg_ext_t     *e;
    size_t              n;
    uint64_t            len;
    size_t              hint;       /* the extent found last */
    uint64_t            lpos;       /* newlines before lpos: lnl (the last
                                       gg_v_lineno(), counted on from) */
    uint64_t            lnl;
    const gg_extents_t *x;          /* the extents', NULL: a buffer's */
    int                 pem;        /* 0: no line of it can open a PEM
                                       block (gg_opener()), -1 not known
                                       yet (gg_v_pem()) */
    gg_ext_t            one;        /* a buffer's */
} gg_view_t;


/* one field: what it is and how to say where a match in it is */
typedef struct {
    int                 kind;       /* GG_F_* */
    const char         *name;       /* path, tag name; NULL if withheld */
    size_t              index;      /* ref update / file number, 1-based */
    const char         *data;       /* the field, for lines and markers */
    size_t              len;
    const gg_line_t    *lines;      /* added lines; NULL: consecutive */
    size_t              nlines;
    size_t              first_line; /* of data[0] when lines is NULL */
    gg_view_t          *view;       /* the new file, for lines whose
                                       number is not yet counted */
} gg_field_t;


typedef struct {
    git_oid             id;
    gg_blob_t           b;          /* b.data NULL: empty slot */
} gg_cached_t;


/* a copy a pack's delta makes: old[o, o + len) is new[n, n + len) */
typedef struct {
    uint64_t            o;
    uint64_t            n;
    uint64_t            len;
} gg_match_t;


/*
 * git-gate's line matcher's buffers (gg_lmatch.c), kept for the next file
 * (freed by gg_lmatch_free()): per line of the two middles, its offset
 * and class; the classes and their hash table; the anchors, their longest
 * increasing subsequence, the stretches of two levels, a gap's LCS table
 */
typedef struct {
    uint32_t           *off_o;
    size_t              off_ocap;
    uint32_t           *off_n;
    size_t              off_ncap;
    uint32_t           *cls_o;
    size_t              cls_ocap;
    uint32_t           *cls_n;
    size_t              cls_ncap;
    void               *cls;
    size_t              clscap;
    size_t              ncls;
    uint32_t           *tab;
    size_t              tabcap;
    size_t              tabn;       /* the part this file uses */
    size_t              nlines;     /* of both middles */
    uint32_t           *a_o;
    size_t              a_ocap;
    uint32_t           *a_n;
    size_t              a_ncap;
    uint32_t           *pred;
    size_t              predcap;
    uint32_t           *tail;
    size_t              tailcap;
    void               *run;
    size_t              runcap;
    void               *run2;
    size_t              run2cap;
    uint16_t           *dp;         /* a gap's LCS table */
    size_t              dpcap;
    size_t              dpwork;     /* its cells left for this file */
} gg_lmatch_t;


typedef struct {
    git_repository     *repo;
    git_odb            *odb;        /* commits, tags, trees: raw bytes */
    int                 filemodes;  /* GITGATE_FILEMODES=scan: a file of
                                       a mode git does not write is read
                                       as any other (else refused) */
    gg_buf_t            path;       /* the tree walk's, NUL-terminated */
    size_t              nfile;      /* changed entries of this tree */
    bottle_scan_t      *s;
    bottle_generic_t   *gen;        /* generic assignments, in files */
    gg_report_t        *r;
    const gg_updates_t *updates;    /* the push: who, trailers required */
    int                 field;      /* id of the next field */
    char                obj[GG_OID_HEXSZ + 1];  /* short sha or tag name */
    const char         *obj_kind;   /* "commit", "tag" */
    gg_pack_t          *pack;       /* blob contents: the packs first */
    int                 tails;      /* gitgate-tails (gg_tail.c), or -1 */
    gg_stored_t         st;         /* an old version's stored blocks */
    gg_blob_reader_t   *br;         /* then git cat-file */
    gg_blob_t           old;        /* the current file's, before */
    gg_blob_t           new;        /* and after */
    gg_cached_t        *cache;      /* GG_CACHE of them */
    size_t              next;       /* the slot to fill next */
    gg_buf_t            add;        /* the current file's added lines */
    gg_line_t          *lines;
    size_t              nlines;
    size_t              lcap;
    size_t              ctxlen;     /* bytes of context lines in add */
    gg_match_t         *m;          /* a delta's copies */
    size_t              nm;
    size_t              mcap;
    gg_match_t         *s1;         /* two deltas' copies from one base */
    size_t              ns1;
    size_t              s1cap;
    gg_match_t         *s2;
    size_t              ns2;
    size_t              s2cap;
    uint64_t            sib_src;
    gg_extents_t        xo;         /* the old version as extents */
    gg_extents_t        xn;         /* and the new */
    gg_ext_t           *xs;         /* the old one's, by source */
    size_t              xscap;
    gg_ext_t           *xs2;        /* room to sort xs in */
    size_t              xs2cap;
    gg_buf_t            tmp;        /* a line over extents */
    gg_lmatch_t         lm;         /* the line matcher's (gg_lmatch()) */
    size_t              xmax;       /* extents per version, 0: GG_EXT_MAX */
    int                 dec;        /* gg_xfile(): the new version wants
                                       decoded views (gg_dec_wanted()) */
    uint64_t            dec_max;    /* decoded bytes a stage, at most */
    uint64_t            dec_ratio;  /* times the blob's size, at most */
    uint64_t            t0;         /* the budget: start, ms */
    uint64_t            rss0;       /* peak RSS then, KB */
    uint64_t            time_ms;    /* 0: none */
    uint64_t            mem_kb;     /* 0: none */
    uint64_t            mem_at;     /* ms of its last check */
    int                 over;       /* over it: budget_why says which */
    char                budget_why[256];
    int                 oom;
    char               *err;
    size_t              errlen;
} gg_ctx_t;


/* one field scanned, its findings recorded: matches or -1 */
int gg_field(gg_ctx_t *c, gg_field_t *fd);
int gg_simple(gg_ctx_t *c, int kind, const char *data, size_t len);
/* a refusal that is no scanner match (bad_filemode, undecodable,
 * scan_budget): rule, where; 0 or -1 */
int gg_refusal(gg_ctx_t *c, const char *rule, const char *where);

/* the context's services (gg_ctx.c, which calls no scanner file) */
/* data NULL: len bytes added, left for the caller to write */
int gg_buf_add(gg_buf_t *b, const void *data, size_t len);

/* one added or modified entry: its path, then its added lines
 * (gg_change.c); 0 or -1 */
int gg_delta(gg_ctx_t *c, const git_diff_delta *d, size_t index);
/* one blob's contents: from the packs (*po held, put it back), else from
 * git cat-file into buf (*po NULL); 0 or -1 (gg_change.c) */
int gg_read(const char **data, size_t *len, gg_pobj_t **po, gg_blob_t *buf,
    gg_ctx_t *c, const git_oid *id);

/* the raw objects (gg_raw.c), each 0 or -1: every changed entry of tree
 * against ptree (NULL: every entry); a commit, its tree against its
 * first parent's; an annotated tag of ref update index (withheld: the
 * ref's name matched, no name in its fields' "where") */
int gg_tree(gg_ctx_t *c, const git_oid *ptree, const git_oid *tree);
int gg_commit(gg_ctx_t *c, const git_oid *oid);
int gg_tag(gg_ctx_t *c, const git_tag *tag, const git_oid *id, size_t index,
    int withheld);

/* a run (or ctx line) from pos of the new file on, its number not
 * counted (gg_v_lineno() when a finding needs it; gg_ctx.c) */
int gg_line_at(gg_ctx_t *c, uint64_t pos, int ctx);

/* the added lines in c->add and c->lines (as gg_match_lines() or the diff
 * left them) scanned as file path's field; d: the new file, alive until
 * then, for the line numbers gg_match_lines() left uncounted:
 * gg_field()'s result */
int gg_added_field(gg_ctx_t *c, const char *path, size_t index,
    gg_view_t *d);
/* d[0, len), whole lines numbered from first_line, scanned as file
 * path's field (a new file, an appended part): 0 or -1 */
int gg_file_lines(gg_ctx_t *c, const char *path, size_t index,
    size_t first_line, const char *d, size_t len);

/*
 * One added or modified file, its added lines scanned as one field (o
 * NULL: a new file, all of it); packed: both versions read from the
 * packs, so a delta between them may say which lines are added.  0 or -1.
 */
int gg_file(gg_ctx_t *c, const char *path, size_t index, const char *o,
    size_t olen, const char *d, size_t nlen, const git_oid *oid,
    const git_oid *nid, int packed);

/*
 * A modified file's added lines with neither version built: both as
 * extents (gg_pack_extents()), the bytes they share as c->m, then
 * gg_match_lines() (gg_xlines.c).  1 when done, 0 when the extents cannot
 * relate them (read both whole: gg_file()), -1 on error.
 */
int gg_xfile(gg_ctx_t *c, const char *path, size_t index,
    const git_oid *oid, const git_oid *nid);

/*
 * A version gathered from its extents into buf: a delta's chain applied
 * without building each version on it whole (the pack reader would, and
 * keep them), for a file whose two versions share no source.  0, 1 when
 * it has no extents (read it whole: gg_pack_get()), -1 on error.
 */
int gg_xread(gg_ctx_t *c, gg_blob_t *buf, const git_oid *oid);

/* gg_xfile()'s added lines alone, into c->add and c->lines (tests):
 * 1, 0 or -1 as gg_xfile() */
int gg_xlines(gg_ctx_t *c, const git_oid *oid, const git_oid *nid);

/* the added lines of two versions, both read whole, from the pack's
 * delta between them alone (gg_lines.c), into c->add and c->lines, each
 * numbered (tests): 1, 0 when no delta relates them, or -1 */
int gg_dlines(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen, const git_oid *oid, const git_oid *nid);

/*
 * git-gate's line matcher (gg_lmatch.c): the stretches o[0, olen) and
 * d[0, nlen) have in common, whole lines, in d's order, into c->m (then
 * gg_match_lines() over gg_view_buf() views of the two); every stretch
 * the same bytes in both.  0, or -1 (out of memory).
 */
int gg_lmatch(gg_ctx_t *c, const char *o, size_t olen, const char *d,
    size_t nlen);
void gg_lmatch_free(gg_lmatch_t *lm);

/*
 * Decoded views (gg_decode.c): d's (the new version's; o the old one's,
 * NULL for a new file) gzip/zlib data and UTF-16 text, scanned as fields
 * of path; what cannot be decoded within the caps a finding of rule
 * GG_RULE_UNDECODABLE.  0, or -1 (error, or over the budget).
 */
int gg_decoded(gg_ctx_t *c, const char *path, size_t index, const char *o,
    size_t olen, const char *d, size_t nlen);
/* 1 when d has views to scan: a compressed stream at 0, a NUL byte */
int gg_dec_wanted(const char *d, size_t nlen);
/* the same for a version read as extents, none built */
int gg_dec_wanted_ext(const gg_extents_t *x);
int gg_dec_coding(const unsigned char *p, size_t n);
int gg_dec_stream(gg_ctx_t *c, gg_buf_t *out, gg_buf_t *meta,
    const unsigned char *p, size_t n, int coding, uint64_t limit, char *why,
    size_t whylen);
size_t gg_u16_view(char *out, const unsigned char *p, size_t n, int be,
    size_t start);

/* the budget (gg_ctx.c): started, then checked (0, or -1 with c->over
 * and c->err) */
void gg_budget_start(gg_ctx_t *c);
int gg_budget(gg_ctx_t *c);

/* views (gg_view.c) */
void gg_view_buf(gg_view_t *v, const char *d, size_t len);
void gg_view_ext(gg_view_t *v, const gg_extents_t *x);
/* the added lines of d against o from the common stretches c->m: 0, -1 */
int gg_match_lines(gg_ctx_t *c, gg_view_t *o, gg_view_t *d);
size_t gg_count_lines(const char *p, size_t len);
/* the number of the line holding pos of v, from 1 */
size_t gg_v_lineno(gg_view_t *v, uint64_t pos);
/* every entry of c->lines numbered (tests: gg_xlines()) */
void gg_lines_number(gg_ctx_t *c, gg_view_t *d);
/* whether a line may open a PEM block, the one secret over lines */
int gg_opener(const char *p, size_t len);
/* the newlines of v (a source's counted once, per block, and kept) */
uint64_t gg_v_count_lines(gg_view_t *v);
/* whether v's last line (after its last newline but the final one) may:
 * 1, 0, or -1 (out of memory) */
int gg_v_last_opener(gg_ctx_t *c, gg_view_t *v);

/*
 * Blob tails (gg_tail.c): a blob's size, newline count and flags, kept
 * in <repo>/gitgate-tails by id.  gg_tail_open(): its descriptor, or -1
 * (no tails); gg_tail_get(): 1 and *t, or 0 (none); gg_tail_file(): a
 * modified file the delta of which only appends to an old version with a
 * record, scanned from the delta alone: 1, 0 (not one: read it), -1.
 */
#define GG_TAIL_SLOTS   (1U << 17)
#define GG_TAIL_MIN     1024    /* bytes: a smaller blob has none */
#define GG_TAIL_EXTENTS 64      /* a version of more extents has none */
#define GG_TAIL_NL      1       /* empty, or ends with a newline */
#define GG_TAIL_PLAIN   2       /* no decoded view (gg_dec_wanted()) */
#define GG_TAIL_OPENER  4       /* its last line may open a PEM block
                                   (gg_opener()) */

typedef struct {
    uint64_t            size;
    uint64_t            lines;      /* newline bytes */
    uint32_t            flags;
} gg_tail_t;

int gg_tail_open(const char *repo);
int gg_tail_get(int fd, const unsigned char *oid, gg_tail_t *t);
void gg_tail_put(int fd, const unsigned char *oid, const gg_tail_t *t);
void gg_tail_of(gg_ctx_t *c, gg_tail_t *t, const char *d, size_t len,
    int dec);
void gg_tail_of_ext(gg_ctx_t *c, gg_tail_t *t, const gg_extents_t *x,
    int dec);
int gg_tail_file(gg_ctx_t *c, const char *path, size_t index,
    const git_oid *oid, const git_oid *nid);


#endif /* GG_SCAN_INT_H */
