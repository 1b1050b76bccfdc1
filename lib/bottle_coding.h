/*
 * Content codings (gzip, deflate, br) for the DLP: a compressed request
 * body is decoded for scanning, in a stream, bounded in size; a redacted
 * one is encoded again the way it came (docs/dlp.md, "Compressed bodies").
 * The inbound detectors decode response bodies the same way.
 *
 * A Content-Encoding lists the codings in the order they were applied;
 * bottle_coding_parse() reads it (identity entries dropped) and the
 * decoder undoes them last to first.  Everything the libraries allocate
 * comes from the caller's allocator (a request pool in nginx).
 *
 * No nginx types: shared by the nginx module and git-gate.
 */

#ifndef BOTTLE_CODING_H
#define BOTTLE_CODING_H

#include <stddef.h>
#include <stdint.h>


#define BOTTLE_CODING_GZIP          1
#define BOTTLE_CODING_DEFLATE       2
#define BOTTLE_CODING_BR            3

#define BOTTLE_CODING_MAX           3       /* codings stacked on one body */

#define BOTTLE_CODING_OK            0
#define BOTTLE_CODING_EUNKNOWN     -1       /* a coding not decoded here */
#define BOTTLE_CODING_ECORRUPT     -2       /* not data of its coding */
#define BOTTLE_CODING_ETRUNCATED   -3       /* ends before its end */
#define BOTTLE_CODING_ELIMIT       -4       /* decodes to more than the limit */
#define BOTTLE_CODING_ENOMEM       -5
#define BOTTLE_CODING_ESINK        -6       /* the sink said stop */
#define BOTTLE_CODING_EHEADER      -7       /* a gzip header field too long */
#define BOTTLE_CODING_EOPAQUE      -8       /* parts the decoder cannot show */

/* each gzip header field (FNAME, FCOMMENT, FEXTRA) the decoder shows */
#define BOTTLE_CODING_HEAD_MAX      4096

/* which part of a gzip header a meta sink is shown */
#define BOTTLE_CODING_META_FIXED    0       /* MTIME, XFL, OS: 6 bytes */
#define BOTTLE_CODING_META_NAME     1
#define BOTTLE_CODING_META_COMMENT  2
#define BOTTLE_CODING_META_EXTRA    3


typedef struct {
    void   *(*alloc)(void *opaque, size_t size);    /* NULL: malloc */
    void    (*free)(void *opaque, void *p);         /* may do nothing */
    void    *opaque;
} bottle_coding_alloc_t;

/* where decoded bytes go; non-zero stops the decoder (BOTTLE_CODING_ESINK) */
typedef int (*bottle_coding_sink_pt)(void *arg, const unsigned char *p,
    size_t len);

/* the same for the parts of a wrapper: non-zero stops the decoder */
typedef int (*bottle_coding_meta_pt)(void *arg, int part,
    const unsigned char *p, size_t len);

typedef struct bottle_decoder_s  bottle_decoder_t;


/*
 * A Content-Encoding value ("gzip", "deflate, br", "x-gzip", any case, with
 * spaces): *n codings into codings[BOTTLE_CODING_MAX], in the order they
 * were applied, identity dropped.  EUNKNOWN for any other coding, an empty
 * entry, or more than BOTTLE_CODING_MAX.  *n == 0 means identity.
 */
int bottle_coding_parse(const char *value, size_t len, int *codings,
    size_t *n);

const char *bottle_coding_name(int coding);
const char *bottle_coding_strerror(int rc);

/*
 * A decoder undoing codings[0..n-1] (n >= 1), sending the decoded bytes to
 * sink.  Each stage's output is bounded by limit bytes (ELIMIT beyond), so
 * a small body cannot expand without bound at any stage.  gzip takes
 * several members in a row; deflate is the zlib format, or raw deflate when
 * the first two bytes are not a zlib header (as some clients send it).
 * Bytes after the end of a stream are ECORRUPT.
 */
int bottle_decoder_create(bottle_decoder_t **d, const int *codings, size_t n,
    uint64_t limit, const bottle_coding_alloc_t *a, bottle_coding_sink_pt sink,
    void *arg);
int bottle_decoder_feed(bottle_decoder_t *d, const unsigned char *p,
    size_t len);
/*
 * Where the bytes a decoded view leaves out go: for every gzip member at
 * every stage, its MTIME, XFL and OS bytes as sent (6 bytes, any values:
 * a few bytes a member add up over many members), then its FNAME,
 * FCOMMENT and FEXTRA when present, one call per part (EHEADER for a field
 * longer than BOTTLE_CODING_HEAD_MAX, which would be seen only in part).
 * A br stage makes it EOPAQUE: libbrotlidec 1.0.9 skips a stream's
 * metadata blocks without showing them, and they cannot be found without
 * decoding the stream.  Call before the first feed.
 */
int bottle_decoder_meta(bottle_decoder_t *d, bottle_coding_meta_pt meta);
/* the input is complete: ETRUNCATED unless every stream ended */
int bottle_decoder_finish(bottle_decoder_t *d);
/* decoded bytes sent to the sink so far */
uint64_t bottle_decoder_total(const bottle_decoder_t *d);
void bottle_decoder_destroy(bottle_decoder_t *d);

/*
 * Encode in with codings[0..n-1], in that order, into one buffer from the
 * allocator: *out, *out_len.
 */
int bottle_coding_encode(const int *codings, size_t n, const unsigned char *in,
    size_t len, const bottle_coding_alloc_t *a, unsigned char **out,
    size_t *out_len);

#endif /* BOTTLE_CODING_H */
