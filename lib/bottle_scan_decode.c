/*
 * The scanner's decoded views and the helpers that build a bottle's
 * literals: streaming decoders for the JSON and percent views (a field
 * arrives in blocks, so an escape may be cut anywhere and the decoder
 * keeps what it has seen of it; the skeleton view is bottle_scan_skel.c),
 * the triggers that switch a decoded view on, the entropy detector.
 *
 * Every decoded byte records the raw span it came from ([map, map + mlen)
 * in the field), so a match in a decoded view is reported on raw bytes.
 */

#include <math.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_scan_int.h"
#include "bottle_scan_view.h"


static const char  bottle_scan_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char  bottle_scan_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";


static void
emit(bottle_scan_view_t *v, unsigned c, uint32_t start, unsigned len)
{
    size_t  i;

    i = v->keep + v->curlen++;
    v->buf[i] = (unsigned char) c;
    v->map[i] = start;
    v->mlen[i] = (uint8_t) (len > 255 ? 255 : len);
}


/* a run of bytes that decode to themselves */
static void
emit_run(bottle_scan_view_t *v, const unsigned char *p, size_t n,
    uint32_t start)
{
    size_t     i, o;
    uint32_t  *m;

    o = v->keep + v->curlen;
    memcpy(v->buf + o, p, n);
    memset(v->mlen + o, 1, n);
    m = v->map + o;
    i = 0;
#if defined(__SSE2__)
    {
        __m128i  x, four;

        x = _mm_add_epi32(_mm_set1_epi32((int) start),
                          _mm_setr_epi32(0, 1, 2, 3));
        four = _mm_set1_epi32(4);
        for ( /* void */ ; i + 4 <= n; i += 4) {
            _mm_storeu_si128((__m128i *) (m + i), x);
            x = _mm_add_epi32(x, four);
        }
    }
#endif
    for ( /* void */ ; i < n; i++) {
        m[i] = start + (uint32_t) i;
    }
    v->curlen += n;
}


#if defined(__x86_64__) && defined(__GNUC__)

/* emit_run() up to the first stop byte, 64 bytes at a time; writes up to
 * 64 bytes (offsets) past the output: the views have room */
__attribute__((target("avx512f,avx512bw,bmi")))
static size_t
emit_until_avx512(bottle_scan_view_t *v, const unsigned char *p, size_t n,
    uint32_t start, unsigned stop)
{
    size_t     i, k, o, len;
    uint64_t   lm, m;
    uint32_t  *map;
    __m512i    x, ix, sixteen;

    o = v->keep + v->curlen;
    map = v->map + o;
    ix = _mm512_add_epi32(_mm512_set1_epi32((int) start),
                          _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                            11, 12, 13, 14, 15));
    sixteen = _mm512_set1_epi32(16);

    for (i = 0; i < n; i += len) {
        len = n - i < 64 ? n - i : 64;
        lm = len == 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << len) - 1;
        x = _mm512_maskz_loadu_epi8(lm, p + i);
        m = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8((char) stop)) & lm;

        _mm512_storeu_si512((void *) (v->buf + o + i), x);
        _mm512_storeu_si512((void *) (v->mlen + o + i), _mm512_set1_epi8(1));
        for (k = 0; k < 64; k += 16) {
            _mm512_storeu_si512((void *) (map + i + k), ix);
            ix = _mm512_add_epi32(ix, sixteen);
        }

        if (m) {
            i += _tzcnt_u64(m);
            break;
        }
    }

    i = i < n ? i : n;
    v->curlen += i;
    return i;
}

#endif


/* bytes that decode to themselves, up to the first stop byte; returns how
 * many */
