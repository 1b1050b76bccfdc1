
/*
 * The record of a request (bottle_record.h): scrubbing, and the two JSON
 * forms built from one bottle_record_t, the full log's lines and the
 * firehose's OCSF HTTP Activity record (docs/full-log.md,
 * docs/firehose.md).
 *
 * The JSON is written straight into one growing buffer, every write
 * checked against its room: a record is built once per request while a
 * consumer is attached, and a JSON library's tree of small values cost
 * more than the rest of the record (issue 17).  Member order and escapes
 * are those the records had when jansson built them (JSON_COMPACT,
 * JSON_PRESERVE_ORDER): strings as jansson escapes them, a body as
 * record_escape() does, last in its object.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_decide.h"
#include "bottle_record.h"
#include "bottle_scan_int.h"


static const struct {
    const char  *name;
    int          id;
} bottle_ocsf_methods[] = {
    { "CONNECT", 1 }, { "DELETE", 2 }, { "GET", 3 }, { "HEAD", 4 },
    { "OPTIONS", 5 }, { "POST", 6 }, { "PUT", 7 }, { "TRACE", 8 },
    { NULL, 0 }
};


/*
 * The next occurrence of s (slen >= 2) in [p, end): Horspool's search,
 * which on text skips about slen bytes a step, where a search for the
 * first byte would stop at every common letter.
 */

static unsigned char *
record_find(unsigned char *p, unsigned char *end, const unsigned char *s,
    size_t slen, const unsigned char *shift)
{
    unsigned char  last = s[slen - 1];

    while ((size_t) (end - p) >= slen) {
        if (p[slen - 1] == last && memcmp(p, s, slen - 1) == 0) {
            return p;
        }

        p += shift[p[slen - 1]];
    }

    return NULL;
}


/*
 * Every occurrence of s in buf masked; with cut (buf is the first part of
 * something longer), also the longest tail of buf, of cut bytes or more,
 * that begins s.
 */

static void
record_mask_one(unsigned char *buf, size_t len, const char *s, size_t slen,
    size_t cut, size_t *n)
{
    size_t          i, k, tail;
    unsigned char  *p, *end;
    unsigned char   shift[256];

    if (slen == 0 || len == 0) {
        return;
    }

    p = buf;
    end = buf + len;

    if (len >= 256 && slen >= 2 && slen <= 255) {

        /* a body: the shift table pays for itself */

        memset(shift, (int) slen, sizeof(shift));

        for (i = 0; i < slen - 1; i++) {
            shift[(unsigned char) s[i]] = (unsigned char) (slen - 1 - i);
        }

        while ((p = record_find(p, end, (const unsigned char *) s, slen,
                                shift))
               != NULL)
        {
            memset(p, '*', slen);
            p += slen;
            (*n)++;
        }

    } else {
        while ((size_t) (end - p) >= slen) {
            p = memchr(p, (unsigned char) s[0], end - p - slen + 1);
            if (p == NULL) {
                break;
            }

            if (memcmp(p, s, slen) != 0) {
                p++;
                continue;
            }

            memset(p, '*', slen);
            p += slen;
            (*n)++;
        }
    }

    if (!cut) {
        return;
    }

    /* the longest tail of buf that begins the secret */

    tail = (len < slen) ? len : slen - 1;

    for (k = tail; k > 0 && k >= cut; k--) {
        if (memcmp(buf + len - k, s, k) == 0) {
            memset(buf + len - k, '*', k);
            (*n)++;
            return;
        }
    }
}


/*
 * A bottle's secrets as the records mask them: each value as it is and,
 * as the DLP looks for them (bottle_scan_secrets.c), its base64 (standard
 * and URL alphabets, at the three alignments, the characters the value
 * alone fixes: bottle_scan_b64_aligned()) when it is long enough, and its
 * percent-encodings (every byte as %XX, or only those outside the
 * unreserved characters, hex upper or lower case).  Built once per record.
 */

#define RECORD_FORM_LITERAL  0
#define RECORD_FORM_B64      1
#define RECORD_FORM_PCT      2

/* a value's: itself, six base64, four percent */
#define RECORD_FORMS_EACH    11

/*
 * The shortest tail a cut leaves of an encoded form that is masked: one
 * or two characters begin some base64 form more often than not.
 */
#define RECORD_FORM_TAIL     4


typedef struct {
    const char      *data;
    size_t           len;
    unsigned         kind;
} record_form_t;


typedef struct {
    record_form_t   *forms;
    size_t           n;
    char            *mem;
    size_t           b64_min;    /* the shortest base64 form; 0: none */
    unsigned         pct:1;      /* a percent form */
    unsigned         built:1;
} record_scrub_t;


static int
record_unreserved(unsigned c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
           || c == '~';
}


static void
record_form_add(record_scrub_t *sc, size_t first, const char *data,
    size_t len, unsigned kind)
{
    size_t  i;

    /* the same bytes as one of this value's forms: once is enough */

    for (i = first; i < sc->n; i++) {
        if (sc->forms[i].len == len
            && memcmp(sc->forms[i].data, data, len) == 0)
        {
            return;
        }
    }

    sc->forms[sc->n].data = data;
    sc->forms[sc->n].len = len;
    sc->forms[sc->n].kind = kind;
    sc->n++;

    if (kind == RECORD_FORM_B64 && (sc->b64_min == 0 || len < sc->b64_min)) {
        sc->b64_min = len;
    }

    if (kind == RECORD_FORM_PCT) {
        sc->pct = 1;
    }
}


