/*
 * Content codings: decode gzip, deflate and br in a stream for the scanner,
 * encode again after a redaction.  zlib and Debian's libbrotli do the work;
 * this file chains them, bounds them and routes their memory to the
 * caller's allocator.  See bottle_coding.h.
 */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>
#include <brotli/decode.h>
#include <brotli/encode.h>

#include "bottle_coding.h"


#define BOTTLE_CODING_BUF   16384

#define ST_ZLIB_START       0   /* deflate: the format not known yet */
#define ST_RUNNING          1
#define ST_END              2   /* the stream ended; gzip may go on */


typedef struct bottle_decoder_stage_s  bottle_decoder_stage_t;

/* a gzip member's header fields, as zlib fills them in */
typedef struct {
    gz_header                h;
    unsigned char            name[BOTTLE_CODING_HEAD_MAX];
    unsigned char            comment[BOTTLE_CODING_HEAD_MAX];
    unsigned char            extra[BOTTLE_CODING_HEAD_MAX];
} bottle_gzip_head_t;

struct bottle_decoder_stage_s {
    int                      coding;
    int                      state;
    int                      zinit;
    z_stream                 z;
    BrotliDecoderState      *br;
    unsigned char            head[2];   /* deflate: bytes before the format */
    size_t                   head_len;
    uint64_t                 total;
    unsigned char           *out;
    bottle_gzip_head_t      *gzh;       /* with a meta sink only */
};

struct bottle_decoder_s {
    bottle_coding_alloc_t    a;
    bottle_coding_sink_pt    sink;
    bottle_coding_meta_pt    meta;
    void                    *arg;
    uint64_t                 limit;
    size_t                   n;
    int                      error;
    bottle_decoder_stage_t   stage[BOTTLE_CODING_MAX];
};


static int stage_feed(bottle_decoder_t *d, size_t i, const unsigned char *p,
    size_t len);
static int stage_zlib(bottle_decoder_t *d, size_t i, const unsigned char *p,
    size_t len);
static int stage_br(bottle_decoder_t *d, size_t i, const unsigned char *p,
    size_t len);
static int stage_out(bottle_decoder_t *d, size_t i, const unsigned char *p,
    size_t len);
static int zlib_begin(bottle_decoder_t *d, bottle_decoder_stage_t *s,
    int window);
static int gzip_head_begin(bottle_decoder_stage_t *s);
static int gzip_head_report(bottle_decoder_t *d, bottle_decoder_stage_t *s);
static int gzip_head_field(bottle_decoder_t *d, int part,
    const unsigned char *p, size_t len);
static int encode_zlib(int coding, const unsigned char *in, size_t len,
    const bottle_coding_alloc_t *a, unsigned char **out, size_t *out_len);
static int encode_br(const unsigned char *in, size_t len,
    const bottle_coding_alloc_t *a, unsigned char **out, size_t *out_len);
static void *mem_alloc(const bottle_coding_alloc_t *a, size_t size);
static void mem_free(const bottle_coding_alloc_t *a, void *p);
static voidpf z_alloc(voidpf opaque, uInt items, uInt size);
static void z_free(voidpf opaque, voidpf p);
static void *br_alloc(void *opaque, size_t size);
static void br_free(void *opaque, void *p);


static const struct {
    const char  *name;
    size_t       len;
    int          coding;
} codings[] = {
    { "gzip",     4, BOTTLE_CODING_GZIP },
    { "x-gzip",   6, BOTTLE_CODING_GZIP },
    { "deflate",  7, BOTTLE_CODING_DEFLATE },
    { "br",       2, BOTTLE_CODING_BR },
    { "identity", 8, 0 },
};


int
bottle_coding_parse(const char *value, size_t len, int *out, size_t *n)
{
    size_t       i, k, start, end;
    const char  *v;

    *n = 0;
    v = value;
    i = 0;

    for ( ;; ) {
        while (i < len && (v[i] == ' ' || v[i] == '\t')) {
            i++;
        }

        start = i;

        while (i < len && v[i] != ',') {
            i++;
        }

        end = i;

        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t')) {
            end--;
        }

        for (k = 0; k < sizeof(codings) / sizeof(codings[0]); k++) {
            if (codings[k].len == end - start
                && strncasecmp(v + start, codings[k].name, end - start) == 0)
            {
                break;
            }
        }

        if (k == sizeof(codings) / sizeof(codings[0])) {
            return BOTTLE_CODING_EUNKNOWN;
        }

        if (codings[k].coding) {
            if (*n == BOTTLE_CODING_MAX) {
                return BOTTLE_CODING_EUNKNOWN;
            }

            out[(*n)++] = codings[k].coding;
        }

        if (i == len) {
            return BOTTLE_CODING_OK;
        }

        i++;                                    /* the comma */
    }
}