static size_t
emit_until(bottle_scan_view_t *v, const unsigned char *p, size_t n,
    uint32_t start, unsigned stop)
{
    size_t                k;
    const unsigned char  *q;

#if defined(__x86_64__) && defined(__GNUC__)
    if (bottle_scan_skel_level == 2) {
        return emit_until_avx512(v, p, n, start, stop);
    }
#endif

    q = memchr(p, (int) stop, n);
    k = q ? (size_t) (q - p) : n;
    emit_run(v, p, k, start);
    return k;
}


/* JSON */

static void
json_text(bottle_scan_view_t *v, unsigned c, uint32_t pos)
{
    if (c == '\\') {
        v->dstate = D_BSLASH;
        v->pmap[0] = pos;
        v->dn = 1;
        return;
    }

    emit(v, c, pos, 1);
}


static void
json_flush(bottle_scan_view_t *v)
{
    unsigned  i;

    /* an escape that wasn't one: a backslash (for the run of them) and the
     * bytes after it as they were */
    for (i = 0; i < v->dn; i++) {
        emit(v, i == 0 ? '\\' : v->pend[i], v->pmap[i], 1);
    }
    v->dstate = D_TEXT;
    v->dn = 0;
}


static void
json_utf8(bottle_scan_view_t *v, unsigned cp, uint32_t start, unsigned len)
{
    if (cp < 0x80) {
        emit(v, cp, start, len);
    } else if (cp < 0x800) {
        emit(v, 0xc0 | (cp >> 6), start, len);
        emit(v, 0x80 | (cp & 0x3f), start, len);
    } else {
        /* surrogates too, as 3 bytes: nothing matches them anyway */
        emit(v, 0xe0 | (cp >> 12), start, len);
        emit(v, 0x80 | ((cp >> 6) & 0x3f), start, len);
        emit(v, 0x80 | (cp & 0x3f), start, len);
    }
}


void
bottle_scan_json_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, uint32_t off)
{
    int       h;
    size_t    i, k;
    unsigned  c, d;

    for (i = 0; i < n; i++) {
        c = in[i];

        switch (v->dstate) {

        case D_TEXT:
            if (c != '\\') {
                /* up to the next escape in one go */
                k = emit_until(v, in + i, n - i, off + (uint32_t) i, '\\');
                i += k - 1;
                break;
            }
            if (i + 1 < n && in[i + 1] != '\\') {
                /* a two-byte escape whole */
                d = in[i + 1];
                switch (d) {
                case '"': case '/': break;
                case 'b': d = '\b'; break;
                case 'f': d = '\f'; break;
                case 'n': d = '\n'; break;
                case 'r': d = '\r'; break;
                case 't': d = '\t'; break;
                default: d = 256;
                }
                if (d < 256) {
                    emit(v, d, off + (uint32_t) i, 2);
                    i++;
                    break;
                }
            }
            json_text(v, c, off + (uint32_t) i);
            break;

        case D_BSLASH:
            /*
             * Unescaped until stable: a run of backslashes and the escape
             * it ends with is one escape, so JSON carried in a JSON string
             * ("\\\\u0067", "\\\\/"), or deeper, is decoded whole, in
             * one linear pass.  A run before anything else is one backslash.
             */
            switch (c) {
            case '\\': continue;
            case '"': case '/': d = c; break;
            case 'b': d = '\b'; break;
            case 'f': d = '\f'; break;
            case 'n': d = '\n'; break;
            case 'r': d = '\r'; break;
            case 't': d = '\t'; break;
            case 'u':
                v->pend[v->dn] = 'u';
                v->pmap[v->dn++] = off + (uint32_t) i;
                v->dstate = D_U0;
                v->dval = 0;
                continue;
            default:
                json_flush(v);
                json_text(v, c, off + (uint32_t) i);
                continue;
            }
            emit(v, d, v->pmap[0], off + (uint32_t) i + 1 - v->pmap[0]);
            v->dstate = D_TEXT;
            v->dn = 0;
            break;

        default:    /* D_U0 .. D_U0 + 3 */
            h = bottle_hexval(c);
            if (h < 0) {
                json_flush(v);
                json_text(v, c, off + (uint32_t) i);
                break;
            }
            v->pend[v->dn] = (unsigned char) c;
            v->pmap[v->dn++] = off + (uint32_t) i;
            v->dval = v->dval * 16 + (unsigned) h;
            if (++v->dstate == D_U0 + 4) {
                json_utf8(v, v->dval, v->pmap[0],
                          off + (uint32_t) i + 1 - v->pmap[0]);
                v->dstate = D_TEXT;
                v->dn = 0;
            }
            break;
        }
    }
}