static char *
record_form_pct(record_scrub_t *sc, size_t first, char *p,
    const unsigned char *v, size_t n, int all, int lower)
{
    char        *start = p;
    size_t       i;
    const char  *hex;

    hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";

    for (i = 0; i < n; i++) {
        if (!all && record_unreserved(v[i])) {
            *p++ = (char) v[i];
            continue;
        }

        *p++ = '%';
        *p++ = hex[v[i] >> 4];
        *p++ = hex[v[i] & 0xf];
    }

    /* the unreserved-only form of a value with nothing to encode is it */

    if ((size_t) (p - start) == n) {
        return start;
    }

    record_form_add(sc, first, start, p - start, RECORD_FORM_PCT);

    return p;
}


static void
record_forms_one(record_scrub_t *sc, char **mem, const char *v, size_t n)
{
    int           url;
    char         *p;
    size_t        first, m;
    unsigned      k;

    if (n == 0) {
        return;
    }

    first = sc->n;
    p = *mem;

    record_form_add(sc, first, v, n, RECORD_FORM_LITERAL);

    /* base64: too short a form would mask what merely looks like it */

    for (url = 0; n >= BOTTLE_SCAN_SECRET_MIN && url < 2; url++) {
        for (k = 0; k < 3; k++) {
            m = bottle_scan_b64_aligned(p, (const unsigned char *) v, n, k,
                                        url);
            if (m >= BOTTLE_SCAN_SECRET_MIN) {
                record_form_add(sc, first, p, m, RECORD_FORM_B64);
                p += m;
            }
        }
    }

    p = record_form_pct(sc, first, p, (const unsigned char *) v, n, 1, 0);
    p = record_form_pct(sc, first, p, (const unsigned char *) v, n, 1, 1);
    p = record_form_pct(sc, first, p, (const unsigned char *) v, n, 0, 0);
    p = record_form_pct(sc, first, p, (const unsigned char *) v, n, 0, 1);

    *mem = p;
}


static int
record_scrub_build(record_scrub_t *sc, const bottle_t *b)
{
    char    *p;
    size_t   i, nv, size, n;

    memset(sc, 0, sizeof(record_scrub_t));
    sc->built = 1;

    if (b == NULL) {
        return 0;
    }

    nv = 1 + b->negress_tokens + b->nheld_secrets;
    size = 0;

    for (i = 0; i < nv; i++) {
        n = (i == 0) ? b->canary.len
            : (i <= b->negress_tokens) ? b->egress_tokens[i - 1].value.len
            : b->held_secrets[i - 1 - b->negress_tokens].value.len;

        if (n > 65536) {
            return -1;
        }

        /* six base64 forms of n * 4 / 3 + 4, four of 3 n at most */
        size += 6 * (n * 4 / 3 + 4) + 4 * 3 * n;
    }

    sc->forms = malloc(nv * RECORD_FORMS_EACH * sizeof(record_form_t));
    sc->mem = malloc(size ? size : 1);

    if (sc->forms == NULL || sc->mem == NULL) {
        free(sc->forms);
        free(sc->mem);
        memset(sc, 0, sizeof(record_scrub_t));
        return -1;
    }

    p = sc->mem;

    record_forms_one(sc, &p, b->canary.data, b->canary.len);

    for (i = 0; i < b->negress_tokens; i++) {
        record_forms_one(sc, &p, b->egress_tokens[i].value.data,
                         b->egress_tokens[i].value.len);
    }

    for (i = 0; i < b->nheld_secrets; i++) {
        record_forms_one(sc, &p, b->held_secrets[i].value.data,
                         b->held_secrets[i].value.len);
    }

    return 0;
}


static void
record_scrub_free(record_scrub_t *sc)
{
    free(sc->forms);
    free(sc->mem);
    memset(sc, 0, sizeof(record_scrub_t));
}


/* a character of a base64 run, either alphabet (and a few more: a bound) */

static int
record_b64_char(unsigned c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '+' && c <= '9') || c == '_';
}


#if defined(__SSE2__)

/* the 16 bytes at p, one bit each: a base64 run's character or not */

static inline unsigned
record_b64_block(const unsigned char *p)
{
    __m128i  v, m;

    v = _mm_loadu_si128((const __m128i *) p);

    m = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                      _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
    m = _mm_or_si128(m, _mm_and_si128(
                         _mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                         _mm_cmplt_epi8(v, _mm_set1_epi8('z' + 1))));
    m = _mm_or_si128(m, _mm_and_si128(
                         _mm_cmpgt_epi8(v, _mm_set1_epi8('+' - 1)),
                         _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1))));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));

    return (unsigned) _mm_movemask_epi8(m);
}

#endif


/* the base64 forms in one run of base64 characters, [s, e) of buf */

