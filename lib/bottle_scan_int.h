/*
 * Private to the scanner (bottle_scan*.c): the compiled objects, the
 * views, the rule table and the decoders.  Not an interface.
 */

#ifndef BOTTLE_SCAN_INT_H
#define BOTTLE_SCAN_INT_H

#define PCRE2_CODE_UNIT_WIDTH  8

#include <pthread.h>
#include <stdint.h>

#include <hs/hs.h>
#include <pcre2.h>

#include "bottle_scan.h"


/* view bytes kept from earlier blocks: the lookback plus lookbehind room */
#define BOTTLE_SCAN_TAIL      (BOTTLE_SCAN_LOOKBACK + 64)
/* raw input is scanned in blocks of at most this many bytes, and decoded
 * in sub-blocks of at most BOTTLE_SCAN_DBLOCK */
#define BOTTLE_SCAN_BLOCK     65536
#define BOTTLE_SCAN_DBLOCK    8192
/* confirm regex limits: a hit past them is reported unconfirmed */
#define BOTTLE_SCAN_MATCH_LIMIT  200000

#define BOTTLE_SCAN_NVIEWS    5

/* escapes that write a token character: the decoded views they need */
#define BOTTLE_TRIG_JSON      1
#define BOTTLE_TRIG_PCT       2
#define BOTTLE_TRIG_PCT2      4


/* a vendor rule or an injection phrase (bottle_scan_rules.c) */
typedef struct {
    const char         *name;
    const char         *vendor;
    const char         *shape;      /* for docs/dlp.md */
    int                 detector;   /* TOKEN_PATTERNS or INJECTION */
    /*
     * Characters a token is made of at its ends: the token must not have
     * one of them right before or after it (a boundary), except that an
     * escape "\x" or "%XX" right before it counts as a boundary.  NULL: no
     * boundaries (phrases).  Written as the body of a regex class.
     */
    const char         *cs;
    /* regex that must come before, or NULL; checked by the confirm only */
    const char         *ctx;
    const char         *token;      /* the token's regex */
    const char         *extra;      /* PCRE2 lookahead at the token start */
    unsigned            maxlen;     /* longest match, context included */
    unsigned            unbounded:1;    /* longer tokens exist */
    unsigned            caseless:1;
    unsigned            jwt:1;      /* confirmed by bottle_scan_jwt() */
    unsigned            dotted:1;   /* has characters outside cs */
    /*
     * vectorscan looks for the token alone, the confirm for the context:
     * a context word common in prose ("token") made the gap after it the
     * database's main cost
     */
    unsigned            ctx_apart:1;
    /* the match is the start of a larger secret (a private key block):
     * refused, never redacted, as the rest would go out */
    unsigned            partial:1;
} bottle_scan_rule_t;

extern const bottle_scan_rule_t  bottle_scan_rules[];
extern const size_t              bottle_scan_nrules;


typedef struct {
    const bottle_scan_rule_t  *r;
    pcre2_code                *re;         /* the token, ending at \z */
    pcre2_code                *ctx;        /* the context, ending at \z */
    pcre2_code                *var;        /* the token, its character
                                               classes captured */
    int                        jit;         /* re has JIT code */
    int                        jit_ctx;
    int                        jit_var;
    unsigned                   nlit;        /* literal characters of the
                                               token regex, at most */
    unsigned char              cs[32];      /* bitmap of r->cs */
} bottle_scan_crule_t;


struct bottle_scan_db_s {
    hs_database_t          *vendor;     /* ids: index into rules */
    hs_database_t          *inject;
    size_t                  vendor_min; /* the fewest bytes a vendor
                                           pattern matches */
    bottle_scan_crule_t    *rules;
    size_t                  nrules;
    pcre2_match_context    *mctx;
    hs_scratch_t           *proto;      /* fits both databases */
};


/* one literal of a bottle's databases */
typedef struct {
    uint32_t            len;
    uint32_t            secret;     /* index into rule names */
    uint8_t             canary;
} bottle_scan_lit_t;