/* percent */

static void
pct_flush(bottle_scan_view_t *v)
{
    unsigned  i;

    for (i = 0; i < v->dn; i++) {
        emit(v, v->pend[i], v->pmap[i], v->plen[i]);
    }
    v->dstate = D_TEXT;
    v->dn = 0;
}


void
bottle_scan_pct_decode(bottle_scan_view_t *v, const unsigned char *in,
    size_t n, const uint32_t *imap, const uint8_t *ilen, uint32_t off)
{
    int       h;
    size_t    i, k;
    unsigned  c, len;
    uint32_t  pos;

    for (i = 0; i < n; i++) {
        c = in[i];
        pos = imap ? imap[i] : off + (uint32_t) i;
        len = ilen ? ilen[i] : 1;

        if (v->dstate != D_TEXT) {
            h = bottle_hexval(c);
            if (h >= 0) {
                if (v->dstate == D_PCT) {
                    v->dval = (unsigned) h;
                    v->pend[v->dn] = (unsigned char) c;
                    v->pmap[v->dn] = pos;
                    v->plen[v->dn++] = (uint8_t) len;
                    v->dstate = D_PCT1;
                    continue;
                }
                emit(v, v->dval * 16 + (unsigned) h, v->pmap[0],
                     pos + len - v->pmap[0]);
                v->dstate = D_TEXT;
                v->dn = 0;
                continue;
            }
            pct_flush(v);
        }

        if (c != '%' && imap == NULL) {
            /* up to the next escape in one go */
            k = emit_until(v, in + i, n - i, off + (uint32_t) i, '%');
            i += k - 1;
            continue;
        }

        if (c == '%' && n - i >= 3 && (h = bottle_hexval(in[i + 1])) >= 0
            && bottle_hexval(in[i + 2]) >= 0)
        {
            /* "%XX" whole: decoded in one go */
            k = imap ? imap[i + 2] + ilen[i + 2] - pos : 3;
            emit(v, (unsigned) (h * 16 + bottle_hexval(in[i + 2])), pos,
                 (unsigned) k);
            i += 2;
            continue;
        }

        if (c == '%') {
            v->dstate = D_PCT;
            v->pend[0] = '%';
            v->pmap[0] = pos;
            v->plen[0] = (uint8_t) len;
            v->dn = 1;
            continue;
        }

        emit(v, c, pos, len);
    }
}


/* skeleton: JSON-unescaped, percent-decoded up to twice, letters and digits */

/* a kept raw byte: joins the last segment when it can */
/* the last segment starting at or before view byte i */
static size_t
seg_find(const bottle_scan_view_t *v, size_t i)
{
    size_t  lo, hi, mid;

    lo = 0;
    hi = v->nseg;
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (v->seg[mid].vpos <= i) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}


/* the raw span of the view byte at buf[i] */
void
bottle_scan_view_span(const bottle_scan_view_t *v, size_t i, uint32_t *start,
    uint32_t *end)
{
    size_t                    k;
    uint64_t                  m;
    const bottle_scan_seg_t  *g;

    if (v->seg == NULL) {
        *start = v->map[i];
        *end = v->map[i] + v->mlen[i];
        return;
    }

    g = &v->seg[seg_find(v, i)];

    if (!(g->mask & 1)) {
        *start = g->rpos;
        *end = g->rpos + (uint32_t) (g->mask >> 1);
        return;
    }

    /* the (i - vpos)th set bit */
    m = g->mask;
    for (k = i - g->vpos; k > 0; k--) {
        m &= m - 1;
    }
    *start = g->rpos + (uint32_t) __builtin_ctzll(m);
    *end = *start + 1;
}