static void
record_scrub_run(const record_scrub_t *sc, unsigned char *buf, size_t len,
    size_t s, size_t e, int cut, size_t *n)
{
    size_t  i;

    for (i = 0; i < sc->n; i++) {
        if (sc->forms[i].kind == RECORD_FORM_B64) {
            record_mask_one(buf + s, e - s, sc->forms[i].data,
                            sc->forms[i].len,
                            (cut && e == len) ? RECORD_FORM_TAIL : 0, n);
        }
    }
}


/*
 * The base64 forms, searched only in runs of base64 characters as long as
 * the shortest form (or cut short by the end): text, whose runs are
 * words, costs one pass of classification, 16 bytes a step with SSE2.
 */

static void
record_scrub_b64(const record_scrub_t *sc, unsigned char *buf, size_t len,
    int cut, size_t *n)
{
    size_t    i, s, min;
#if defined(__SSE2__)
    size_t    at, e, done;
    unsigned  m;
#endif

    min = sc->b64_min;
    i = 0;

#if defined(__SSE2__)
    /*
     * A run of min >= 31 characters holds a whole aligned 16-byte block,
     * one of min >= 15 a whole aligned 8-byte half: only such blocks are
     * looked at more closely.
     */

    if (min >= 15) {
        done = 0;

        while (i + 16 <= len) {
            m = record_b64_block(buf + i);

            if (m == 0xffff) {
                at = i;

            } else if (min < 31 && (m & 0xff) == 0xff) {
                at = i;

            } else if (min < 31 && (m >> 8) == 0xff) {
                at = i + 8;

            } else {
                i += 16;
                continue;
            }

            for (s = at; s > 0 && record_b64_char(buf[s - 1]); s--) {
                /* void */
            }

            for (e = at; e < len && record_b64_char(buf[e]); e++) {
                /* void */
            }

            if (e - s >= min || (cut && e == len)) {
                record_scrub_run(sc, buf, len, s, e, cut, n);
            }

            /* on after the run, at least a step */
            i = (e > i) ? e : i + 16;
            done = i;
        }

        /*
         * The last bytes, short of a block, byte by byte below, from the
         * start of the run they may be the end of (if it was not done).
         */

        while (i > done && record_b64_char(buf[i - 1])) {
            i--;
        }
    }
#endif

    while (i < len) {
        if (!record_b64_char(buf[i])) {
            i++;
            continue;
        }

        for (s = i; i < len && record_b64_char(buf[i]); i++) {
            /* void */
        }

        if (i - s >= min || (cut && i == len)) {
            record_scrub_run(sc, buf, len, s, i, cut, n);
        }
    }
}


static size_t
record_scrub_with(const record_scrub_t *sc, unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < sc->n; i++) {
        if (sc->forms[i].kind == RECORD_FORM_LITERAL) {
            record_mask_one(buf, len, sc->forms[i].data, sc->forms[i].len,
                            cut ? 1 : 0, &n);
        }
    }

    /* every percent form has a '%', or the tail the cut leaves may be one */

    if (sc->pct && len
        && (memchr(buf, '%', len) != NULL || (cut && buf[len - 1] == '%')))
    {
        for (i = 0; i < sc->n; i++) {
            if (sc->forms[i].kind == RECORD_FORM_PCT) {
                record_mask_one(buf, len, sc->forms[i].data,
                                sc->forms[i].len, cut ? RECORD_FORM_TAIL : 0,
                                &n);
            }
        }
    }

    if (sc->b64_min) {
        record_scrub_b64(sc, buf, len, cut, &n);
    }

    return n;
}


/* the values as they are only: when their forms found no memory */

static size_t
record_scrub_literal(const bottle_t *b, unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n;

    n = 0;

    record_mask_one(buf, len, b->canary.data, b->canary.len, cut ? 1 : 0,
                    &n);

    for (i = 0; i < b->negress_tokens; i++) {
        record_mask_one(buf, len, b->egress_tokens[i].value.data,
                        b->egress_tokens[i].value.len, cut ? 1 : 0, &n);
    }

    for (i = 0; i < b->nheld_secrets; i++) {
        record_mask_one(buf, len, b->held_secrets[i].value.data,
                        b->held_secrets[i].value.len, cut ? 1 : 0, &n);
    }

    return n;
}


/*
 * 0 if no encoded form can be in a short buf (no '%', no run of base64
 * characters as long as the shortest base64 form can be, none a cut
 * leaves at its end): then the values as they are do, and the forms need
 * not be made.  A long buf (a body) is searched for them all.
 */

static int
record_scrub_needed(const bottle_t *b, const unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n, lb, run, longest;

    if (len >= 256 || memchr(buf, '%', len) != NULL) {
        return 1;
    }

    /* a base64 form of n bytes has n * 4 / 3 - 2 characters at least */

    lb = 0;

    for (i = 0; i < 1 + b->negress_tokens + b->nheld_secrets; i++) {
        n = (i == 0) ? b->canary.len
            : (i <= b->negress_tokens) ? b->egress_tokens[i - 1].value.len
            : b->held_secrets[i - 1 - b->negress_tokens].value.len;

        if (n >= BOTTLE_SCAN_SECRET_MIN && (lb == 0 || n * 4 / 3 - 2 < lb)) {
            lb = n * 4 / 3 - 2;
        }
    }

    if (lb == 0) {
        return 0;
    }

    for (i = 0, run = 0, longest = 0; i < len; i++) {
        run = record_b64_char(buf[i]) ? run + 1 : 0;
        longest = (run > longest) ? run : longest;
    }

    return longest >= lb || (cut && run >= RECORD_FORM_TAIL);
}


