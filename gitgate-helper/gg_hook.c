/*
 * What the pre-receive hooks share (gg_hook.h).
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "gg_hook.h"
#include "gg_trailer.h"


int
gg_read_input(char **out, size_t *outlen, char *err, size_t errlen)
{
    char    *buf, *p;
    size_t   len, cap, n;

    cap = 65536;
    len = 0;
    buf = malloc(cap);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    while ((n = fread(buf + len, 1, cap - len, stdin)) > 0) {
        len += n;
        if (len == cap) {
            if (cap >= GG_MAX_INPUT) {
                snprintf(err, errlen, "ref updates of %d bytes or more",
                         GG_MAX_INPUT);
                free(buf);
                return -1;
            }
            p = realloc(buf, cap * 2);
            if (p == NULL) {
                snprintf(err, errlen, "out of memory");
                free(buf);
                return -1;
            }
            buf = p;
            cap *= 2;
        }
    }

    if (ferror(stdin)) {
        snprintf(err, errlen, "cannot read the ref updates");
        free(buf);
        return -1;
    }

    *out = buf;
    *outlen = len;
    return 0;
}


void
gg_report_marked(const gg_finding_t *f, const char *what)
{
    fprintf(stderr, "git-gate refused this push (rule: %s): %s\n"
            "  where: %s\n", f->rule, what, f->where);

    if (f->also) {
        fprintf(stderr, "  and %zu more place%s of the same value\n", f->also,
                f->also == 1 ? "" : "s");
    }
}


void
gg_report_print(const gg_report_t *r)
{
    size_t               i;
    const gg_finding_t  *f;

    for (i = 0; i < r->n; i++) {
        f = &r->f[i];
        if (f->outcome == GG_NEEDS_ALLOW) {
            gg_report_marked(f, "needs gitleaks-allow approval");
            fprintf(stderr, "  the line is marked gitleaks:allow; only the "
                    "operator can allow it, and only in a push with no "
                    "other finding\n");
        } else {
            fprintf(stderr, "git-gate refused this push (rule: %s)\n"
                    "  where: %s\n", f->rule, f->where);
        }
    }

    if (r->more) {
        fprintf(stderr, "git-gate: %zu more findings not listed\n", r->more);
    }

    if (r->more && !r->refuse) {
        fprintf(stderr, "git-gate: this push holds more than %d marked "
                "values; the operator is asked about at most %d at a time: "
                "push them in smaller pushes\n", GG_MAX_FINDINGS,
                GG_MAX_FINDINGS);
        return;
    }

    for (i = 0; i < r->n && strcmp(r->f[i].rule, GG_TRAILER_RULE) == 0;
         i++)
    {
        /* void */
    }

    if (r->n && i == r->n && !r->more) {
        fprintf(stderr, "git-gate: a commit's " GG_TRAILER_NAME " trailer "
                "must name the bottle that pushes it: fix the message (git "
                "commit --amend, git rebase -i), then push again\n");
        return;
    }

    for (i = 0; i < r->n; i++) {
        if (strcmp(r->f[i].rule, "scan_budget") == 0) {
            fprintf(stderr, "git-gate: the push is over the scan's budget: "
                    "push it in smaller pushes, or ask the operator\n");
            return;
        }
        if (strcmp(r->f[i].rule, "undecodable") == 0) {
            fprintf(stderr, "git-gate: a file that cannot be decoded within "
                    "the caps is never passed unread: remove it or store it "
                    "uncompressed\n");
            break;
        }
    }

    fprintf(stderr, "git-gate: remove the secret from the commits that "
            "carry it (git commit --amend, git rebase -i), then push "
            "again\n");
}


const char *
gg_scan_cache(const char *dir)
{
    struct stat  st;

    if (dir == NULL || dir[0] == '\0') {
        return NULL;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return NULL;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || st.st_uid != geteuid() || (st.st_mode & 022))
    {
        return NULL;
    }
    return dir;
}
