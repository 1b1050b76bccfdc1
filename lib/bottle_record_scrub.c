
/*
 * The records' scrubbing (bottle_record.h, bottle_record_int.h): a
 * bottle's registered secrets masked in a record's copy of the agent's
 * bytes, as they are and in the encodings the DLP knows, and which
 * headers are credentials.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_decide.h"
#include "bottle_record_int.h"
#include "bottle_scan_int.h"


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
 * as the DLP looks for them (bottle_scan_secrets.c, docs/dlp.md
 * "Encodings"), its base64 (standard and URL alphabets, at the three
 * alignments, the characters the value alone fixes:
 * bottle_scan_b64_aligned()) when it is long enough, its hex, its
 * percent-encodings (every byte as %XX, or only those outside the
 * unreserved characters; every byte as %25XX, encoded twice) and its JSON
 * escapes (every byte as \u00XX, for an ASCII value), hex upper or lower
 * case.  Built once per record.
 */

#define RECORD_FORM_LITERAL  0
#define RECORD_FORM_B64      1
#define RECORD_FORM_PCT      2
#define RECORD_FORM_HEX      3
#define RECORD_FORM_JSON     4

/* a value's: itself, six base64, six percent, two hex, two \u00XX */
#define RECORD_FORMS_EACH    17

/* the shortest value with hex forms: the DLP's canary skeleton's (4) */
#define RECORD_HEX_MIN       4

/*
 * The shortest tail a cut leaves of an encoded form that is masked: one
 * or two characters begin some base64 form more often than not.
 */
#define RECORD_FORM_TAIL     4



static int
record_unreserved(unsigned c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
           || c == '~';
}


static void
record_form_add(bottle_record_scrub_t *sc, size_t first, const char *data,
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

    if (kind == RECORD_FORM_JSON) {
        sc->json = 1;
    }
}


