/*
 * Small helpers more than one part of libbottle needs: inline where
 * parsers call them per byte, in bottle_util.c otherwise.  Private to
 * lib/.
 */

#ifndef _BOTTLE_UTIL_H_INCLUDED_
#define _BOTTLE_UTIL_H_INCLUDED_


#include <stddef.h>


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


/* a formatted message into err (if errlen), then -1: for "return" */
int bottle_errf(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;


#endif /* _BOTTLE_UTIL_H_INCLUDED_ */
