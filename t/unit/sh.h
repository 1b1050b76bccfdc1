/*
 * sh(fmt, ...): a shell command, formatted, run by system(); its status,
 * or -1.  sh_out(len, fmt, ...): the command's whole output,
 * malloc()ed and NUL-terminated (*len its length when len is not NULL),
 * or NULL.  git_sandbox(dir, size, name): a fresh directory under /tmp for
 * them (mkdtemp()'s template, /tmp/<name>.XXXXXX), made git's HOME, with
 * no system configuration, no GIT_DIR or object directories from outside
 * and a fixed identity; 0, or -1.  For the unit tests that build git
 * repositories and packs with git itself (gg_pack_test.c,
 * gg_delta_test.c, gg_extent_test.c; inline: each uses some of them);
 * needs _GNU_SOURCE.
 */
#ifndef SH_H
#define SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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


static inline char *
vsh_out(size_t *len, const char *fmt, va_list ap)
{
    int      rc;
    char    *cmd, *b, *t;
    size_t   n, cap;
    FILE    *f;

    rc = vasprintf(&cmd, fmt, ap);
    if (rc < 0) {
        return NULL;
    }
    f = popen(cmd, "r");
    free(cmd);
    if (f == NULL) {
        return NULL;
    }
    cap = 4096;
    n = 0;
    b = malloc(cap);
    while (b != NULL) {
        if (n + 4096 + 1 > cap) {
            t = realloc(b, cap * 2);
            if (t == NULL) {
                free(b);
                b = NULL;
                break;
            }
            b = t;
            cap *= 2;
        }
        rc = (int) fread(b + n, 1, 4096, f);
        if (rc <= 0) {
            break;
        }
        n += (size_t) rc;
    }
    pclose(f);
    if (b != NULL) {
        b[n] = '\0';
    }
    if (len) {
        *len = n;
    }
    return b;
}


static inline char *
sh_out(size_t *len, const char *fmt, ...)
{
    char     *b;
    va_list   ap;

    va_start(ap, fmt);
    b = vsh_out(len, fmt, ap);
    va_end(ap);
    return b;
}


static inline int
git_sandbox(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "/tmp/%s.XXXXXX", name);
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("HOME", dir, 1);
    setenv("GIT_AUTHOR_NAME", "T", 1);
    setenv("GIT_AUTHOR_EMAIL", "t@x", 1);
    setenv("GIT_COMMITTER_NAME", "T", 1);
    setenv("GIT_COMMITTER_EMAIL", "t@x", 1);
    unsetenv("GIT_DIR");
    unsetenv("GIT_OBJECT_DIRECTORY");
    unsetenv("GIT_ALTERNATE_OBJECT_DIRECTORIES");
    return 0;
}


/* the new file's lines (1 to nl) a `git diff -U0` output d adds, marked
 * in ref[] */
static inline void
git_diff_added(unsigned char *ref, size_t nl, const char *d)
{
    size_t       i, s, cnt;
    const char  *p;
    char        *e;

    for (p = d; p != NULL && (p = strstr(p, "\n@@ -")) != NULL; p++) {
        p = strchr(p, '+');
        if (p == NULL) {
            break;
        }
        s = strtoul(p + 1, &e, 10);
        p = e;
        cnt = 1;
        if (*p == ',') {
            cnt = strtoul(p + 1, &e, 10);
            p = e;
        }
        for (i = 0; i < cnt; i++) {
            if (s + i >= 1 && s + i <= nl) {
                ref[s + i] = 1;
            }
        }
    }
}

#endif /* SH_H */