const char *
bottle_coding_name(int coding)
{
    switch (coding) {
    case BOTTLE_CODING_GZIP:
        return "gzip";
    case BOTTLE_CODING_DEFLATE:
        return "deflate";
    case BOTTLE_CODING_BR:
        return "br";
    }

    return "identity";
}


const char *
bottle_coding_strerror(int rc)
{
    switch (rc) {
    case BOTTLE_CODING_OK:
        return "ok";
    case BOTTLE_CODING_EUNKNOWN:
        return "a content coding that is not decoded here";
    case BOTTLE_CODING_ECORRUPT:
        return "not valid data of its content coding";
    case BOTTLE_CODING_ETRUNCATED:
        return "the compressed data ends before its end";
    case BOTTLE_CODING_ELIMIT:
        return "it decodes to more than the size limit";
    case BOTTLE_CODING_ENOMEM:
        return "out of memory";
    case BOTTLE_CODING_EHEADER:
        return "a gzip header field is longer than the scanner reads";
    case BOTTLE_CODING_EOPAQUE:
        return "br metadata blocks cannot be seen by the decoder, so a br "
               "body cannot be scanned whole";
    }

    return "stopped";
}


int
bottle_decoder_create(bottle_decoder_t **dp, const int *list, size_t n,
    uint64_t limit, const bottle_coding_alloc_t *a, bottle_coding_sink_pt sink,
    void *arg)
{
    size_t                   i;
    bottle_decoder_t        *d;
    bottle_decoder_stage_t  *s;
    bottle_coding_alloc_t    def = { NULL, NULL, NULL };

    *dp = NULL;

    if (n == 0 || n > BOTTLE_CODING_MAX) {
        return BOTTLE_CODING_EUNKNOWN;
    }

    if (a == NULL) {
        a = &def;
    }

    d = mem_alloc(a, sizeof(bottle_decoder_t));
    if (d == NULL) {
        return BOTTLE_CODING_ENOMEM;
    }

    memset(d, 0, sizeof(bottle_decoder_t));
    d->a = *a;
    d->sink = sink;
    d->arg = arg;
    d->limit = limit;
    d->n = n;

    /* stage 0 undoes the coding applied last */

    for (i = 0; i < n; i++) {
        s = &d->stage[i];
        s->coding = list[n - 1 - i];

        s->out = mem_alloc(&d->a, BOTTLE_CODING_BUF);
        if (s->out == NULL) {
            d->n = i;
            bottle_decoder_destroy(d);
            return BOTTLE_CODING_ENOMEM;
        }

        switch (s->coding) {

        case BOTTLE_CODING_GZIP:
            if (zlib_begin(d, s, 16 + MAX_WBITS) != BOTTLE_CODING_OK) {
                d->n = i + 1;
                bottle_decoder_destroy(d);
                return BOTTLE_CODING_ENOMEM;
            }

            break;

        case BOTTLE_CODING_DEFLATE:
            s->state = ST_ZLIB_START;
            break;

        case BOTTLE_CODING_BR:
            s->br = BrotliDecoderCreateInstance(br_alloc, br_free, &d->a);
            if (s->br == NULL) {
                d->n = i + 1;
                bottle_decoder_destroy(d);
                return BOTTLE_CODING_ENOMEM;
            }

            s->state = ST_RUNNING;
            break;

        default:
            d->n = i + 1;
            bottle_decoder_destroy(d);
            return BOTTLE_CODING_EUNKNOWN;
        }
    }

    *dp = d;

    return BOTTLE_CODING_OK;
}


