/*
 * sh(fmt, ...): a shell command, formatted, run by system(); its status,
 * or -1.  git_sandbox(dir, size, name): a fresh directory under /tmp for
 * them (mkdtemp()'s template, /tmp/<name>.XXXXXX), made git's HOME, with
 * no system configuration, no GIT_DIR or object directories from outside
 * and a fixed identity; 0, or -1.  For the unit tests that build git
 * repositories and packs with git itself (gg_pack_test.c,
 * gg_delta_test.c, gg_extent_test.c); needs _GNU_SOURCE.
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


static int
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

#endif /* SH_H */
