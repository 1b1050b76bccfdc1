/*
 * sh(fmt, ...): a shell command, formatted, run by system(); its status,
 * or -1.  For the unit tests that build git repositories and packs with
 * git itself (gg_pack_test.c, gg_delta_test.c); needs _GNU_SOURCE.
 */
#ifndef SH_H
#define SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int
sh(const char *fmt, ...)
{
    int      rc;
    char    *cmd;
    va_list  ap;

    va_start(ap, fmt);
    rc = vasprintf(&cmd, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        return -1;
    }
    rc = system(cmd);
    free(cmd);
    return rc;
}

#endif /* SH_H */
