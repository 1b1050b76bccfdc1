/*
 * The resident scanner's messages (gg_scand.h): libc only, linked into
 * the hook client, the scanner and the fuzz target.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scand.h"


static const char *gg_scand_next(const char **p, const char *end);
static int gg_scand_number(const char *s, unsigned base, unsigned long max,
    unsigned long *out);


int
gg_scand_env_passed(const char *name)
{
    size_t  i, n;

    static const char  *exact[] = { "PATH", "HOME", "TMPDIR", NULL };
    static const char  *prefix[] = { "GIT_", "GITGATE_", NULL };

    n = strcspn(name, "=");

    for (i = 0; exact[i]; i++) {
        if (n == strlen(exact[i]) && strncmp(name, exact[i], n) == 0) {
            return 1;
        }
    }

    for (i = 0; prefix[i]; i++) {
        if (n > strlen(prefix[i])
            && strncmp(name, prefix[i], strlen(prefix[i])) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* the string at *p, NUL-terminated before end and at most STR_MAX long */

static const char *
gg_scand_next(const char **p, const char *end)
{
    const char  *s, *nul;

    s = *p;
    if (s >= end) {
        return NULL;
    }
    nul = memchr(s, '\0', (size_t) (end - s));
    if (nul == NULL || nul - s > GG_SCAND_STR_MAX) {
        return NULL;
    }
    *p = nul + 1;
    return s;
}


static int
gg_scand_number(const char *s, unsigned base, unsigned long max,
    unsigned long *out)
{
    unsigned long  v;
    unsigned       d;

    if (*s == '\0' || strlen(s) > 10) {
        return -1;
    }
    for (v = 0; *s; s++) {
        if (*s < '0' || *s > '0' + (int) base - 1) {
            return -1;
        }
        d = (unsigned) (*s - '0');
        v = v * base + d;
    }
    if (v > max) {
        return -1;
    }
    *out = v;
    return 0;
}


int
gg_scand_msg_parse(gg_scand_msg_t *out, const char *buf, size_t len,
    char *err, size_t errlen)
{
    size_t          i;
    const char     *p, *end, *s;
    unsigned long   v;

    memset(out, 0, sizeof(*out));

    if (len == 0 || len > GG_SCAND_MSG_MAX || buf[len - 1] != '\0') {
        snprintf(err, errlen, "a request of %zu bytes (at most %d, ending "
                 "with NUL)", len, GG_SCAND_MSG_MAX);
        return -1;
    }

    p = buf;
    end = buf + len;

    s = gg_scand_next(&p, end);
    if (s == NULL || strcmp(s, GG_SCAND_MAGIC) != 0) {
        snprintf(err, errlen, "not a request (magic)");
        return -1;
    }

    out->mode = gg_scand_next(&p, end);
    if (out->mode == NULL
        || (strcmp(out->mode, "gate") != 0 && strcmp(out->mode, "scan") != 0))
    {
        snprintf(err, errlen, "an unknown mode");
        return -1;
    }

    out->cwd = gg_scand_next(&p, end);
    if (out->cwd == NULL || out->cwd[0] != '/') {
        snprintf(err, errlen, "a working directory not absolute");
        return -1;
    }

    s = gg_scand_next(&p, end);
    if (s == NULL || gg_scand_number(s, 8, 0777, &v) != 0) {
        snprintf(err, errlen, "a bad umask");
        return -1;
    }
    out->umask = (unsigned) v;

    s = gg_scand_next(&p, end);
    if (s == NULL || gg_scand_number(s, 10, GG_SCAND_ARGS_MAX, &v) != 0) {
        snprintf(err, errlen, "more than %d arguments", GG_SCAND_ARGS_MAX);
        return -1;
    }
    out->nargs = v;

    for (i = 0; i < out->nargs; i++) {
        out->args[i] = gg_scand_next(&p, end);
        if (out->args[i] == NULL) {
            snprintf(err, errlen, "argument %zu missing or too long", i);
            return -1;
        }
    }

    s = gg_scand_next(&p, end);
    if (s == NULL || gg_scand_number(s, 10, GG_SCAND_ENV_MAX, &v) != 0) {
        snprintf(err, errlen, "more than %d variables", GG_SCAND_ENV_MAX);
        return -1;
    }
    out->nenv = v;

    for (i = 0; i < out->nenv; i++) {
        s = gg_scand_next(&p, end);
        if (s == NULL || strchr(s, '=') == NULL || s[0] == '='
            || !gg_scand_env_passed(s))
        {
            snprintf(err, errlen, "variable %zu missing, too long or not "
                     "one the hook passes", i);
            return -1;
        }
        out->env[i] = s;
    }

    if (p != end) {
        snprintf(err, errlen, "bytes after the request");
        return -1;
    }

    return 0;
}