struct bottle_scan_secrets_s {
    const bottle_scan_db_t *db;
    hs_database_t      *raw;        /* NULL when there is nothing */
    hs_database_t      *skel;
    bottle_scan_lit_t  *raw_lits;
    bottle_scan_lit_t  *skel_lits;
    size_t              nraw;
    size_t              nskel;
    size_t              skel_max;   /* longest skeleton literal */
    size_t              raw_min;    /* shortest raw literal */
    int                 has_canary;
    char              **names;      /* "canary", "egress_token:NAME" */
    size_t              nnames;
    hs_scratch_t       *proto;

    pthread_mutex_t     lock;       /* the fields below */
    bottle_scan_t      *free;
    size_t              nfree;
    size_t              nout;
    int                 dead;
};


/*
 * The skeleton view's map to raw bytes, a run of view bytes at a time:
 * with bit 0 of mask set, the view bytes from vpos on are the raw bytes at
 * rpos + each set bit of mask, in order (letters and digits kept from up to
 * 64 raw bytes); with bit 0 clear, one decoded byte at vpos whose raw span
 * is [rpos, rpos + (mask >> 1)).  vpos is an index into the view's buf.
 * Every view byte is in exactly one segment, in order.
 */
typedef struct {
    uint64_t            mask;
    uint32_t            vpos;
    uint32_t            rpos;
} bottle_scan_seg_t;


typedef struct {
    bottle_scan_t          *s;
    int                     id;         /* BOTTLE_VIEW_* */
    hs_stream_t            *vs;         /* vendor rules */
    hs_stream_t            *is;         /* injection phrases (raw) */
    hs_stream_t            *ls;         /* literals (raw, skeleton) */

    /*
     * buf[0, keep) is the tail of earlier blocks, at view offsets
     * [base, base + keep); the current block follows at buf + keep (decoded
     * views) or is the caller's memory (raw).  map and mlen give each
     * decoded byte's raw span in the field: [map, map + mlen); the skeleton
     * has segments instead (seg, nseg).
     */
    unsigned char          *buf;
    uint32_t               *map;
    uint8_t                *mlen;
    bottle_scan_seg_t      *seg;
    size_t                  nseg;
    size_t                  keep;
    size_t                  tailcap;    /* most bytes kept */
    const unsigned char    *cur;
    size_t                  curlen;
    const unsigned char    *blk;        /* skeleton: the input being
                                           decoded, for looking back */
    uint64_t                base;

    unsigned                active:1;
    unsigned                seeded:1;   /* began after its field did */
    uint64_t                field_start;    /* skeleton: this field's
                                               first view offset */
    /* decoder state */
    int                     dstate;
    unsigned                dval;
    unsigned                dn;
    uint32_t                dstart;     /* raw offset of the escape */
    unsigned char           pend[8];
    uint32_t                pmap[8];
    uint8_t                 plen[8];
} bottle_scan_view_t;


typedef struct {
    uint32_t            len;
    uint64_t            start;
    unsigned            upper:1;
    unsigned            lower:1;
    unsigned            digit:1;
    unsigned char       sym[256];
} bottle_scan_entropy_t;


struct bottle_scan_s {
    bottle_scan_secrets_t  *sec;
    const bottle_scan_db_t *db;
    bottle_scan_t          *next;       /* free list */
    hs_scratch_t           *scratch;
    pcre2_match_data       *md;

    unsigned                detectors;  /* BOTTLE_DLP_* */
    int                     in_field;
    int                     failed;
    int                     field;
    unsigned                ordinal;
    uint64_t                fpos;       /* raw bytes of the field so far */
    unsigned                trig;       /* BOTTLE_TRIG_*, from the skeleton
                                           decoder, for this block */
    unsigned                skip;       /* BOTTLE_SKIP_*: streams a field
                                           too short for them leaves out */
    uint64_t                p2_in;      /* once-decoded view offset the
                                           twice-decoded view has read to */

    bottle_scan_view_t      v[BOTTLE_SCAN_NVIEWS];
    bottle_scan_entropy_t   ent;
    unsigned char          *win;        /* assembled confirm windows */