size_t
bottle_record_scrub(const bottle_t *b, unsigned char *buf, size_t len,
    int cut)
{
    size_t          n;
    record_scrub_t  sc;

    if (b != NULL && !record_scrub_needed(b, buf, len, cut)) {
        return record_scrub_literal(b, buf, len, cut);
    }

    if (b == NULL || record_scrub_build(&sc, b) != 0) {
        /* out of memory: the values as they are, at least */
        return (b == NULL) ? 0 : record_scrub_literal(b, buf, len, cut);
    }

    n = record_scrub_with(&sc, buf, len, cut);
    record_scrub_free(&sc);

    return n;
}


int
bottle_record_credential(const bottle_route_t *route, const char *name,
    size_t len)
{
    static const char  *creds[] = {
        "authorization", "proxy-authorization", "cookie", "set-cookie",
        NULL
    };

    const char      **c;
    bottle_route_t    r;

    for (c = creds; *c; c++) {
        if (strlen(*c) == len && strncasecmp(*c, name, len) == 0) {
            return 1;
        }
    }

    if (route != NULL && route->auth_header.len == len && len
        && strncasecmp(route->auth_header.data, name, len) == 0)
    {
        return 1;
    }

    /*
     * Every header the gateway strips as a credential (Private-Token,
     * X-Api-Key, ...), also on a preserve_auth route, where they go
     * upstream but are no less credentials for a record.
     */

    if (route && !route->preserve_auth) {
        return bottle_decide_strips(route, name, len);
    }

    if (route) {
        r = *route;
    } else {
        memset(&r, 0, sizeof(r));
    }

    r.preserve_auth = 0;

    return bottle_decide_strips(&r, name, len);
}


/*
 * Eight bytes at a time: a word with no byte that the caller looks for is
 * passed over whole.  Each test says only whether some byte of the word
 * matches; the bytes are then looked at one by one.
 */

#define RECORD_ONES   0x0101010101010101ULL
#define RECORD_HIGHS  0x8080808080808080ULL

#define record_has_zero(x)  (((x) - RECORD_ONES) & ~(x) & RECORD_HIGHS)
#define record_has_byte(x, c)  record_has_zero((x) ^ (RECORD_ONES * (c)))
#define record_has_less(x, n)  (((x) - RECORD_ONES * (n)) & ~(x)          \
                                & RECORD_HIGHS)


static inline uint64_t
record_word(const unsigned char *p)
{
    uint64_t  w;

    memcpy(&w, p, 8);
    return w;
}


/* a body's bytes that record_escape() writes as more than themselves */

#define record_word_escapes(w)                                                \
    (record_has_less(w, 0x20) | record_has_byte(w, '"')                       \
     | record_has_byte(w, '\\') | record_has_byte(w, 0x7f))


/*
 * The length of buf's valid UTF-8 prefix; with cut, a sequence the cut
 * split at the end does not count against it.  *whole: all of buf is
 * valid (but for that split tail).
 */

static size_t
record_utf8(const unsigned char *buf, size_t len, int cut, int *whole)
{
    size_t    i, k, need;
    unsigned  c;

    *whole = 1;

    for (i = 0; i < len; i += need) {

        /* ASCII runs, the most of most bodies, a block at a time */

#if defined(__SSE2__)
        while (i + 16 <= len
               && _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)
                                                    (buf + i))) == 0)
        {
            i += 16;
        }
#endif

        while (i + 8 <= len && (record_word(buf + i) & RECORD_HIGHS) == 0) {
            i += 8;
        }

        if (i >= len) {
            break;
        }

        c = buf[i];

        if (c < 0x80) {
            need = 1;
            continue;
        }

        if (c >= 0xc2 && c <= 0xdf) {
            need = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 4;
        } else {
            *whole = 0;
            return i;
        }

        if (i + need > len) {
            *whole = cut;
            return i;
        }

        for (k = 1; k < need; k++) {
            if ((buf[i + k] & 0xc0) != 0x80) {
                *whole = 0;
                return i;
            }
        }

        /* overlong, surrogates, beyond U+10FFFF */
        if ((c == 0xe0 && buf[i + 1] < 0xa0)
            || (c == 0xed && buf[i + 1] > 0x9f)
            || (c == 0xf0 && buf[i + 1] < 0x90)
            || (c == 0xf4 && buf[i + 1] > 0x8f))
        {
            *whole = 0;
            return i;
        }
    }

    return len;
}


/* every byte of buf that is not in valid UTF-8 becomes '?' */

static void
record_utf8_fix(unsigned char *buf, size_t len)
{
    int     whole;
    size_t  off, ok;

    for (off = 0; off < len; off += ok + 1) {
        ok = record_utf8(buf + off, len - off, 0, &whole);
        if (off + ok >= len) {
            break;
        }

        buf[off + ok] = '?';
    }
}


