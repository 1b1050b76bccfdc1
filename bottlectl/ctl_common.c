/*
 * What every bottlectl file may call, and which calls none of them: the
 * error line and the usage line (stderr), a file or standard input read
 * whole (bottlectl_read()), the operator's name (bottlectl_operator()).
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bottlectl.h"


#define BOTTLECTL_POLICY_MAX  (64 * 1024 * 1024)    /* bytes read at most */


void
bottlectl_error(const char *fmt, ...)
{
    va_list  args;

    fflush(stdout);
    fputs("bottlectl: ", stderr);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
}


int
bottlectl_usage(const char *synopsis)
{
    bottlectl_error("usage: bottlectl %s", synopsis);

    return BOTTLECTL_USAGE;
}


int
bottlectl_read(char **out, size_t *len, const char *file)
{
    FILE    *f;
    char    *buf, *nbuf;
    size_t   cap, n, got;

    *out = NULL;
    *len = 0;

    f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    if (f == NULL) {
        bottlectl_error("cannot open '%s': %s", file, strerror(errno));
        return -1;
    }

    buf = NULL;
    cap = 0;
    n = 0;

    for ( ;; ) {
        if (n + 1 >= cap) {
            cap = cap ? cap * 2 : 65536;
            nbuf = cap <= BOTTLECTL_POLICY_MAX + 1 ? realloc(buf, cap) : NULL;
            if (nbuf == NULL) {
                bottlectl_error("cannot read '%s': %s", file,
                                cap > BOTTLECTL_POLICY_MAX + 1
                                ? "larger than 64 MiB" : "out of memory");
                goto failed;
            }
            buf = nbuf;
        }

        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;

        if (got == 0) {
            break;
        }
    }

    if (ferror(f)) {
        bottlectl_error("cannot read '%s': %s", file, strerror(errno));
        goto failed;
    }

    if (f != stdin) {
        fclose(f);
    }

    buf[n] = '\0';
    *out = buf;
    *len = n;

    return 0;

failed:

    if (f != stdin) {
        fclose(f);
    }

    free(buf);

    return -1;
}


const char *
bottlectl_operator(void)
{
    char         host[128];
    const char  *s;

    static char  who[256];

    s = getenv("BOTTLE_OPERATOR");
    if (s && s[0]) {
        return s;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "localhost");
    }

    host[sizeof(host) - 1] = '\0';
    s = getenv("USER");

    snprintf(who, sizeof(who), "%s@%s", s && s[0] ? s : "operator", host);

    return who;
}
