/*
 * The scanner's skeleton view: the letters and digits of a field, with
 * %XX, %25XX, \\u00XX (JSON escaped once or more) and HTML numeric
 * references decoded and every separator dropped, so that a registered
 * secret cut up, spaced out or encoded is one run.  A scalar state machine
 * for escapes, and SSSE3 and AVX-512 paths for the text between them.
 *
 * Every decoded byte records the raw span it came from, as in the other
 * views (bottle_scan_decode.c).
 */

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_scan_view.h"


static int  skel_best;      /* what the CPU has */
int         bottle_scan_skel_level;     /* what runs */


static void
skel_byte(bottle_scan_view_t *v, unsigned c, uint32_t pos)
{
    size_t              i;
    bottle_scan_seg_t  *g;

    i = v->keep + v->curlen++;
    v->buf[i] = (unsigned char) c;

    if (v->nseg) {
        g = &v->seg[v->nseg - 1];
        /* a run of raw bytes, and pos after its last one */
        if ((g->mask & 1) && pos > g->rpos && pos - g->rpos < 64
            && (g->mask >> (pos - g->rpos)) == 0)
        {
            g->mask |= (uint64_t) 1 << (pos - g->rpos);
            return;
        }
    }

    g = &v->seg[v->nseg++];
    g->vpos = (uint32_t) i;
    g->rpos = pos;
    g->mask = 1;
}


/* a decoded byte from the raw span [start, start + len) */
static void
skel_decoded(bottle_scan_view_t *v, unsigned c, uint32_t start, unsigned len)
{
    size_t              i;
    bottle_scan_seg_t  *g;

    i = v->keep + v->curlen++;
    v->buf[i] = (unsigned char) c;

    g = &v->seg[v->nseg++];
    g->vpos = (uint32_t) i;
    g->rpos = start;
    g->mask = (uint64_t) (len > 255 ? 255 : len) << 1;
}


static void
skel_flush(bottle_scan_view_t *v)
{
    unsigned  i;

    /* the letters and digits of an escape that wasn't one */
    for (i = 0; i < v->dn; i++) {
        if (is_alnum(v->pend[i])) {
            skel_byte(v, v->pend[i], v->pmap[i]);
        }
    }
    v->dstate = D_TEXT;
    v->dn = 0;
}


static void
skel_push(bottle_scan_view_t *v, unsigned c, uint32_t pos)
{
    v->pend[v->dn] = (unsigned char) c;
    v->pmap[v->dn++] = pos;
}


/* a numeric character reference ends: its letter or digit is kept */
static void
skel_amp_done(bottle_scan_view_t *v, uint32_t end)
{
    if (v->dval < 0x80 && is_alnum(v->dval)) {
        skel_decoded(v, v->dval, v->dstart, end - v->dstart);
    }
    v->dstate = D_TEXT;
    v->dn = 0;
}


/*
 * HTML numeric character references, "&#67;" and "&#x43;" (the ';' may
 * be left out, as browsers allow), byte by byte: as skel_whole_escape()
 * decodes them whole.  Too many digits: not one, the digits are text.
 */
static int
skel_amp(bottle_scan_view_t *v, unsigned c, uint32_t pos)
{
    int  h;

    switch (v->dstate) {

    case D_AMP:
        v->dn = 0;
        v->dstate = c == '#' ? D_AMPH : D_TEXT;
        return c != '#';

    case D_AMPH:
        if (c >= '0' && c <= '9') {
            skel_push(v, c, pos);
            v->dval = c - '0';
            v->dstate = D_AMPD;
            return 0;
        }
        if ((c | 0x20) == 'x') {
            skel_push(v, c, pos);
            v->dval = 0;
            v->dstate = D_AMPX;
            return 0;
        }
        v->dstate = D_TEXT;
        return 1;

    case D_AMPD:
        if (c >= '0' && c <= '9') {
            if (v->dn == AMP_DEC_MAX) {
                skel_flush(v);
                return 1;
            }
            skel_push(v, c, pos);
            v->dval = v->dval * 10 + (c - '0');
            return 0;
        }
        break;

    case D_AMPX:
        if (bottle_hexval(c) < 0) {
            skel_flush(v);
            return 1;
        }
        skel_push(v, c, pos);
        v->dval = (unsigned) bottle_hexval(c);
        v->dstate = D_AMPXD;
        return 0;

    default:    /* D_AMPXD */
        h = bottle_hexval(c);
        if (h >= 0) {
            if (v->dn == AMP_HEX_MAX + 1) {
                skel_flush(v);
                return 1;
            }
            skel_push(v, c, pos);
            v->dval = v->dval * 16 + (unsigned) h;
            return 0;
        }
        break;
    }

    /* the digits ended: with ';' it is part of the reference */
    if (c == ';') {
        skel_amp_done(v, pos + 1);
        return 0;
    }
    skel_amp_done(v, pos);
    return 1;
}