ssize_t
gg_scand_msg_build(char *buf, size_t size, const gg_scand_msg_t *m)
{
    int          n;
    size_t       len, i, k;
    char         num[3][16];
    const char  *part[4 + GG_SCAND_ARGS_MAX + 1 + GG_SCAND_ENV_MAX];

    if (m->nargs > GG_SCAND_ARGS_MAX || m->nenv > GG_SCAND_ENV_MAX) {
        return -1;
    }

    snprintf(num[0], sizeof(num[0]), "%o", m->umask & 0777);
    snprintf(num[1], sizeof(num[1]), "%zu", m->nargs);
    snprintf(num[2], sizeof(num[2]), "%zu", m->nenv);

    k = 0;
    part[k++] = GG_SCAND_MAGIC;
    part[k++] = m->mode;
    part[k++] = m->cwd;
    part[k++] = num[0];
    part[k++] = num[1];
    for (i = 0; i < m->nargs; i++) {
        part[k++] = m->args[i];
    }
    part[k++] = num[2];
    for (i = 0; i < m->nenv; i++) {
        part[k++] = m->env[i];
    }

    len = 0;
    for (i = 0; i < k; i++) {
        n = (int) strlen(part[i]);
        if (n > GG_SCAND_STR_MAX || len + n + 1 > size
            || len + n + 1 > GG_SCAND_MSG_MAX)
        {
            return -1;
        }
        memcpy(buf + len, part[i], (size_t) n + 1);
        len += (size_t) n + 1;
    }

    return (ssize_t) len;
}


int
gg_scand_reply_started(const char *buf, size_t len, long *pid)
{
    char           s[GG_SCAND_REPLY_MAX];
    unsigned long  v;

    if (len <= 8 || len >= sizeof(s) || memcmp(buf, "started ", 8) != 0) {
        return -1;
    }
    memcpy(s, buf + 8, len - 8);
    s[len - 8] = '\0';
    if (gg_scand_number(s, 10, 0x7fffffff, &v) != 0 || v < 2) {
        return -1;
    }
    *pid = (long) v;
    return 0;
}


int
gg_scand_reply_done(const char *buf, size_t len, int *status,
    long long *utime_us, long long *stime_us)
{
    int   n, st;
    char  s[GG_SCAND_REPLY_MAX];
    long long  u, k;

    if (len <= 5 || len >= sizeof(s) || memcmp(buf, "done ", 5) != 0
        || memchr(buf, '\0', len) != NULL)
    {
        return -1;
    }
    memcpy(s, buf, len);
    s[len] = '\0';
    n = 0;
    if (sscanf(s, "done %d %lld %lld%n", &st, &u, &k, &n) != 3
        || (size_t) n != len || st < 0 || st > 255 || u < 0 || k < 0)
    {
        return -1;
    }
    *status = st;
    *utime_us = u;
    *stime_us = k;
    return 0;
}


int
gg_scand_warm_name(char *out, size_t size, const char *bottle)
{
    size_t  i, n;

    n = bottle ? strlen(bottle) : 0;
    if (n == 0 || n > GG_SCAND_WARM_ID_MAX || bottle[0] == '.') {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (!((bottle[i] >= 'a' && bottle[i] <= 'z')
              || (bottle[i] >= 'A' && bottle[i] <= 'Z')
              || (bottle[i] >= '0' && bottle[i] <= '9')
              || bottle[i] == '.' || bottle[i] == '_' || bottle[i] == '-'
              || bottle[i] == ':' || bottle[i] == '@'))
        {
            return -1;
        }
    }
    return (size_t) snprintf(out, size, "w-%s", bottle) < size ? 0 : -1;
}


const char *
gg_scand_bottle(const char *mode, int nargs, const char *const *args,
    const char *gate_bottle)
{
    int  i;

    if (strcmp(mode, "gate") == 0) {
        return gate_bottle;
    }
    for (i = 0; i + 1 < nargs; i++) {
        if (strcmp(args[i], "--bottle") == 0) {
            return args[i + 1];
        }
    }
    return NULL;
}
