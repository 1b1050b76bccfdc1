
/*
 * The records' UTF-8 checks (bottle_record_int.h): a body's text goes into
 * the JSON only as valid UTF-8, checked a word at a time where it is
 * ASCII; and the short digest of a secret that records name
 * (bottle_record_digest).
 */

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_record_int.h"


/*
 * The length of buf's valid UTF-8 prefix; with cut, a sequence the cut
 * split at the end does not count against it.  *whole: all of buf is
 * valid (but for that split tail).
 */

size_t
bottle_record_utf8(const unsigned char *buf, size_t len, int cut, int *whole)
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


/* bottle_record.h */

void
bottle_record_utf8_fix(unsigned char *buf, size_t len)
{
    int     whole;
    size_t  off, ok;

    for (off = 0; off < len; off += ok + 1) {
        ok = bottle_record_utf8(buf + off, len - off, 0, &whole);
        if (off + ok >= len) {
            break;
        }

        buf[off + ok] = '?';
    }
}


char *
bottle_record_digest(char *out, const unsigned char *md)
{
    static const char  hex[] = "0123456789abcdef";

    size_t  i;
    char   *p;

    p = out;
    memcpy(p, "sha256:", 7);
    p += 7;

    for (i = 0; i < BOTTLE_RECORD_DIGEST_HEX / 2; i++) {
        *p++ = hex[md[i] >> 4];
        *p++ = hex[md[i] & 0xf];
    }

    *p = '\0';

    return out;
}