void
bottle_scan_seg_shift(bottle_scan_view_t *v, size_t shift)
{
    size_t              lo, k, j;
    unsigned            z;
    bottle_scan_seg_t  *g;

    if (v->nseg == 0) {
        return;
    }

    lo = seg_find(v, shift);
    g = &v->seg[lo];
    if (g->vpos < shift) {
        /* a run that starts before: drop its first bytes */
        for (k = shift - g->vpos; k > 0; k--) {
            g->mask &= g->mask - 1;
        }
        if (g->mask == 0) {
            /* it ended before the shift: no view byte is left before it */
            lo++;
        } else {
            z = (unsigned) __builtin_ctzll(g->mask);
            g->mask >>= z;
            g->rpos += z;
            g->vpos = (uint32_t) shift;
        }
    }

    for (j = 0; lo + j < v->nseg; j++) {
        v->seg[j] = v->seg[lo + j];
        v->seg[j].vpos -= (uint32_t) shift;
    }
    v->nseg = j;
}


void
bottle_scan_decode_flush(bottle_scan_view_t *v)
{
    if (v->dstate == D_TEXT) {
        return;
    }

    if (v->id == BOTTLE_VIEW_SKELETON) {
        bottle_scan_skel_flush(v);
    } else if (v->id == BOTTLE_VIEW_JSON) {
        json_flush(v);
    } else {
        pct_flush(v);
    }
}


/* triggers */

int
bottle_scan_json_trigger(const unsigned char *p, size_t n)
{
    int                   a, b;
    const unsigned char  *q, *end;

    end = p + n;

    /* "\/" and "\u00XX" of a token character change what matches; "\n",
     * "\"", "\u00e9" or "\u003c" don't (an escape counts as a boundary
     * in the raw view too) */
    for (q = p; (q = memchr(q, '\\', end - q)) != NULL; q++) {
        if (end - q >= 2 && q[1] == '/') {
            return 1;
        }
        if (end - q < 6) {
            break;          /* cut: the caller looks at the junction */
        }
        if (q[1] == 'u' && q[2] == '0' && q[3] == '0') {
            a = bottle_hexval(q[4]);
            b = bottle_hexval(q[5]);
            if (a >= 0 && b >= 0 && is_token_char((unsigned) (a * 16 + b))) {
                return 1;
            }
        }
    }

    return 0;
}


int
bottle_scan_pct_trigger(const unsigned char *p, size_t n, int *twice)
{
    int                   a, b, hit;
    unsigned              c;
    const unsigned char  *q, *end;

    end = p + n;
    hit = 0;

    for (q = p; (q = memchr(q, '%', end - q)) != NULL; q++) {
        if (end - q < 3) {
            break;          /* cut: the caller looks at the junction */
        }
        a = bottle_hexval(q[1]);
        b = bottle_hexval(q[2]);
        if (a < 0 || b < 0) {
            continue;
        }
        c = (unsigned) (a * 16 + b);
        if (c == '%') {
            *twice = 1;
            return 1;
        }
        if (is_token_char(c)) {
            hit = 1;
        }
    }

    return hit;
}


/* literals */

size_t
bottle_scan_alnum(unsigned char *out, const unsigned char *in, size_t n)
{
    size_t  i, o;

    for (i = 0, o = 0; i < n; i++) {
        if (is_alnum(in[i])) {
            out[o++] = in[i];
        }
    }

    return o;
}


/*
 * The base64 of some data with in at byte offset k (mod 3) of it: the
 * characters whose 6 bits all come from in, whatever comes before or
 * after.  out needs n * 4 / 3 + 4 bytes.
 */

