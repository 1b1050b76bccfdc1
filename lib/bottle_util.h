/*
 * Small helpers more than one part of libbottle needs, inline because
 * parsers call them per byte.  Private to lib/.
 */

#ifndef _BOTTLE_UTIL_H_INCLUDED_
#define _BOTTLE_UTIL_H_INCLUDED_


/* the value of a hex digit in either case, -1 for any other byte */
static inline int
bottle_hexval(unsigned c)
{
    if (c >= '0' && c <= '9') {
        return (int) c - '0';
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return (int) c - 'a' + 10;
    }

    return -1;
}


#endif /* _BOTTLE_UTIL_H_INCLUDED_ */