/* one byte in an escape; returns 1 if it ended the escape attempt early
 * and must be read again as text */
static int
skel_escape(bottle_scan_view_t *v, unsigned c, uint32_t pos)
{
    int  h;

    switch (v->dstate) {

    case D_BSLASH:
    case D_BSLASH2:
        /*
         * A run of backslashes: "\u" after any run is decoded (JSON in a
         * JSON string, "\\\\u0067", unescaped until stable); after an odd
         * run any other byte is escaped, a separator; after an even one
         * it is text.
         */
        if (c == '\\') {
            v->dstate = v->dstate == D_BSLASH ? D_BSLASH2 : D_BSLASH;
            return 0;
        }
        if (c == 'u') {
            skel_push(v, c, pos);
            v->dstate = D_U0;
            v->dval = 0;
            return 0;
        }
        if (c == '/') {
            v->s->trig |= BOTTLE_TRIG_JSON;
        }
        h = v->dstate == D_BSLASH2;
        v->dstate = D_TEXT;
        v->dn = 0;
        return h;

    case D_PCT:
        if (bottle_hexval(c) < 0) {
            v->dstate = D_TEXT;
            v->dn = 0;
            return 1;
        }
        skel_push(v, c, pos);
        v->dval = (unsigned) bottle_hexval(c);
        v->dstate = D_PCT1;
        return 0;

    case D_PCT1:
    case D_PCT251:
        h = bottle_hexval(c);
        if (h < 0) {
            skel_flush(v);
            return 1;
        }
        v->dval = v->dval * 16 + (unsigned) h;
        if (v->dval == '%' && v->dstate == D_PCT1) {
            v->s->trig |= BOTTLE_TRIG_PCT | BOTTLE_TRIG_PCT2;
            v->dstate = D_PCT25;
            v->dn = 0;
            return 0;
        }
        if (is_token_char(v->dval)) {
            v->s->trig |= BOTTLE_TRIG_PCT;
        }
        if (is_alnum(v->dval)) {
            skel_decoded(v, v->dval, v->dstart, pos + 1 - v->dstart);
        }
        v->dstate = D_TEXT;
        v->dn = 0;
        return 0;

    case D_PCT25:
        if (bottle_hexval(c) < 0) {
            v->dstate = D_TEXT;
            return 1;
        }
        skel_push(v, c, pos);
        v->dval = (unsigned) bottle_hexval(c);
        v->dstate = D_PCT251;
        return 0;

    case D_AMP:
    case D_AMPH:
    case D_AMPD:
    case D_AMPX:
    case D_AMPXD:
        return skel_amp(v, c, pos);

    default:    /* D_U0 .. D_U0 + 3 */
        h = bottle_hexval(c);
        if (h < 0) {
            skel_flush(v);
            return 1;
        }
        skel_push(v, c, pos);
        v->dval = v->dval * 16 + (unsigned) h;
        if (++v->dstate == D_U0 + 4) {
            if (v->dval < 0x80 && is_token_char(v->dval)) {
                v->s->trig |= BOTTLE_TRIG_JSON;
            }
            if (v->dval < 0x80 && is_alnum(v->dval)) {
                skel_decoded(v, v->dval, v->dstart, pos + 1 - v->dstart);
            }
            v->dstate = D_TEXT;
            v->dn = 0;
        }
        return 0;
    }
}


