/*
 * The decoded views' private pieces, shared by bottle_scan_decode.c (the
 * JSON and percent views, the triggers, the helpers that build literals,
 * entropy) and bottle_scan_skel.c (the skeleton view): the decoder states
 * and the byte classes, inline because they run per byte.
 */

#ifndef _BOTTLE_SCAN_VIEW_H_INCLUDED_
#define _BOTTLE_SCAN_VIEW_H_INCLUDED_


#include "bottle_scan_int.h"
#include "bottle_util.h"


/* decoder states */
#define D_TEXT      0
#define D_BSLASH    1
#define D_U0        2       /* "\u" and 0-3 hex digits: D_U0 + digits */
#define D_PCT       6       /* "%" */
#define D_PCT1      7       /* "%X" */
#define D_PCT25     8       /* "%25": a second level */
#define D_PCT251    9       /* "%25X" */
#define D_AMP       10      /* "&" */
#define D_AMPH      11      /* "&#" */
#define D_AMPD      12      /* "&#" and decimal digits */
#define D_AMPX      13      /* "&#x" */
#define D_AMPXD     14      /* "&#x" and hex digits */
#define D_BSLASH2   15      /* an even run of backslashes (D_BSLASH: odd) */

/* the most digits of an HTML numeric character reference we decode */
#define AMP_DEC_MAX  7
#define AMP_HEX_MAX  6


static inline int
is_alnum(unsigned c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}


/* a character some token is made of: decoding one changes what matches */
static inline int
is_token_char(unsigned c)
{
    return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '/'
           || c == '+';
}


/* the decoders' SIMD: 0 none, 1 SSSE3, 2 AVX-512 (BW, VBMI2) */
extern int  bottle_scan_skel_level;

void bottle_scan_skel_flush(bottle_scan_view_t *v);


#endif /* _BOTTLE_SCAN_VIEW_H_INCLUDED_ */