int
bottle_decoder_meta(bottle_decoder_t *d, bottle_coding_meta_pt meta)
{
    size_t                   i;
    bottle_decoder_stage_t  *s;

    for (i = 0; i < d->n; i++) {
        s = &d->stage[i];

        if (s->coding == BOTTLE_CODING_BR) {
            return BOTTLE_CODING_EOPAQUE;
        }

        if (s->coding != BOTTLE_CODING_GZIP) {
            continue;
        }

        s->gzh = mem_alloc(&d->a, sizeof(bottle_gzip_head_t));
        if (s->gzh == NULL) {
            return BOTTLE_CODING_ENOMEM;
        }

        if (gzip_head_begin(s) != BOTTLE_CODING_OK) {
            return BOTTLE_CODING_ENOMEM;
        }
    }

    d->meta = meta;

    return BOTTLE_CODING_OK;
}


int
bottle_decoder_feed(bottle_decoder_t *d, const unsigned char *p, size_t len)
{
    if (d->error) {
        return d->error;
    }

    if (len) {
        d->error = stage_feed(d, 0, p, len);
    }

    return d->error;
}


int
bottle_decoder_finish(bottle_decoder_t *d)
{
    size_t                   i;
    bottle_decoder_stage_t  *s;

    if (d->error) {
        return d->error;
    }

    for (i = 0; i < d->n; i++) {
        s = &d->stage[i];

        if (s->state == ST_ZLIB_START && s->head_len == 1) {
            /* one byte is no deflate stream in either format */
            d->error = BOTTLE_CODING_ETRUNCATED;
            return d->error;
        }

        if (s->state != ST_END) {
            d->error = BOTTLE_CODING_ETRUNCATED;
            return d->error;
        }
    }

    return BOTTLE_CODING_OK;
}


uint64_t
bottle_decoder_total(const bottle_decoder_t *d)
{
    return d->n ? d->stage[d->n - 1].total : 0;
}


void
bottle_decoder_destroy(bottle_decoder_t *d)
{
    size_t                   i;
    bottle_decoder_stage_t  *s;

    if (d == NULL) {
        return;
    }

    for (i = 0; i < d->n; i++) {
        s = &d->stage[i];

        if (s->zinit) {
            inflateEnd(&s->z);
        }

        if (s->br) {
            BrotliDecoderDestroyInstance(s->br);
        }

        mem_free(&d->a, s->out);
        mem_free(&d->a, s->gzh);
    }

    mem_free(&d->a, d);
}


static int
stage_feed(bottle_decoder_t *d, size_t i, const unsigned char *p, size_t len)
{
    if (d->stage[i].coding == BOTTLE_CODING_BR) {
        return stage_br(d, i, p, len);
    }

    return stage_zlib(d, i, p, len);
}


static int
zlib_begin(bottle_decoder_t *d, bottle_decoder_stage_t *s, int window)
{
    s->z.zalloc = z_alloc;
    s->z.zfree = z_free;
    s->z.opaque = &d->a;

    if (inflateInit2(&s->z, window) != Z_OK) {
        return BOTTLE_CODING_ENOMEM;
    }

    s->zinit = 1;
    s->state = ST_RUNNING;

    return BOTTLE_CODING_OK;
}