/*
 * The JSON being written: one malloc()ed buffer, head bytes left free
 * before the record (a transport's framing) and room kept for tail bytes
 * after it; every write is checked, and the first that finds no memory
 * fails the record.  scratch holds the copy of a value being scrubbed.
 */

typedef struct {
    char            *buf;
    size_t           len;
    size_t           cap;
    size_t           tail;
    unsigned char   *scratch;
    size_t           scratch_cap;
    record_scrub_t   scrub;      /* the record's bottle's, when first used */
    int              failed;
} record_out_t;


static int
record_out_init(record_out_t *o, size_t size, size_t head, size_t tail)
{
    memset(o, 0, sizeof(record_out_t));

    o->cap = head + size + tail + 1;
    o->buf = malloc(o->cap);
    if (o->buf == NULL) {
        return -1;
    }

    o->len = head;
    o->tail = tail;

    return 0;
}


/* room for n more bytes (and the tail, and a NUL) */

static int
record_room(record_out_t *o, size_t n)
{
    char    *p;
    size_t   want, cap;

    if (o->failed) {
        return -1;
    }

    if (n > SIZE_MAX / 2 - o->len - o->tail - 1) {
        o->failed = 1;
        return -1;
    }

    want = o->len + n + o->tail + 1;

    if (want <= o->cap) {
        return 0;
    }

    cap = o->cap * 2;
    if (cap < want) {
        cap = want;
    }

    p = realloc(o->buf, cap);
    if (p == NULL) {
        o->failed = 1;
        return -1;
    }

    o->buf = p;
    o->cap = cap;

    return 0;
}


static void
record_put(record_out_t *o, const char *s, size_t n)
{
    if (record_room(o, n) == 0) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
    }
}


#define record_lit(o, s)  record_put(o, s, sizeof(s) - 1)


static unsigned char *
record_scratch(record_out_t *o, size_t n)
{
    unsigned char  *p;

    if (o->failed) {
        return NULL;
    }

    if (n > o->scratch_cap) {
        p = realloc(o->scratch, n);
        if (p == NULL) {
            o->failed = 1;
            return NULL;
        }

        o->scratch = p;
        o->scratch_cap = n;
    }

    return o->scratch;
}


/* the bottle's secrets and their forms masked in buf */

static void
record_out_scrub(record_out_t *o, const bottle_t *b, unsigned char *buf,
    size_t len, int cut)
{
    if (b == NULL) {
        return;
    }

    if (!o->scrub.built
        && (!record_scrub_needed(b, buf, len, cut)
            || record_scrub_build(&o->scrub, b) != 0))
    {
        /* no encoded form can be there (or no memory for them) */
        (void) record_scrub_literal(b, buf, len, cut);
        return;
    }

    (void) record_scrub_with(&o->scrub, buf, len, cut);
}


/* "key": after a comma unless it is the first member of its object */

static void
record_key(record_out_t *o, const char *key)
{
    size_t  n = strlen(key);

    if (record_room(o, n + 4) != 0) {
        return;
    }

    if (o->buf[o->len - 1] != '{' && o->buf[o->len - 1] != '[') {
        o->buf[o->len++] = ',';
    }

    o->buf[o->len++] = '"';
    memcpy(o->buf + o->len, key, n);
    o->len += n;
    o->buf[o->len++] = '"';
    o->buf[o->len++] = ':';
}


static void
record_int(record_out_t *o, const char *key, int64_t v)
{
    char      tmp[24];
    size_t    n;
    uint64_t  u;

    record_key(o, key);

    u = (v < 0) ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
    n = sizeof(tmp);

    do {
        tmp[--n] = (char) ('0' + u % 10);
        u /= 10;
    } while (u);

    if (v < 0) {
        tmp[--n] = '-';
    }

    record_put(o, tmp + n, sizeof(tmp) - n);
}


/* a JSON string of valid UTF-8, escaped as jansson escapes it */

static void
record_string(record_out_t *o, const unsigned char *s, size_t len)
{
    char      *p;
    size_t     i;
    unsigned   c;

    static const char  hex[] = "0123456789ABCDEF";

    if (len > SIZE_MAX / 8 || record_room(o, 6 * len + 2) != 0) {
        o->failed = 1;
        return;
    }

    p = o->buf + o->len;
    *p++ = '"';

    for (i = 0; i < len; i++) {
        c = s[i];

        if (c >= 0x20 && c != '"' && c != '\\') {
            *p++ = (char) c;
            continue;
        }

        *p++ = '\\';

        switch (c) {
        case '"':  *p++ = '"';  break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b';  break;
        case '\f': *p++ = 'f';  break;
        case '\n': *p++ = 'n';  break;
        case '\r': *p++ = 'r';  break;
        case '\t': *p++ = 't';  break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];
        }
    }

    *p++ = '"';
    o->len = p - o->buf;
}


#define record_lit_str(o, key, s)                                             \
    record_key(o, key); record_lit(o, "\"" s "\"")


/*
 * "key": a copy of s, every byte of invalid UTF-8 as '?', scrubbed; none
 * when s is NULL
 */

