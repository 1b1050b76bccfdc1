/*
 * Unit test of git-gate's added lines from a pack's delta
 * (gitgate-helper/gg_scan.c, gg_delta_lines()): real pushes' packs,
 * written as receive-pack writes them (`git pack-objects --revs --thin`
 * piped into `git index-pack --fix-thin --stdin` in a repository that
 * holds the base as a pack), scanned with gg_scan_push().  A token in an
 * appended line, an inserted line, a line glued from two pieces of the old
 * version, a PEM key whose lines were shuffled in the old version and are
 * in order in the new one: found, on the right line; a token on an
 * unchanged line: not reported; a token made by deleting the character
 * before it (`x<token>`: no token, the rule wants a boundary), its line
 * the tail of an old one: found, whether the old version is the push's
 * base or in the push.  The new version stored on the old one
 * (a thin pack's delta) and the old on the new (two commits in one push).
 * And a file whose object is missing: the scan fails, saying so.
 */

#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "sh.h"
#include "bottle_scan.h"
#include "gg_scan.h"
#include "gg_update.h"


static char                    dir[256];
static bottle_scan_secrets_t  *sec;
static bottle_scan_db_t       *db;


/* a command's first line of output, malloc()ed ("" when none) */
static char *
out(const char *fmt, ...)
{
    char     *b;
    va_list   ap;

    va_start(ap, fmt);
    b = vsh_out(NULL, fmt, ap);
    va_end(ap);
    if (b == NULL) {
        return strdup("");
    }
    b[strcspn(b, "\n")] = '\0';
    return b;
}


/* the work tree's file: lines[0..n) joined */
static void
write_file(const char *name, char **lines, size_t n)
{
    char   path[512];
    FILE  *f;
    size_t i;

    snprintf(path, sizeof(path), "%s/w/%s", dir, name);
    f = fopen(path, "w");
    for (i = 0; i < n; i++) {
        fputs(lines[i], f);
    }
    fclose(f);
}


static char *
commit(const char *msg)
{
    sh("cd %s/w && git add -A && git commit -q -m '%s'", dir, msg);
    return out("git -C %s/w rev-parse HEAD", dir);
}


/*
 * A fresh receiving repository holding base as a pack, the push of
 * base..tip as receive-pack stores it; then the scan of that update
 */
static int
push_scan(gg_report_t *r, const char *base, const char *tip, char *err,
    size_t errlen)
{
    int           rc;
    char          line[256], repo[512];
    gg_updates_t  u;

    snprintf(repo, sizeof(repo), "%s/r.git", dir);
    if (sh("rm -rf %s && git init -q --bare %s && git -C %s -c "
           "fetch.unpackLimit=1 fetch -q %s/w %s:refs/heads/main && "
           "printf '%%s\\n^%%s\\n' %s %s | git -C %s/w pack-objects -q --revs "
           "--thin --no-reuse-delta --stdout | git -C %s index-pack "
           "--fix-thin --stdin >/dev/null", repo, repo, repo, dir, base, tip,
           base, dir, repo)
        != 0)
    {
        snprintf(err, errlen, "the push's pack was not written");
        return -1;
    }

    snprintf(line, sizeof(line), "%s %s refs/heads/main\n", base, tip);
    if (gg_updates_parse(&u, line, strlen(line), err, errlen) != 0) {
        return -1;
    }
    rc = gg_scan_push(r, repo, NULL, &u, sec, err, errlen);
    gg_updates_free(&u);
    return rc;
}


/* the finding of rule in r ending in where_tail, or none */
static int
has(const gg_report_t *r, const char *rule, const char *where_tail)
{
    size_t  i, n, k;

    for (i = 0; i < r->n; i++) {
        n = strlen(r->f[i].where);
        k = strlen(where_tail);
        if (strcmp(r->f[i].rule, rule) == 0
            && (k == 0 || (n >= k
                           && strcmp(r->f[i].where + n - k, where_tail) == 0)))
        {
            return 1;
        }
    }
    return 0;
}


static void
show(const gg_report_t *r)
{
    size_t  i;

    for (i = 0; i < r->n; i++) {
        printf("#   finding: %s at %s\n", r->f[i].rule, r->f[i].where);
    }
}


static char **base_lines;
static size_t nbase = 3000;