/*
 * Text, 64 bytes at a time.  The masks of a block (bit i: byte i) are
 * built by one of the implementations below; the rest is plain C:
 *
 *   a   letters and digits       b   '\\'
 *   p   '%'                      u   'u'       sl  '/'
 *
 * A backslash escapes the byte after it, whatever it is ("\\\\" is one
 * escaped backslash): the escaped bytes are found for the whole block at
 * once with the carry trick of simdjson (an odd run of backslashes escapes
 * the byte after it).  "\n", "\"" and the like are separators, dropped
 * here; "\/" is one too and wants the JSON view.  The state machine above
 * takes over at a "\u", a '%' that isn't escaped, or a backslash that
 * escapes the next block's first byte.
 */

#define SKEL_ODD  0xAAAAAAAAAAAAAAAAULL

/* classes for the scalar masks */
#define SK_A      1
#define SK_B      2
#define SK_P      4
#define SK_U      8
#define SK_SL     16
#define SK_AMP    32
#define SK_HASH   64

/* the SK_* classes of each byte */
static unsigned char  skel_sk[256];



static size_t skel_whole_escape(bottle_scan_view_t *v,
    const unsigned char *p, size_t n, uint32_t pos);


/* the '&' that may open a numeric reference: before a '#', or at the
 * block's end; any other '&' is a separator like any punctuation */
static inline uint64_t
skel_amp_stops(uint64_t amp, uint64_t hash, size_t len)
{
    return amp & ((hash >> 1) | ((uint64_t) 1 << (len - 1)));
}


/* where the state machine must take over in a block of len bytes (len if
 * nowhere), and the bytes to keep before that */
static inline size_t
skel_plan(bottle_scan_view_t *v, uint64_t a, uint64_t b, uint64_t p,
    uint64_t u, uint64_t sl, size_t len, uint64_t *keep)
{
    size_t    stop;
    uint64_t  t, escaped, stops, lim;

    escaped = 0;
    if (b) {
        t = (((b << 1) | SKEL_ODD) - b) ^ SKEL_ODD;
        escaped = t ^ b;
    }

    /* a backslash before a 'u' (after any run of them: JSON escaped
     * twice), or one that may go on in the next block */
    stops = (p & ~escaped) | (b & (u >> 1))
            | (b & ((uint64_t) 1 << (len - 1)));
    stop = stops ? (size_t) __builtin_ctzll(stops) : 64;
    stop = stop < len ? stop : len;
    lim = stop == 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << stop) - 1;

    if ((escaped | (b << 1)) & sl & lim) {
        v->s->trig |= BOTTLE_TRIG_JSON;
    }

    *keep = a & ~escaped & lim;
    return stop;
}


/* kept bytes at view index o came from raw bytes at pos + the bits of keep */
static inline void
skel_seg(bottle_scan_view_t *v, size_t o, uint32_t pos, uint64_t keep)
{
    unsigned            z;
    bottle_scan_seg_t  *g;

    z = (unsigned) __builtin_ctzll(keep);
    g = &v->seg[v->nseg++];
    g->vpos = (uint32_t) o;
    g->rpos = pos + z;
    g->mask = keep >> z;
}


static size_t
skel_text_scalar(bottle_scan_view_t *v, const unsigned char *in, size_t n,
    uint32_t off)
{
    size_t          i, j, len, stop, o;
    unsigned        k;
    uint64_t        a, b, p, u, sl, keep, bit, amp, hash;
    unsigned char  *ob;

    o = v->keep + v->curlen;
    ob = v->buf;

    for (i = 0; i < n; i += stop) {
        len = n - i < 64 ? n - i : 64;
        a = b = p = u = sl = amp = hash = 0;
        for (j = 0; j < len; j++) {
            k = skel_sk[in[i + j]];
            bit = (uint64_t) 1 << j;
            a |= k & SK_A ? bit : 0;
            b |= k & SK_B ? bit : 0;
            p |= k & SK_P ? bit : 0;
            u |= k & SK_U ? bit : 0;
            sl |= k & SK_SL ? bit : 0;
            amp |= k & SK_AMP ? bit : 0;
            hash |= k & SK_HASH ? bit : 0;
        }
        p |= skel_amp_stops(amp, hash, len);

        stop = skel_plan(v, a, b, p, u, sl, len, &keep);
        if (keep) {
            skel_seg(v, o, off + (uint32_t) i, keep);
            for (j = 0; j < len; j++) {
                if (keep & ((uint64_t) 1 << j)) {
                    ob[o++] = in[i + j];
                }
            }
        }
        if (stop < len) {
            i += stop;
            break;
        }
    }

    v->curlen = o - v->keep;
    return i;
}