static void
record_text(record_out_t *o, const char *key, const bottle_t *b,
    const bottle_str_t *s)
{
    unsigned char  *copy;

    if (s->data == NULL) {
        return;
    }

    copy = record_scratch(o, s->len ? s->len : 1);
    if (copy == NULL) {
        return;
    }

    if (s->len) {
        memcpy(copy, s->data, s->len);
    }

    /*
     * '?' first: a secret is then masked even where replaced bytes would
     * have made one; and again after, for a secret that is not UTF-8
     * itself (the policy's are) and was masked in the middle of a
     * character.
     */

    record_utf8_fix(copy, s->len);
    record_out_scrub(o, b, copy, s->len, 0);
    record_utf8_fix(copy, s->len);

    if (key) {
        record_key(o, key);
    }

    record_string(o, copy, s->len);
}


static void
record_time(record_out_t *o, const char *key, int64_t ms)
{
    char       buf[80];
    int        n;
    time_t     sec;
    struct tm  tm;

    sec = (time_t) (ms / 1000);

    if (gmtime_r(&sec, &tm) == NULL) {
        o->failed = 1;
        return;
    }

    n = snprintf(buf, sizeof(buf), "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int) (ms % 1000));

    if (n < 0 || (size_t) n >= sizeof(buf)) {
        o->failed = 1;
        return;
    }

    record_key(o, key);
    record_put(o, buf, n);
}


/*
 * [{"name": n, "value": v}]: credentials as "[scrubbed]" (drop 0) or left
 * out (drop 1), the rest scrubbed.
 */

static void
record_headers(record_out_t *o, const char *key, const bottle_record_t *rec,
    const bottle_record_header_t *h, size_t n, int drop)
{
    int           cred;
    size_t        i;
    bottle_str_t  s;

    record_key(o, key);
    record_lit(o, "[");

    for (i = 0; i < n; i++) {
        cred = bottle_record_credential(rec->route, h[i].name,
                                        h[i].name_len);

        if (cred && drop) {
            continue;
        }

        if (o->failed) {
            return;
        }

        /* a comma before every element but the first */

        if (o->buf[o->len - 1] == '[') {
            record_lit(o, "{");
        } else {
            record_lit(o, ",{");
        }

        s.data = h[i].name;
        s.len = h[i].name_len;
        record_text(o, "name", rec->bottle, &s);

        if (cred) {
            record_lit_str(o, "value", BOTTLE_RECORD_SCRUBBED);

        } else {
            s.data = h[i].value;
            s.len = h[i].value_len;
            record_text(o, "value", rec->bottle, &s);
        }

        record_lit(o, "}");
    }

    record_lit(o, "]");
}


/* the body's fields but its text: body_size, body_truncated, body_sha256 */

static void
record_body_fields(record_out_t *o, const bottle_record_body_t *body)
{
    size_t  i;
    char    hex[67];

    static const char  digits[] = "0123456789abcdef";

    if (!body->seen) {
        return;
    }

    record_int(o, "body_size", (int64_t) body->size);
    record_key(o, "body_truncated");

    if (body->size > body->len) {
        record_lit(o, "true");
    } else {
        record_lit(o, "false");
    }

    record_key(o, "body_sha256");

    if (!body->has_sha256) {
        record_lit(o, "null");
        return;
    }

    hex[0] = '"';

    for (i = 0; i < 32; i++) {
        hex[1 + 2 * i] = digits[body->sha256[i] >> 4];
        hex[2 + 2 * i] = digits[body->sha256[i] & 0xf];
    }

    hex[65] = '"';
    record_put(o, hex, 66);
}


/*
 * 1 if one of the RECORD_BLOCK bytes at p is one record_escape() writes as
 * more than itself: SSE2 where the compiler has it (x86-64 always), else
 * a word at a time.
 */

#if defined(__SSE2__)

#define RECORD_BLOCK  16

static inline int
record_block_escapes(const unsigned char *p)
{
    __m128i  v, e;

    v = _mm_loadu_si128((const __m128i *) p);

    /* max(v, 0x1f) == 0x1f: v <= 0x1f, unsigned */
    e = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)),
                       _mm_set1_epi8(0x1f));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));

    return _mm_movemask_epi8(e) != 0;
}

#else

#define RECORD_BLOCK  8

static inline int
record_block_escapes(const unsigned char *p)
{
    uint64_t  w = record_word(p);

    return record_word_escapes(w) != 0;
}

#endif


/*
 * A body's text as a JSON string: '"', '\' and controls (and DEL) escaped
 * as \u00xx but for the first two, the rest as it is.  One pass: blocks
 * with nothing to escape are copied whole, the others byte by byte, the
 * room checked before each block for its worst case.
 */