size_t
bottle_scan_b64_aligned(char *out, const unsigned char *in, size_t n,
    unsigned k, int url)
{
    size_t       bits, i, o, first, last;
    unsigned     v;
    const char  *al;

    al = url ? bottle_scan_b64url : bottle_scan_b64;

    /* character j covers bits [6j, 6j + 6) of (k filler bytes + in) */
    first = (k * 8 + 5) / 6;
    last = (k + n) * 8 / 6;
    o = 0;

    for (i = first; i < last; i++) {
        bits = i * 6;
        v = 0;
        for (size_t b = bits; b < bits + 6; b++) {
            size_t   byte = b / 8;
            unsigned bit = 7 - (unsigned) (b % 8);
            v = (v << 1) | ((in[byte - k] >> bit) & 1);
        }
        out[o++] = al[v];
    }

    return o;
}


/* entropy: runs of base64 characters with mixed classes and high entropy */

#define ENT_MIN      32
#define ENT_MAX      256     /* longer runs are data blobs, not keys */
/*
 * Shannon bits per character, at least: 4.2 at 32 characters, 0.03 more
 * per character, at most 4.9.  That is about the 1st percentile of random
 * base62 strings of each length, and above long camelCase identifiers.
 */
#define ENT_BITS(n)  ((n) >= 55 ? 4.9 : 4.2 + 0.03 * ((double) (n) - 32))


static int
ent_sym(unsigned c)
{
    if (c >= 'A' && c <= 'Z') {
        return (int) (c - 'A');
    }
    if (c >= 'a' && c <= 'z') {
        return (int) (c - 'a' + 26);
    }
    if (c >= '0' && c <= '9') {
        return (int) (c - '0' + 52);
    }
    if (c == '+' || c == '-') {
        return 62;
    }
    if (c == '/' || c == '_') {
        return 63;
    }
    return -1;
}


static void
ent_close(bottle_scan_t *s)
{
    bottle_scan_entropy_t  *e;
    unsigned                cnt[64], i;
    double                  h;

    e = &s->ent;

    if (e->len >= ENT_MIN && e->len <= ENT_MAX && e->upper && e->lower
        && e->digit)
    {
        memset(cnt, 0, sizeof(cnt));
        for (i = 0; i < e->len; i++) {
            cnt[e->sym[i]]++;
        }
        h = 0;
        for (i = 0; i < 64; i++) {
            if (cnt[i]) {
                h -= cnt[i] * log2((double) cnt[i] / e->len);
            }
        }
        if (h / e->len >= ENT_BITS(e->len)) {
            bottle_scan_add(s, BOTTLE_DETECT_ENTROPY, "high_entropy",
                            e->start, e->start + e->len, 1, 0,
                            BOTTLE_VIEW_RAW);
        }
    }

    e->len = 0;
    e->upper = e->lower = e->digit = 0;
}


void
bottle_scan_entropy_feed(bottle_scan_t *s, const unsigned char *p, size_t n)
{
    int                     y;
    size_t                  i;
    bottle_scan_entropy_t  *e;

    e = &s->ent;

    for (i = 0; i < n; i++) {
        y = ent_sym(p[i]);
        if (y < 0) {
            if (e->len) {
                ent_close(s);
            }
            continue;
        }
        if (e->len == 0) {
            e->start = s->fpos + i;
            e->upper = e->lower = e->digit = 0;
        }
        if (e->len < ENT_MAX) {
            e->sym[e->len] = (unsigned char) y;
        }
        if (e->len <= ENT_MAX) {
            e->len++;
        }
        e->upper |= y < 26;
        e->lower |= y >= 26 && y < 52;
        e->digit |= y >= 52 && y < 62;
    }
}


void
bottle_scan_entropy_end(bottle_scan_t *s)
{
    if (s->ent.len) {
        ent_close(s);
    }
}