static int
stage_zlib(bottle_decoder_t *d, size_t i, const unsigned char *p, size_t len)
{
    int                      rc, rc2, window;
    size_t                   out;
    unsigned char            head[2];
    bottle_decoder_stage_t  *s;

    s = &d->stage[i];

    if (s->state == ST_ZLIB_START) {

        /* deflate: the zlib format, or raw deflate, by its first 2 bytes */

        while (s->head_len < 2 && len) {
            s->head[s->head_len++] = *p++;
            len--;
        }

        if (s->head_len < 2) {
            return BOTTLE_CODING_OK;
        }

        window = ((s->head[0] & 0x0f) == Z_DEFLATED
                  && (s->head[0] >> 4) + 8 <= MAX_WBITS
                  && ((s->head[0] << 8) | s->head[1]) % 31 == 0)
                 ? MAX_WBITS : -MAX_WBITS;

        if (zlib_begin(d, s, window) != BOTTLE_CODING_OK) {
            return BOTTLE_CODING_ENOMEM;
        }

        memcpy(head, s->head, 2);
        rc = stage_zlib(d, i, head, 2);

        if (rc != BOTTLE_CODING_OK || len == 0) {
            return rc;
        }
    }

    while (len) {

        if (s->state == ST_END) {

            /* gzip members may follow each other; nothing else may */

            if (s->coding != BOTTLE_CODING_GZIP || p[0] != 0x1f
                || inflateReset(&s->z) != Z_OK)
            {
                return BOTTLE_CODING_ECORRUPT;
            }

            /* inflateReset() forgets the header structure: each member's */

            if (s->gzh && gzip_head_begin(s) != BOTTLE_CODING_OK) {
                return BOTTLE_CODING_ECORRUPT;
            }

            s->state = ST_RUNNING;
        }

        s->z.next_in = (unsigned char *) p;
        s->z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt) len;

        for ( ;; ) {
            s->z.next_out = s->out;
            s->z.avail_out = BOTTLE_CODING_BUF;

            rc = inflate(&s->z, Z_NO_FLUSH);

            if (rc == Z_MEM_ERROR) {
                return BOTTLE_CODING_ENOMEM;
            }

            if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
                return BOTTLE_CODING_ECORRUPT;
            }

            out = BOTTLE_CODING_BUF - s->z.avail_out;

            if (out) {
                rc2 = stage_out(d, i, s->out, out);
                if (rc2 != BOTTLE_CODING_OK) {
                    return rc2;
                }
            }

            if (rc == Z_STREAM_END) {
                s->state = ST_END;

                if (s->gzh) {
                    rc2 = gzip_head_report(d, s);
                    if (rc2 != BOTTLE_CODING_OK) {
                        return rc2;
                    }
                }

                break;
            }

            /* room left in the output: all the input was taken */

            if (s->z.avail_out) {
                break;
            }
        }

        len -= (const unsigned char *) s->z.next_in - p;
        p = s->z.next_in;
    }

    return BOTTLE_CODING_OK;
}


static int
stage_br(bottle_decoder_t *d, size_t i, const unsigned char *p, size_t len)
{
    int                      rc;
    size_t                   avail_in, avail_out;
    const uint8_t           *next_in;
    uint8_t                 *next_out;
    BrotliDecoderResult      res;
    bottle_decoder_stage_t  *s;

    s = &d->stage[i];

    if (s->state == ST_END) {
        return BOTTLE_CODING_ECORRUPT;
    }

    next_in = p;
    avail_in = len;

    for ( ;; ) {
        next_out = s->out;
        avail_out = BOTTLE_CODING_BUF;

        res = BrotliDecoderDecompressStream(s->br, &avail_in, &next_in,
                                            &avail_out, &next_out, NULL);

        if (res == BROTLI_DECODER_RESULT_ERROR) {
            return BrotliDecoderGetErrorCode(s->br)
                   <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES
                   && BrotliDecoderGetErrorCode(s->br)
                      >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES
                   ? BOTTLE_CODING_ENOMEM : BOTTLE_CODING_ECORRUPT;
        }

        if (next_out != s->out) {
            rc = stage_out(d, i, s->out, next_out - s->out);
            if (rc != BOTTLE_CODING_OK) {
                return rc;
            }
        }

        if (res == BROTLI_DECODER_RESULT_SUCCESS) {
            s->state = ST_END;
            return avail_in ? BOTTLE_CODING_ECORRUPT : BOTTLE_CODING_OK;
        }

        if (res == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
            return BOTTLE_CODING_OK;
        }

        /* BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: go round */
    }
}


/* zlib fills in the next gzip header it reads; fields it lacks: Z_NULL */

static int
gzip_head_begin(bottle_decoder_stage_t *s)
{
    bottle_gzip_head_t  *g;

    g = s->gzh;

    memset(&g->h, 0, sizeof(gz_header));
    g->h.name = g->name;
    g->h.name_max = BOTTLE_CODING_HEAD_MAX;
    g->h.comment = g->comment;
    g->h.comm_max = BOTTLE_CODING_HEAD_MAX;
    g->h.extra = g->extra;
    g->h.extra_max = BOTTLE_CODING_HEAD_MAX;

    return inflateGetHeader(&s->z, &g->h) == Z_OK ? BOTTLE_CODING_OK
                                                    : BOTTLE_CODING_ENOMEM;
}


/*
 * A member ended: its header's fields to the meta sink.  zlib stores a
 * string with its NUL while there is room and reads on past it, so one
 * with no NUL in its buffer was cut and would be seen only in part:
 * refused, as is an extra field longer than its buffer.
 */