static char **
copy_base(size_t extra)
{
    char   **l;
    size_t   i;

    l = calloc(nbase + extra, sizeof(char *));
    for (i = 0; i < nbase; i++) {
        l[i] = base_lines[i];
    }
    return l;
}


int
main(void)
{
    int            rc;
    char           err[512], where[64], tok[64], tok2[64], *b, *t, *t1, *t2;
    char         **l, buf[128], *own[64];
    size_t         i, n, nown = 0;
    gg_report_t    r;
    bottle_str_t   canary;

    /* the values, built so that no token sits whole in this file */
    snprintf(tok, sizeof(tok), "ghp_%s",
             "Zq8rT4mW9xK2pL7vN3bH6cJ1dF5gY0sA1eU2");
    snprintf(tok2, sizeof(tok2), "ghp_%s",
             "Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3Wx4");

    if (git_sandbox(dir, sizeof(dir), "gg_delta_test") != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    canary.data = "canary-delta-test-4242";
    canary.len = strlen(canary.data);
    if (bottle_scan_db_create(&db, err, sizeof(err)) != 0
        || bottle_scan_secrets_create_held(&sec, db, &canary, NULL, 0, NULL,
                                           0, err, sizeof(err)) != 0)
    {
        printf("Bail out! %s\n", err);
        return 1;
    }

    /* the base: 3000 distinct lines, a token on line 500 (on the remote
     * already) */
    base_lines = calloc(nbase, sizeof(char *));
    for (i = 0; i < nbase; i++) {
        snprintf(buf, sizeof(buf), "static int value_%zu = %zu * 7919 %% "
                 "104729; /* line %zu */\n", i, i * 31, i + 1);
        base_lines[i] = strdup(buf);
    }
    snprintf(buf, sizeof(buf), "old_token = \"%s\"\n", tok2);
    free(base_lines[499]);
    base_lines[499] = strdup(buf);
    /* for the glued line: two pieces on lines 100 and 200 */
    free(base_lines[99]);
    base_lines[99] = strdup("    key = \"ghp_\n");
    free(base_lines[199]);
    base_lines[199] = strdup("Zq8rT4mW9xK2pL7vN3bH6cJ1dF5gY0sA1eU2\"; /* tail "
                             "*/\n");
    /* a PEM key's lines, shuffled: header last */
    free(base_lines[1000]);
    base_lines[1000] = strdup("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePz"
                              "Nm0\n");
    free(base_lines[1001]);
    base_lines[1001] = strdup("tCOmZ3kFWTzJFCb0Z7JbPQkx5Xf2YpN8rQwLs4DkLmVw\n");
    free(base_lines[1002]);
    base_lines[1002] = strdup("-----BEGIN RSA PRIVATE KEY-----\n");
    free(base_lines[1003]);
    base_lines[1003] = strdup("}\n");

    sh("git init -q %s/w", dir);
    write_file("a.txt", base_lines, nbase);
    b = commit("base");

    /* appended */
    l = copy_base(1);
    snprintf(buf, sizeof(buf), "new_token = \"%s\"\n", tok);
    l[nbase] = buf;
    write_file("a.txt", l, nbase + 1);
    t = commit("append");
    rc = push_scan(&r, b, t, err, sizeof(err));
    snprintf(where, sizeof(where), "file a.txt line %zu", nbase + 1);
    ok(rc == 0 && r.delta_files == 1 && r.n == 1
       && has(&r, "github_pat_classic", where),
       "appended line: found at %s, by the pack's delta (%llu)", where,
       (unsigned long long) r.delta_files);
    show(&r);
    ok(r.added < 200, "appended line: %llu bytes added",
       (unsigned long long) r.added);
    gg_report_free(&r);
    free(l);
    free(t);

    /* inserted in the middle */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(1);
    memmove(l + 1501, l + 1500, (nbase - 1500) * sizeof(char *));
    l[1500] = buf;
    write_file("a.txt", l, nbase + 1);
    t = commit("insert");
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.delta_files == 1 && r.n == 1
       && has(&r, "github_pat_classic", "file a.txt line 1501"),
       "inserted line: found at line 1501, by the pack's delta");
    show(&r);
    gg_report_free(&r);
    free(l);
    free(t);

    /* glued from lines 100 and 200 of the old version, on line 300 */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(0);
    snprintf(buf, sizeof(buf), "    key = \"ghp_"
             "Zq8rT4mW9xK2pL7vN3bH6cJ1dF5gY0sA1eU2\"; /* tail */\n");
    l[299] = buf;
    write_file("a.txt", l, nbase);
    t = commit("glue");
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.delta_files == 1 && r.n == 1
       && has(&r, "github_pat_classic", "file a.txt line 300"),
       "a line glued from two old pieces: found at line 300");
    show(&r);
    gg_report_free(&r);
    free(l);
    free(t);

    /* the PEM key's lines in order */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(0);
    l[1000] = base_lines[1002];
    l[1001] = base_lines[1000];
    l[1002] = base_lines[1001];
    l[1003] = base_lines[1003];
    write_file("a.txt", l, nbase);
    t = commit("pem");
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.delta_files == 1 && has(&r, "private_key", ""),
       "a PEM key's lines shuffled before, in order now: found (%s)",
       rc ? err : "");
    show(&r);
    gg_report_free(&r);
    free(l);
    free(t);

    /* x<token> on the forge, then the x deleted: the new line is the
     * tail of the old one, and a line only counts as there when the same
     * whole line was */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(0);
    snprintf(buf, sizeof(buf), "x%s = 1;\n", tok);
    l[799] = buf;
    write_file("a.txt", l, nbase);
    t1 = commit("x and a token");
    rc = push_scan(&r, b, t1, err, sizeof(err));
    ok(rc == 0 && r.n == 0, "x<token>: no token (a boundary wanted)");
    show(&r);
    gg_report_free(&r);
    snprintf(buf, sizeof(buf), "%s = 1;\n", tok);
    write_file("a.txt", l, nbase);
    t = commit("the x deleted");
    rc = push_scan(&r, t1, t, err, sizeof(err));
    ok(rc == 0 && r.delta_files == 1 && r.n == 1
       && has(&r, "github_pat_classic", "file a.txt line 800"),
       "the x deleted, pushed on its own (the new version on the old): "
       "found at line 800");
    show(&r);
    gg_report_free(&r);
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.n == 1 && has(&r, "github_pat_classic",
                                  "file a.txt line 800"),
       "x<token> and the x deleted in one push: found at line 800");
    show(&r);
    gg_report_free(&r);
    free(l);
    free(t1);
    free(t);

    /* a line changed far from the old token: nothing reported */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(0);
    l[1999] = "static int changed = 1;\n";
    l[500] = "static int changed_next_to_the_token = 2;\n";
    write_file("a.txt", l, nbase);
    t = commit("edit");
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.delta_files == 1 && r.n == 0 && r.more == 0,
       "unchanged lines (a token next to a changed line too): not "
       "reported");
    show(&r);
    ok(r.added > 0 && r.added < 100, "the changed lines only: %llu bytes",
       (unsigned long long) r.added);
    gg_report_free(&r);
    free(l);
    free(t);

    /* two commits in one push: the older new version stored as a delta
     * of the newer (pack-objects' order), a token appended by the newer */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(41);
    n = nbase;
    memmove(l + 1040, l + 1000, (nbase - 1000) * sizeof(char *));
    for (i = 0; i < 40; i++) {
        snprintf(buf, sizeof(buf), "int inserted_%zu;\n", i);
        l[1000 + i] = strdup(buf);
    }
    n += 40;
    write_file("a.txt", l, n);
    t1 = commit("first");
    snprintf(buf, sizeof(buf), "new_token = \"%s\"\n", tok);
    l[n] = buf;
    write_file("a.txt", l, n + 1);
    t = commit("second");
    rc = push_scan(&r, b, t, err, sizeof(err));
    snprintf(where, sizeof(where), "file a.txt line %zu", n + 1);
    ok(rc == 0 && r.n == 1 && has(&r, "github_pat_classic", where),
       "two commits: the token found at %s", where);
    show(&r);
    ok(r.delta_files >= 1, "two commits: %llu file(s) by the pack's delta",
       (unsigned long long) r.delta_files);
    {
        char *kind = out("git -C %s/r.git cat-file --batch-check="
                         "'%%(deltabase)' <<EOF\n%s:a.txt\nEOF", dir, t1);
        char *nb = out("git -C %s/r.git rev-parse %s:a.txt", dir, t);

        ok(kind && nb && strcmp(kind, nb) == 0,
           "two commits: the older version is stored on the newer");
        free(kind);
        free(nb);
    }
    gg_report_free(&r);
    free(t1);
    free(t);
    for (i = 0; i < 40; i++) {
        free(l[1000 + i]);
    }
    free(l);

    /* three commits in one push: the first two versions stored as deltas
     * of the third (pack-objects' star), neither on the other; a token
     * inserted by the second */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(100);
    n = nbase;
    for (i = 0; i < 30; i++) {
        snprintf(buf, sizeof(buf), "int tail_a_%zu;\n", i);
        l[n++] = own[nown++] = strdup(buf);
    }
    write_file("a.txt", l, n);
    t1 = commit("one");
    memmove(l + 2001, l + 2000, (n - 2000) * sizeof(char *));
    snprintf(buf, sizeof(buf), "new_token = \"%s\";\n", tok);
    l[2000] = own[nown++] = strdup(buf);
    n++;
    write_file("a.txt", l, n);
    t2 = commit("two");
    for (i = 0; i < 30; i++) {
        snprintf(buf, sizeof(buf), "int tail_b_%zu;\n", i);
        l[n++] = own[nown++] = strdup(buf);
    }
    write_file("a.txt", l, n);
    t = commit("three");
    rc = push_scan(&r, b, t, err, sizeof(err));
    ok(rc == 0 && r.n == 1 && has(&r, "github_pat_classic",
                                  "file a.txt line 2001"),
       "three commits: the token found at line 2001");
    show(&r);
    ok(r.delta_files >= 2, "three commits: %llu file(s) by the pack's "
       "deltas", (unsigned long long) r.delta_files);
    ok(r.added < 4000, "three commits: only the added lines (%llu bytes)",
       (unsigned long long) r.added);
    {
        char *b1 = out("git -C %s/r.git cat-file --batch-check="
                       "'%%(deltabase)' <<EOF\n%s:a.txt\nEOF", dir, t1);
        char *b2 = out("git -C %s/r.git cat-file --batch-check="
                       "'%%(deltabase)' <<EOF\n%s:a.txt\nEOF", dir, t2);
        char *v1 = out("git -C %s/r.git rev-parse %s:a.txt", dir, t1);

        ok(b1 && b2 && v1 && strcmp(b1, b2) == 0 && strcmp(b2, v1) != 0
           && strspn(b1, "0") != strlen(b1),
           "three commits: the first two versions on one base (%s)",
           b1 ? b1 : "");
        free(b1);
        free(b2);
        free(v1);
    }
    gg_report_free(&r);
    for (i = 0; i < nown; i++) {
        free(own[i]);
    }
    free(l);
    free(t1);
    free(t2);
    free(t);

    /* a file's object missing (loose, so git cat-file's to read): the
     * scan cannot run, and says which */
    sh("cd %s/w && git checkout -q %s", dir, b);
    l = copy_base(0);
    l[10] = "int gone;\n";
    write_file("a.txt", l, nbase);
    free(l);
    t = commit("missing");
    {
        char  *blob, line[256], repo[512];
        gg_updates_t  u;

        blob = out("git -C %s/w rev-parse %s:a.txt", dir, t);
        sh("rm -f %s/w/.git/objects/%.2s/%s", dir, blob, blob + 2);
        snprintf(repo, sizeof(repo), "%s/w/.git", dir);
        snprintf(line, sizeof(line), "%s %s refs/heads/main\n", b, t);
        rc = gg_updates_parse(&u, line, strlen(line), err, sizeof(err)) == 0
             ? gg_scan_push(&r, repo, NULL, &u, sec, err, sizeof(err)) : -2;
        snprintf(buf, sizeof(buf), "object %.12s is missing", blob);
        ok(rc == -1 && strstr(err, buf) != NULL,
           "a missing object: the scan fails (%s)", err);
        gg_report_free(&r);
        gg_updates_free(&u);
        free(blob);
    }
    free(t);
    for (i = 0; i < nbase; i++) {
        free(base_lines[i]);
    }
    free(base_lines);
    free(b);

    sh("rm -rf %s", dir);
    bottle_scan_secrets_free(sec);
    bottle_scan_db_free(db);
    return done_testing();
}