#if defined(__x86_64__) && defined(__GNUC__)

/* for each 8-bit mask of kept bytes: a pshufb pattern packing them, and
 * how many there are */
static uint64_t  skel_shuf[256];
static uint8_t   skel_count[256];


static void
skel_simd_init(void)
{
    unsigned  m, b, k;
    uint64_t  v;

    for (m = 0; m < 256; m++) {
        v = 0;
        k = 0;
        for (b = 0; b < 8; b++) {
            if (m & (1u << b)) {
                v |= (uint64_t) b << (8 * k++);
            }
        }
        for (b = k; b < 8; b++) {
            v |= (uint64_t) 0x80 << (8 * b);
        }
        skel_shuf[m] = v;
        skel_count[m] = (uint8_t) k;
    }

    __builtin_cpu_init();
    skel_best = 0;
    if (__builtin_cpu_supports("ssse3")) {
        skel_best = 1;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vbmi2")
        && __builtin_cpu_supports("popcnt"))
    {
        skel_best = 2;
    }
}


__attribute__((target("ssse3,popcnt")))
static inline unsigned
skel_mask16(__m128i x, __m128i c)
{
    return (unsigned) _mm_movemask_epi8(_mm_cmpeq_epi8(x, c));
}


/* SSE2 masks, 8 bytes at a time packed with pshufb */
__attribute__((target("ssse3,popcnt")))
static size_t
skel_text_ssse3(bottle_scan_view_t *v, const unsigned char *in, size_t n,
    uint32_t off)
{
    size_t          i, j, len, stop, o;
    uint64_t        a, b, p, u, sl, keep, k8, amp, hash;
    unsigned char   pad[64];
    unsigned char  *ob;
    const unsigned char  *q;
    __m128i         x, d, l, packed;

    o = v->keep + v->curlen;
    ob = v->buf;

    for (i = 0; i < n; i += stop) {
        len = n - i < 64 ? n - i : 64;
        q = in + i;
        if (len < 64) {
            memset(pad, 0, sizeof(pad));
            memcpy(pad, q, len);
            q = pad;
        }

        a = b = p = u = sl = amp = hash = 0;
        for (j = 0; j < 64; j += 16) {
            x = _mm_loadu_si128((const __m128i *) (q + j));
            /* unsigned x - '0' <= 9, or (x | 0x20) - 'a' <= 25 */
            d = _mm_sub_epi8(x, _mm_set1_epi8('0'));
            d = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
            l = _mm_sub_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)),
                             _mm_set1_epi8('a'));
            l = _mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(25)), l);
            a |= (uint64_t) (unsigned) _mm_movemask_epi8(_mm_or_si128(d, l))
                 << j;
            b |= (uint64_t) skel_mask16(x, _mm_set1_epi8('\\')) << j;
            p |= (uint64_t) skel_mask16(x, _mm_set1_epi8('%')) << j;
            amp |= (uint64_t) skel_mask16(x, _mm_set1_epi8('&')) << j;
            u |= (uint64_t) skel_mask16(x, _mm_set1_epi8('u')) << j;
            sl |= (uint64_t) skel_mask16(x, _mm_set1_epi8('/')) << j;
        }

        if (amp) {
            /* '#' only when there is a '&': text has few */
            for (j = 0; j < 64; j += 16) {
                x = _mm_loadu_si128((const __m128i *) (q + j));
                hash |= (uint64_t) skel_mask16(x, _mm_set1_epi8('#')) << j;
            }
            p |= skel_amp_stops(amp, hash, len);
        }
        stop = skel_plan(v, a, b, p, u, sl, len, &keep);
        if (keep) {
            skel_seg(v, o, off + (uint32_t) i, keep);
            for (j = 0; j < 64 && (keep >> j); j += 8) {
                k8 = (keep >> j) & 0xff;
                x = _mm_loadl_epi64((const __m128i *) (q + j));
                packed = _mm_shuffle_epi8(x,
                             _mm_cvtsi64_si128((long long) skel_shuf[k8]));
                _mm_storel_epi64((__m128i *) (ob + o), packed);
                o += skel_count[k8];
            }
        }
        if (stop < len) {
            i += stop;
            break;
        }
    }

    v->curlen = o - v->keep;
    return i;
}


