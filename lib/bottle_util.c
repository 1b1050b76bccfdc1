/*
 * libbottle's small shared helpers (bottle_util.h).
 */

#include <stdarg.h>
#include <stdio.h>

#include "bottle_util.h"


int
bottle_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }

    return -1;
}