static char *
record_form_pct(bottle_record_scrub_t *sc, size_t first, char *p,
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


/* every byte as pre (4 bytes at most) and two hex digits: hex, %25XX, \u00XX */

static char *
record_form_bytes(bottle_record_scrub_t *sc, size_t first, char *p,
    const unsigned char *v, size_t n, const char *pre, int lower,
    unsigned kind)
{
    char        *start = p;
    size_t       i, plen;
    const char  *hex;

    hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
    plen = strlen(pre);

    for (i = 0; i < n; i++) {
        memcpy(p, pre, plen);
        p += plen;
        *p++ = hex[v[i] >> 4];
        *p++ = hex[v[i] & 0xf];
    }

    record_form_add(sc, first, start, p - start, kind);

    return p;
}


static void
record_forms_one(bottle_record_scrub_t *sc, char **mem, const char *v, size_t n)
{
    int           url;
    char         *p;
    size_t        first, m, i;
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
    p = record_form_bytes(sc, first, p, (const unsigned char *) v, n, "%25",
                          0, RECORD_FORM_PCT);
    p = record_form_bytes(sc, first, p, (const unsigned char *) v, n, "%25",
                          1, RECORD_FORM_PCT);

    /* hex: too short a form would mask what merely looks like it */

    if (n >= RECORD_HEX_MIN) {
        p = record_form_bytes(sc, first, p, (const unsigned char *) v, n, "",
                              0, RECORD_FORM_HEX);
        p = record_form_bytes(sc, first, p, (const unsigned char *) v, n, "",
                              1, RECORD_FORM_HEX);
    }

    /* \u00XX: the DLP has these for an ASCII value only */

    for (i = 0; i < n && (unsigned char) v[i] < 0x80; i++) {
        /* void */
    }

    if (i == n) {
        p = record_form_bytes(sc, first, p, (const unsigned char *) v, n,
                              "\\u00", 0, RECORD_FORM_JSON);
        p = record_form_bytes(sc, first, p, (const unsigned char *) v, n,
                              "\\u00", 1, RECORD_FORM_JSON);
    }

    *mem = p;
}


int
bottle_record_scrub_build(bottle_record_scrub_t *sc, const bottle_t *b)
{
    char    *p;
    size_t   i, nv, size, n;

    memset(sc, 0, sizeof(bottle_record_scrub_t));
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

        /*
         * six base64 forms of n * 4 / 3 + 4, four percent of 3 n at most,
         * two %25XX of 5 n, two hex of 2 n, two \u00XX of 6 n
         */
        size += 6 * (n * 4 / 3 + 4) + 4 * 3 * n + 2 * 5 * n + 2 * 2 * n
                + 2 * 6 * n;
    }

    sc->forms = malloc(nv * RECORD_FORMS_EACH * sizeof(bottle_record_form_t));
    sc->mem = malloc(size ? size : 1);

    if (sc->forms == NULL || sc->mem == NULL) {
        free(sc->forms);
        free(sc->mem);
        memset(sc, 0, sizeof(bottle_record_scrub_t));
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


void
bottle_record_scrub_free(bottle_record_scrub_t *sc)
{
    free(sc->forms);
    free(sc->mem);
    memset(sc, 0, sizeof(bottle_record_scrub_t));
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
record_scrub_run(const bottle_record_scrub_t *sc, unsigned char *buf, size_t len,
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
record_scrub_b64(const bottle_record_scrub_t *sc, unsigned char *buf, size_t len,
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


size_t
bottle_record_scrub_with(const bottle_record_scrub_t *sc, unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < sc->n; i++) {
        if (sc->forms[i].kind == RECORD_FORM_LITERAL) {
            record_mask_one(buf, len, sc->forms[i].data, sc->forms[i].len,
                            cut ? 1 : 0, &n);

        } else if (sc->forms[i].kind == RECORD_FORM_HEX) {
            record_mask_one(buf, len, sc->forms[i].data, sc->forms[i].len,
                            cut ? RECORD_FORM_TAIL : 0, &n);
        }
    }

    /* every \u00XX form has a '\', or the tail the cut leaves may be one */

    if (sc->json && len
        && (memchr(buf, '\\', len) != NULL || (cut && buf[len - 1] == '\\')))
    {
        for (i = 0; i < sc->n; i++) {
            if (sc->forms[i].kind == RECORD_FORM_JSON) {
                record_mask_one(buf, len, sc->forms[i].data,
                                sc->forms[i].len, cut ? RECORD_FORM_TAIL : 0,
                                &n);
            }
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

size_t
bottle_record_scrub_literal(const bottle_t *b, unsigned char *buf, size_t len,
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
 * 0 if no encoded form can be in a short buf (no '%' or '\\', no run of base64
 * characters as long as the shortest base64 form can be, none a cut
 * leaves at its end): then the values as they are do, and the forms need
 * not be made.  A long buf (a body) is searched for them all.
 */

int
bottle_record_scrub_needed(const bottle_t *b, const unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n, lb, run, longest;

    if (len >= 256 || memchr(buf, '%', len) != NULL
        || memchr(buf, '\\', len) != NULL)
    {
        return 1;
    }

    /*
     * a base64 form of n bytes has n * 4 / 3 - 2 characters at least, a
     * hex form 2 n: both runs of base64 characters
     */

    lb = 0;

    for (i = 0; i < 1 + b->negress_tokens + b->nheld_secrets; i++) {
        n = (i == 0) ? b->canary.len
            : (i <= b->negress_tokens) ? b->egress_tokens[i - 1].value.len
            : b->held_secrets[i - 1 - b->negress_tokens].value.len;

        if (n >= BOTTLE_SCAN_SECRET_MIN && (lb == 0 || n * 4 / 3 - 2 < lb)) {
            lb = n * 4 / 3 - 2;
        }

        if (n >= RECORD_HEX_MIN && (lb == 0 || 2 * n < lb)) {
            lb = 2 * n;
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
    bottle_record_scrub_t  sc;

    if (b != NULL && !bottle_record_scrub_needed(b, buf, len, cut)) {
        return bottle_record_scrub_literal(b, buf, len, cut);
    }

    if (b == NULL || bottle_record_scrub_build(&sc, b) != 0) {
        /* out of memory: the values as they are, at least */
        return (b == NULL) ? 0 : bottle_record_scrub_literal(b, buf, len, cut);
    }

    n = bottle_record_scrub_with(&sc, buf, len, cut);
    bottle_record_scrub_free(&sc);

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