static void
record_escape(record_out_t *o, const unsigned char *in, size_t len)
{
    char      *p;
    size_t     i, k, end;
    unsigned   c;

    static const char  hex[] = "0123456789abcdef";

    if (record_room(o, 1) != 0) {
        return;
    }

    o->buf[o->len++] = '"';

    for (i = 0; i < len; i = end) {
        end = (len - i >= RECORD_BLOCK) ? i + RECORD_BLOCK : len;

        /* the block's worst case, and the closing quote: inline, as the
           buffer was sized for the text, then by record_room() */

        if (o->cap - o->len < 6 * RECORD_BLOCK + 1 + o->tail + 1
            && record_room(o, 6 * RECORD_BLOCK + 1) != 0)
        {
            return;
        }

        p = o->buf + o->len;

        if (end - i == RECORD_BLOCK && !record_block_escapes(in + i)) {
            memcpy(p, in + i, RECORD_BLOCK);
            o->len += RECORD_BLOCK;
            continue;
        }

        for (k = i; k < end; k++) {
            c = in[k];

            if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
                *p++ = (char) c;

            } else if (c == '"' || c == '\\') {
                *p++ = '\\';
                *p++ = (char) c;

            } else {
                *p++ = '\\';
                *p++ = 'u';
                *p++ = '0';
                *p++ = '0';
                *p++ = hex[c >> 4];
                *p++ = hex[c & 0xf];
            }
        }

        o->len = p - o->buf;
    }

    if (record_room(o, 1) != 0) {
        return;
    }

    o->buf[o->len++] = '"';
}


/*
 * The body's first bytes, scrubbed, as "body" (UTF-8 text) or
 * "body_base64": the last member of its object.
 */

static void
record_body_text(record_out_t *o, const bottle_t *b,
    const bottle_record_body_t *body)
{
    int             whole;
    size_t          ok, cut, n;
    unsigned char  *copy;

    if (!body->seen) {
        return;
    }

    cut = body->size > body->len;

    copy = record_scratch(o, body->len ? body->len : 1);
    if (copy == NULL) {
        return;
    }

    if (body->len) {
        memcpy(copy, body->data, body->len);
    }

    record_out_scrub(o, b, copy, body->len, (int) cut);

    ok = record_utf8(copy, body->len, (int) cut, &whole);

    if (whole) {
        record_key(o, "body");
        record_escape(o, copy, ok);
        return;
    }

    if (body->len > INT32_MAX / 2) {
        o->failed = 1;
        return;
    }

    n = 4 * ((body->len + 2) / 3);

    record_key(o, "body_base64");

    /* EVP_EncodeBlock() ends with a NUL: the closing quote's place */

    if (record_room(o, n + 2) != 0) {
        return;
    }

    o->buf[o->len] = '"';
    EVP_EncodeBlock((unsigned char *) o->buf + o->len + 1, copy,
                    (int) body->len);
    o->buf[o->len + n + 1] = '"';
    o->len += n + 2;
}


/* the record's text, NUL-terminated; or -1, and nothing is kept */

static int
record_done(record_out_t *o, char **out, size_t *out_len, size_t head)
{
    free(o->scratch);
    record_scrub_free(&o->scrub);

    if (o->failed) {
        free(o->buf);
        return -1;
    }

    o->buf[o->len] = '\0';

    *out = o->buf;
    *out_len = o->len - head;

    return 0;
}


int
bottle_record_full(char **out, size_t *out_len, const bottle_record_t *rec,
    int response)
{
    size_t                       size;
    bottle_str_t                 id;
    record_out_t                 o;
    const bottle_record_body_t  *body;
    const bottle_t  *b = rec->bottle;

    size = 2048;
    body = response ? &rec->resp_body : &rec->body;

    if (body->seen && body->len < SIZE_MAX / 2) {
        size += body->len + body->len / 8;
    }

    if (record_out_init(&o, size, 0, 0) != 0) {
        return -1;
    }

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    record_lit(&o, "{");

    if (response) {
        record_lit_str(&o, "type", "response");
    } else {
        record_lit_str(&o, "type", "request");
    }

    record_time(&o, "time", response ? rec->end_ms : rec->start_ms);
    record_text(&o, "request_id", NULL, &rec->request_id);
    record_text(&o, "bottle", NULL, &id);
    record_text(&o, "host", NULL, &rec->host);
    record_int(&o, "port", rec->port);

    if (response) {
        record_int(&o, "status", rec->status);
        record_int(&o, "duration_ms", rec->end_ms - rec->start_ms);
        record_headers(&o, "headers", rec, rec->resp_headers,
                       rec->nresp_headers, 0);
        record_body_fields(&o, &rec->resp_body);
        record_int(&o, "length", (int64_t) rec->response_length);
        record_body_text(&o, b, &rec->resp_body);

    } else {
        record_text(&o, "method", NULL, &rec->method);
        record_text(&o, "scheme", NULL, &rec->scheme);
        record_text(&o, "path", b, &rec->path);
        record_text(&o, "query", b, &rec->query);
        record_headers(&o, "headers", rec, rec->headers, rec->nheaders, 0);
        record_body_fields(&o, &rec->body);

        if (rec->allowed) {
            record_lit_str(&o, "verdict", "allowed");
        } else {
            record_lit_str(&o, "verdict", "refused");
        }

        record_text(&o, "rule", NULL, &rec->rule);
        record_text(&o, "reason", NULL, &rec->reason);
        record_body_text(&o, b, &rec->body);
    }

    record_lit(&o, "}");

    return record_done(&o, out, out_len, 0);
}


int
bottle_record_ocsf_activity(const char *method, size_t len)
{
    size_t  i;

    for (i = 0; bottle_ocsf_methods[i].name; i++) {
        if (strlen(bottle_ocsf_methods[i].name) == len
            && memcmp(bottle_ocsf_methods[i].name, method, len) == 0)
        {
            return bottle_ocsf_methods[i].id;
        }
    }

    return 99;
}