/*
 * AVX-512: masks in mask registers, packed with vpcompressb.  An escape
 * in the block that skel_whole_escape() decodes is decoded there, and the
 * block goes on with the same masks (percent-encoded forms have one every
 * few bytes); the state machine gets the rest.
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt,bmi")))
static size_t
skel_text_avx512(bottle_scan_view_t *v, const unsigned char *in, size_t n,
    uint32_t off)
{
    size_t          i, len, stop, pos, o, k;
    uint64_t        a, b, p, u, sl, keep, lm, t, escaped, stops, run, slash,
                    amp;
    unsigned char  *ob;
    __m512i         x;

    o = v->keep + v->curlen;
    ob = v->buf;

    for (i = 0; i < n; /* void */ ) {
        len = n - i < 64 ? n - i : 64;
        lm = len == 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << len) - 1;
        x = _mm512_maskz_loadu_epi8(lm, in + i);

        a = _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, _mm512_set1_epi8('0')),
                                   _mm512_set1_epi8(9))
            | _mm512_cmple_epu8_mask(
                  _mm512_sub_epi8(_mm512_or_si512(x, _mm512_set1_epi8(0x20)),
                                  _mm512_set1_epi8('a')),
                  _mm512_set1_epi8(25));
        b = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\\'));
        p = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('%'));
        amp = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('&'));
        if (amp) {
            p |= skel_amp_stops(amp, _mm512_cmpeq_epi8_mask(x,
                                    _mm512_set1_epi8('#')), len);
        }

        if ((b | p) == 0) {
            /* text without escapes: the common case */
            if (a) {
                skel_seg(v, o, off + (uint32_t) i, a);
                _mm512_storeu_si512((void *) (ob + o),
                                    _mm512_maskz_compress_epi8(a, x));
                o += (size_t) _mm_popcnt_u64(a);
            }
            i += len;
            continue;
        }

        u = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('u'));
        sl = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('/'));

        /* as skel_plan(), for the whole block */
        t = (((b << 1) | SKEL_ODD) - b) ^ SKEL_ODD;
        escaped = t ^ b;
        stops = (p & ~escaped) | (b & (u >> 1))
                | (b & ((uint64_t) 1 << (len - 1)));
        /* "\\/" after any run of backslashes wants the JSON view */
        slash = (escaped | (b << 1)) & sl;
        a &= ~escaped;

        for (pos = 0; /* void */ ; /* void */ ) {
            t = stops >> pos << pos;
            stop = t ? (size_t) _tzcnt_u64(t) : 64;
            stop = stop < len ? stop : len;
            run = (stop == 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << stop) - 1)
                  >> pos << pos;

            if (slash & run) {
                v->s->trig |= BOTTLE_TRIG_JSON;
            }
            keep = a & run;
            if (keep) {
                skel_seg(v, o, off + (uint32_t) i, keep);
                _mm512_storeu_si512((void *) (ob + o),
                                    _mm512_maskz_compress_epi8(keep, x));
                o += (size_t) _mm_popcnt_u64(keep);
            }

            if (stop == len) {
                i += len;
                break;
            }

            v->curlen = o - v->keep;
            k = skel_whole_escape(v, in + i + stop, n - i - stop,
                                  off + (uint32_t) (i + stop));
            o = v->keep + v->curlen;

            if (k == 0) {
                /* the state machine's */
                v->curlen = o - v->keep;
                return i + stop;
            }

            pos = stop + k;
            if (pos >= len) {
                i += pos;
                break;
            }
        }
    }

    v->curlen = o - v->keep;
    return i < n ? i : n;
}