    bottle_scan_match_t     m[BOTTLE_SCAN_MAX_MATCHES];
    unsigned                mord[BOTTLE_SCAN_MAX_MATCHES];
    size_t                  nm;
    int                     overflow;
    size_t                  dropped;    /* warnings dropped, hits lost */
    bottle_scan_match_t     sorted[BOTTLE_SCAN_MAX_MATCHES];
};


/* bottle_scan_s.skip */
#define BOTTLE_SKIP_VENDOR  1
#define BOTTLE_SKIP_LITS    2


/* bottle_scan_decode.c */

void bottle_scan_decode_init(void);

/* JSON-unescape in into v's current block */
void bottle_scan_json_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, uint32_t off);
/* percent-decode in (with its map, or raw bytes at off when imap NULL) */
void bottle_scan_pct_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, const uint32_t *imap, const uint8_t *ilen, uint32_t off);
/* the separator-stripped, decoded skeleton */
void bottle_scan_skel_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, uint32_t off);
/* emit what a decoder holds at the end of a field */
void bottle_scan_decode_flush(bottle_scan_view_t *v);
/* the raw span of the decoded view byte at buf[i] */
void bottle_scan_view_span(const bottle_scan_view_t *v, size_t i,
    uint32_t *start, uint32_t *end);
/* drops the skeleton's segments before buf[shift], which becomes buf[0] */
void bottle_scan_seg_shift(bottle_scan_view_t *v, size_t shift);
/* the decoders' implementation: 0 scalar, 1 SSSE3 (skeleton), 2 AVX-512
 * BW and VBMI2 (skeleton, text runs of the JSON and percent views); the
 * best the CPU has at most level (-1: the best); returns it.  Not
 * thread-safe: for tests, before scanning */
int bottle_scan_skel_impl(int level);

/* 1 if the block needs the JSON view / the percent views */
int bottle_scan_json_trigger(const unsigned char *p, size_t n);
int bottle_scan_pct_trigger(const unsigned char *p, size_t n, int *twice);

/* the skeleton of a secret: its ASCII letters and digits */
size_t bottle_scan_alnum(unsigned char *out, const unsigned char *in,
    size_t n);
/* base64 of in at alignment k (0-2), only the characters it fixes */
size_t bottle_scan_b64_aligned(char *out, const unsigned char *in, size_t n,
    unsigned k, int url);

void bottle_scan_entropy_feed(bottle_scan_t *s, const unsigned char *p,
    size_t n);
void bottle_scan_entropy_end(bottle_scan_t *s);

/* bottle_scan.c */
bottle_scan_t *bottle_scan_state_new(bottle_scan_secrets_t *sec);
void bottle_scan_state_free(bottle_scan_t *s);
void bottle_scan_add(bottle_scan_t *s, int detector, const char *rule,
    uint64_t start, uint64_t end, int removable, int cross, int view);

/* bottle_scan_cache.c: hs_compile_multi()'s, the database read from
 * dir (NULL: none) when a file there holds it, else compiled and written
 * there */
int bottle_scan_cache_compile(hs_database_t **out, const char *dir,
    const char *name, const char **pats, const unsigned *flags,
    const unsigned *ids, size_t n, unsigned mode, hs_compile_error_t **ce);

/* bottle_scan_rules.c: 1 if the vendor token t[0, n) is a documentation
 * example or a placeholder (docs/dlp.md, "Placeholders") */
int bottle_scan_placeholder(const bottle_scan_db_t *db,
    const bottle_scan_crule_t *cr, const unsigned char *t, size_t n,
    pcre2_match_data *md);

/* the match data's pairs: the most capture groups of a var regex */
#define BOTTLE_SCAN_MD_PAIRS  16

/* bottle_scan_rules.c: the backward JWT confirm; 1 found, 0 no, -1 unknown */
int bottle_scan_jwt(const unsigned char *b, size_t ws, size_t e,
    int at_start, size_t *start);


#endif /* BOTTLE_SCAN_INT_H */