/* "1.2.3.4:443", "[::1]:80": dst_endpoint.ip, if dialled */

static void
record_ocsf_dst_ip(record_out_t *o, const bottle_str_t *addr)
{
    size_t        len;
    bottle_str_t  ip;

    if (addr->data == NULL || addr->len == 0) {
        return;
    }

    for (len = addr->len; len > 0 && addr->data[len - 1] != ':'; len--) {
        /* void */
    }

    if (len < 2) {
        return;
    }

    len--;
    ip.data = addr->data;

    if (ip.data[0] == '[' && ip.data[len - 1] == ']') {
        ip.data++;
        len -= 2;
    }

    ip.len = len;

    record_text(o, "ip", NULL, &ip);
}


/* the OCSF record; its shape is docs/firehose.md's */

static void
record_ocsf_write(record_out_t *o, const bottle_record_t *rec, int metadata)
{
    int              activity, success;
    bottle_str_t     id;
    const bottle_t  *b = rec->bottle;

    activity = bottle_record_ocsf_activity(rec->method.data, rec->method.len);
    success = rec->allowed && rec->status < 400;

    record_lit(o, "{\"metadata\":{\"product\":{\"name\":\"ngx_bottle\","
               "\"vendor_name\":\"bot-bottle\"},\"version\":\""
               BOTTLE_OCSF_VERSION "\"},\"http_response\":{");
    record_int(o, "code", rec->status);
    record_int(o, "length", (int64_t) rec->response_length);

    record_lit(o, "},\"dst_endpoint\":{");
    record_text(o, "hostname", NULL, &rec->host);
    record_int(o, "port", rec->port);
    record_ocsf_dst_ip(o, &rec->dst_addr);

    record_lit(o, "},\"src_endpoint\":{");
    record_text(o, "ip", NULL, &rec->src_ip);
    record_int(o, "port", rec->src_port);
    record_lit(o, "}");

    record_int(o, "class_uid", BOTTLE_OCSF_CLASS);
    record_int(o, "category_uid", BOTTLE_OCSF_CATEGORY);
    record_int(o, "activity_id", activity);
    record_int(o, "type_uid", BOTTLE_OCSF_CLASS * 100 + activity);
    record_int(o, "time", rec->start_ms);
    record_int(o, "start_time", rec->start_ms);
    record_int(o, "end_time", rec->end_ms);
    record_int(o, "duration", rec->end_ms - rec->start_ms);
    record_int(o, "severity_id", rec->allowed ? 1 : 3);
    record_int(o, "action_id", rec->allowed ? 1 : 2);

    if (rec->allowed) {
        record_lit(o, ",\"action\":\"Allowed\",\"disposition_id\":1,"
                   "\"disposition\":\"Allowed\"");
    } else {
        record_lit(o, ",\"action\":\"Denied\",\"disposition_id\":2,"
                   "\"disposition\":\"Blocked\"");
    }

    if (success) {
        record_lit(o, ",\"status_id\":1,\"status\":\"Success\"");
    } else {
        record_lit(o, ",\"status_id\":2,\"status\":\"Failure\"");
    }

    record_lit(o, ",\"http_request\":{\"url\":{");
    record_text(o, "hostname", NULL, &rec->host);
    record_int(o, "port", rec->port);
    record_text(o, "scheme", NULL, &rec->scheme);

    if (!metadata) {
        record_text(o, "path", b, &rec->path);
        record_text(o, "query_string", b, &rec->query);
    }

    record_lit(o, "}");
    record_int(o, "length", (int64_t) rec->request_length);

    if (!metadata) {
        record_text(o, "http_method", NULL, &rec->method);
        record_text(o, "user_agent", b, &rec->user_agent);
        record_headers(o, "http_headers", rec, rec->headers, rec->nheaders,
                       1);
    }

    record_lit(o, "},\"unmapped\":{");

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    record_text(o, "bottle", NULL, &id);
    record_text(o, "rule", NULL, &rec->rule);
    record_text(o, "request_id", NULL, &rec->request_id);

    if (metadata) {
        record_lit_str(o, "firehose", "metadata");

    } else {
        record_text(o, "reason", NULL, &rec->reason);
        record_lit_str(o, "firehose", "full");
        record_body_fields(o, &rec->body);
        record_body_text(o, b, &rec->body);
    }

    record_lit(o, "}}");
}


int
bottle_record_ocsf(char **out, size_t *out_len, const bottle_record_t *rec,
    int metadata)
{
    return bottle_record_ocsf_framed(out, out_len, rec, metadata, 0, 0);
}


int
bottle_record_ocsf_framed(char **out, size_t *out_len,
    const bottle_record_t *rec, int metadata, size_t head, size_t tail)
{
    size_t        size;
    record_out_t  o;

    /* a text body is about its own size: most records need no realloc() */

    size = 2048;

    if (!metadata && rec->body.seen && rec->body.len < SIZE_MAX / 2) {
        size += rec->body.len + rec->body.len / 8;
    }

    if (head > 4096 || tail > 4096
        || record_out_init(&o, size, head, tail) != 0)
    {
        return -1;
    }

    record_ocsf_write(&o, rec, metadata);

    return record_done(&o, out, out_len, head);
}