static int
gzip_head_report(bottle_decoder_t *d, bottle_decoder_stage_t *s)
{
    int                  rc;
    size_t               len;
    unsigned char       *nul, fixed[6];
    bottle_gzip_head_t  *g;

    g = s->gzh;

    if (g->h.done != 1) {
        return BOTTLE_CODING_ECORRUPT;
    }

    /* MTIME (little-endian), XFL, OS: as they were sent */

    fixed[0] = (unsigned char) (g->h.time & 0xff);
    fixed[1] = (unsigned char) ((g->h.time >> 8) & 0xff);
    fixed[2] = (unsigned char) ((g->h.time >> 16) & 0xff);
    fixed[3] = (unsigned char) ((g->h.time >> 24) & 0xff);
    fixed[4] = (unsigned char) g->h.xflags;
    fixed[5] = (unsigned char) g->h.os;

    if (d->meta(d->arg, BOTTLE_CODING_META_FIXED, fixed, 6)) {
        return BOTTLE_CODING_ESINK;
    }

    if (g->h.name) {
        nul = memchr(g->name, '\0', BOTTLE_CODING_HEAD_MAX);
        if (nul == NULL) {
            return BOTTLE_CODING_EHEADER;
        }

        len = nul - g->name;

        rc = gzip_head_field(d, BOTTLE_CODING_META_NAME, g->name, len);
        if (rc != BOTTLE_CODING_OK) {
            return rc;
        }
    }

    if (g->h.comment) {
        nul = memchr(g->comment, '\0', BOTTLE_CODING_HEAD_MAX);
        if (nul == NULL) {
            return BOTTLE_CODING_EHEADER;
        }

        len = nul - g->comment;

        rc = gzip_head_field(d, BOTTLE_CODING_META_COMMENT, g->comment,
                             len);
        if (rc != BOTTLE_CODING_OK) {
            return rc;
        }
    }

    if (g->h.extra) {
        if (g->h.extra_len > BOTTLE_CODING_HEAD_MAX) {
            return BOTTLE_CODING_EHEADER;
        }

        return gzip_head_field(d, BOTTLE_CODING_META_EXTRA, g->extra,
                               g->h.extra_len);
    }

    return BOTTLE_CODING_OK;
}


static int
gzip_head_field(bottle_decoder_t *d, int part, const unsigned char *p,
    size_t len)
{
    if (len == 0) {
        return BOTTLE_CODING_OK;
    }

    return d->meta(d->arg, part, p, len) ? BOTTLE_CODING_ESINK
                                         : BOTTLE_CODING_OK;
}


/* a stage's output: the next stage's input, or the sink's */

static int
stage_out(bottle_decoder_t *d, size_t i, const unsigned char *p, size_t len)
{
    bottle_decoder_stage_t  *s;

    s = &d->stage[i];

    if (len > d->limit - s->total) {
        return BOTTLE_CODING_ELIMIT;
    }

    s->total += len;

    if (i + 1 < d->n) {
        return stage_feed(d, i + 1, p, len);
    }

    return d->sink(d->arg, p, len) ? BOTTLE_CODING_ESINK : BOTTLE_CODING_OK;
}


int
bottle_coding_encode(const int *list, size_t n, const unsigned char *in,
    size_t len, const bottle_coding_alloc_t *a, unsigned char **out,
    size_t *out_len)
{
    int                     rc;
    size_t                  i, cur_len;
    unsigned char          *cur, *next;
    bottle_coding_alloc_t   def = { NULL, NULL, NULL };

    if (a == NULL) {
        a = &def;
    }

    cur = (unsigned char *) in;
    cur_len = len;

    for (i = 0; i < n; i++) {
        if (list[i] == BOTTLE_CODING_BR) {
            rc = encode_br(cur, cur_len, a, &next, &cur_len);

        } else if (list[i] == BOTTLE_CODING_GZIP
                   || list[i] == BOTTLE_CODING_DEFLATE)
        {
            rc = encode_zlib(list[i], cur, cur_len, a, &next, &cur_len);

        } else {
            rc = BOTTLE_CODING_EUNKNOWN;
        }

        if (cur != in) {
            mem_free(a, cur);
        }

        if (rc != BOTTLE_CODING_OK) {
            return rc;
        }

        cur = next;
    }

    *out = cur;
    *out_len = cur_len;

    return BOTTLE_CODING_OK;
}