#endif


/* the tables, once, from bottle_scan_db_create(): before any thread scans */
void
bottle_scan_decode_init(void)
{
    static int  ready;
    unsigned    c;

    if (ready) {
        return;
    }

    for (c = 0; c < 256; c++) {
        skel_sk[c] = (is_alnum(c) ? SK_A : 0) | (c == '\\' ? SK_B : 0)
                     | (c == '%' ? SK_P : 0) | (c == '&' ? SK_AMP : 0)
                     | (c == '#' ? SK_HASH : 0) | (c == 'u' ? SK_U : 0)
                     | (c == '/' ? SK_SL : 0);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    skel_simd_init();
#endif
    bottle_scan_skel_level = skel_best;
    ready = 1;
}


int
bottle_scan_skel_impl(int level)
{
    bottle_scan_decode_init();
    bottle_scan_skel_level = level < 0 || level > skel_best ? skel_best : level;
    return bottle_scan_skel_level;
}


/*
 * The skeleton of in: text in blocks, escapes through the state machine.
 * Writes up to 64 bytes past the view's output (the views have room); one
 * segment per block or decoded byte, so the segments never outnumber the
 * view's bytes.
 */
/*
 * An escape that is wholly in the block, decoded in one go as the state
 * machine would: returns its length, or 0 (cut, not an escape, "%25" not
 * followed by two hex digits) for the state machine to read it.
 */
/* the backslashes right before p in the input being decoded */
static size_t
skel_run_back(const bottle_scan_view_t *v, const unsigned char *p)
{
    size_t  lb;

    for (lb = 0; p - lb > v->blk && p[-(ptrdiff_t) lb - 1] == '\\'; lb++) {
        /* void */
    }
    return lb;
}


/*
 * "&#NN;" or "&#xHH;" whole in the block, as skel_amp() reads it: returns
 * its length, 1 for a '&' that opens none (a separator), 2 for "&#" and
 * the like, whose letters and digits are then text, 0 when the digits run
 * to the end of the block (the state machine's).
 */
static size_t
skel_whole_amp(bottle_scan_view_t *v, const unsigned char *p, size_t n,
    uint32_t pos)
{
    int       h, hex;
    size_t    i, d, max;
    unsigned  x;

    if (n < 2) {
        return 0;
    }
    if (p[1] != '#') {
        return 1;
    }
    if (n < 3) {
        return 0;
    }

    hex = (p[2] | 0x20) == 'x';
    i = hex ? 3 : 2;
    max = hex ? AMP_HEX_MAX : AMP_DEC_MAX;
    x = 0;

    for (d = 0; i < n; i++, d++) {
        h = hex ? bottle_hexval(p[i]) : (p[i] >= '0' && p[i] <= '9' ? p[i] - '0'
                                                              : -1);
        if (h < 0) {
            break;
        }
        if (d == max) {
            return 2;
        }
        x = x * (hex ? 16 : 10) + (unsigned) h;
    }

    if (i == n) {
        return 0;
    }
    if (d == 0) {
        return 2;
    }

    i += p[i] == ';';
    if (x < 0x80 && is_alnum(x)) {
        skel_decoded(v, x, pos, (unsigned) i);
    }
    return i;
}


static size_t
skel_whole_escape(bottle_scan_view_t *v, const unsigned char *p, size_t n,
    uint32_t pos)
{
    int       a, b, c, d;
    size_t    lb, r;
    unsigned  x;

    if (p[0] == '&') {
        return skel_whole_amp(v, p, n, pos);
    }

    if (p[0] == '%') {
        if (n < 3 || (a = bottle_hexval(p[1])) < 0 || (b = bottle_hexval(p[2])) < 0) {
            return 0;
        }
        x = (unsigned) (a * 16 + b);
        if (x == '%') {
            if (n < 5 || (a = bottle_hexval(p[3])) < 0 || (b = bottle_hexval(p[4])) < 0) {
                return 0;
            }
            v->s->trig |= BOTTLE_TRIG_PCT | BOTTLE_TRIG_PCT2;
            x = (unsigned) (a * 16 + b);
            if (is_alnum(x)) {
                skel_decoded(v, x, pos, 5);
            }
            return 5;
        }
        if (is_token_char(x)) {
            v->s->trig |= BOTTLE_TRIG_PCT;
        }
        if (is_alnum(x)) {
            skel_decoded(v, x, pos, 3);
        }
        return 3;
    }

    /*
     * '\\': the run of backslashes it is in (the bytes before it in this
     * input are looked back over for the span), and the byte after it:
     * "\\uXXXX" after any run is decoded, whatever the run's start; any
     * other byte is escaped (dropped) after an odd run and text after an
     * even one.
     */
    lb = skel_run_back(v, p);
    for (r = 1; r < n && p[r] == '\\'; r++) {
        /* void */
    }
    if (r == n) {
        return 0;
    }

    if (p[r] != 'u') {
        if (p[r] == '/') {
            v->s->trig |= BOTTLE_TRIG_JSON;
        }
        return (lb + r) & 1 ? r + 1 : r;
    }

    if (n < r + 5) {
        return 0;
    }
    if ((a = bottle_hexval(p[r + 1])) < 0 || (b = bottle_hexval(p[r + 2])) < 0
        || (c = bottle_hexval(p[r + 3])) < 0 || (d = bottle_hexval(p[r + 4])) < 0)
    {
        /* "u" and what follows are text */
        return r;
    }
    x = (unsigned) (((a * 16 + b) * 16 + c) * 16 + d);
    if (x < 0x80 && is_token_char(x)) {
        v->s->trig |= BOTTLE_TRIG_JSON;
    }
    if (x < 0x80 && is_alnum(x)) {
        skel_decoded(v, x, pos - (uint32_t) lb, (unsigned) (lb + r + 5));
    }
    return r + 5;
}


void
bottle_scan_skel_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, uint32_t off)
{
    size_t  i, k, lb;

    i = 0;
    v->blk = in;

    while (i < n) {
        if (v->dstate != D_TEXT) {
            if (skel_escape(v, in[i], off + (uint32_t) i) == 0) {
                i++;
            }
            continue;
        }

        if (in[i] == '\\' || in[i] == '%' || in[i] == '&') {
            /* escapes in a row ("\u0067\u0067", "%20%20"): no block */
            k = skel_whole_escape(v, in + i, n - i, off + (uint32_t) i);
            if (k) {
                i += k;
                continue;
            }
            v->dstate = in[i] == '%' ? D_PCT : D_AMP;
            v->dstart = off + (uint32_t) i;
            if (in[i] == '\\') {
                /* the run so far, with this one: odd or even */
                lb = skel_run_back(v, in + i);
                v->dstate = lb & 1 ? D_BSLASH2 : D_BSLASH;
                v->dstart -= (uint32_t) lb;
            }
            v->dn = 0;
            i++;
            continue;
        }

        switch (bottle_scan_skel_level) {
#if defined(__x86_64__) && defined(__GNUC__)
        case 2:
            i += skel_text_avx512(v, in + i, n - i, off + (uint32_t) i);
            break;
        case 1:
            i += skel_text_ssse3(v, in + i, n - i, off + (uint32_t) i);
            break;
#endif
        default:
            i += skel_text_scalar(v, in + i, n - i, off + (uint32_t) i);
        }

        /* it stopped at a '\\' or '%': the branch above takes it */
    }
}


/* the end of a field in the skeleton: a reference needs no ';' there */
void
bottle_scan_skel_flush(bottle_scan_view_t *v)
{
    if ((v->dstate == D_AMPD && v->dn > 0)
        || (v->dstate == D_AMPXD && v->dn > 1))
    {
        skel_amp_done(v, v->pmap[v->dn - 1] + 1);
        return;
    }

    skel_flush(v);
}