static int
encode_zlib(int coding, const unsigned char *in, size_t len,
    const bottle_coding_alloc_t *a, unsigned char **out, size_t *out_len)
{
    int        rc;
    size_t     cap;
    z_stream   z;

    if (len > UINT32_MAX / 2) {
        return BOTTLE_CODING_ELIMIT;
    }

    memset(&z, 0, sizeof(z_stream));
    z.zalloc = z_alloc;
    z.zfree = z_free;
    z.opaque = (voidpf) a;

    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                     coding == BOTTLE_CODING_GZIP ? 16 + MAX_WBITS : MAX_WBITS,
                     8, Z_DEFAULT_STRATEGY)
        != Z_OK)
    {
        return BOTTLE_CODING_ENOMEM;
    }

    /* deflateBound() counts the zlib wrapper; a gzip one is 12 bytes more */
    cap = deflateBound(&z, len) + 12;

    *out = mem_alloc(a, cap);
    if (*out == NULL) {
        deflateEnd(&z);
        return BOTTLE_CODING_ENOMEM;
    }

    z.next_in = (unsigned char *) in;
    z.avail_in = len;
    z.next_out = *out;
    z.avail_out = cap;

    rc = deflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);

    if (rc != Z_STREAM_END) {
        mem_free(a, *out);
        return BOTTLE_CODING_ENOMEM;
    }

    return BOTTLE_CODING_OK;
}


static int
encode_br(const unsigned char *in, size_t len, const bottle_coding_alloc_t *a,
    unsigned char **out, size_t *out_len)
{
    size_t               cap, avail_in, avail_out;
    const uint8_t       *next_in;
    uint8_t             *next_out;
    BROTLI_BOOL          ok;
    BrotliEncoderState  *br;

    cap = BrotliEncoderMaxCompressedSize(len);
    if (cap == 0) {
        return BOTTLE_CODING_ELIMIT;
    }

    br = BrotliEncoderCreateInstance(br_alloc, br_free, (void *) a);
    if (br == NULL) {
        return BOTTLE_CODING_ENOMEM;
    }

    /* quality 5: near the default's ratio for text at a fraction of its CPU */
    BrotliEncoderSetParameter(br, BROTLI_PARAM_QUALITY, 5);
    BrotliEncoderSetParameter(br, BROTLI_PARAM_SIZE_HINT,
                              len > UINT32_MAX ? UINT32_MAX : (uint32_t) len);

    *out = mem_alloc(a, cap);
    if (*out == NULL) {
        BrotliEncoderDestroyInstance(br);
        return BOTTLE_CODING_ENOMEM;
    }

    next_in = in;
    avail_in = len;
    next_out = *out;
    avail_out = cap;

    ok = BrotliEncoderCompressStream(br, BROTLI_OPERATION_FINISH, &avail_in,
                                     &next_in, &avail_out, &next_out, NULL);

    ok = ok && BrotliEncoderIsFinished(br);
    BrotliEncoderDestroyInstance(br);

    if (!ok) {
        mem_free(a, *out);
        return BOTTLE_CODING_ENOMEM;
    }

    *out_len = cap - avail_out;

    return BOTTLE_CODING_OK;
}


static void *
mem_alloc(const bottle_coding_alloc_t *a, size_t size)
{
    return a->alloc ? a->alloc(a->opaque, size) : malloc(size);
}


static void
mem_free(const bottle_coding_alloc_t *a, void *p)
{
    if (p == NULL) {
        return;
    }

    if (a->alloc) {
        if (a->free) {
            a->free(a->opaque, p);
        }

        return;
    }

    free(p);
}


static voidpf
z_alloc(voidpf opaque, uInt items, uInt size)
{
    if (size && items > SIZE_MAX / size) {
        return Z_NULL;
    }

    return mem_alloc(opaque, (size_t) items * size);
}


static void
z_free(voidpf opaque, voidpf p)
{
    mem_free(opaque, p);
}


static void *
br_alloc(void *opaque, size_t size)
{
    return mem_alloc(opaque, size);
}


static void
br_free(void *opaque, void *p)
{
    mem_free(opaque, p);
}
