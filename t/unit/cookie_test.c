/*
 * Unit tests for the Cookie header filter and the Set-Cookie reader
 * (lib/bottle_cookie.c).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_cookie.h"


#define U(s)  ((const unsigned char *) (s))


/* what the callbacks were asked */
typedef struct {
    const char  *want;      /* "name=value" pairs to keep, ' '-separated;
                               NULL keeps all */
    int          asked;
    char         seen[512]; /* "name|value," of every call */
} keep_t;


static int
keep(void *data, const unsigned char *name, size_t name_len,
    const unsigned char *value, size_t value_len)
{
    keep_t      *k = data;
    char         pair[256];
    size_t       n, plen;
    const char  *w, *e;

    k->asked++;

    n = strlen(k->seen);
    if (n + name_len + value_len + 2 < sizeof(k->seen)) {
        memcpy(k->seen + n, name, name_len);
        k->seen[n + name_len] = '|';
        memcpy(k->seen + n + name_len + 1, value, value_len);
        k->seen[n + name_len + 1 + value_len] = ',';
        k->seen[n + name_len + 2 + value_len] = '\0';
    }

    if (k->want == NULL) {
        return 1;
    }

    if (name_len + 1 + value_len >= sizeof(pair)) {
        return 0;
    }

    memcpy(pair, name, name_len);
    pair[name_len] = '=';
    memcpy(pair + name_len + 1, value, value_len);
    plen = name_len + 1 + value_len;

    for (w = k->want; *w; w = *e ? e + 1 : e) {
        e = strchr(w, ' ');
        if (e == NULL) {
            e = w + strlen(w);
        }

        if ((size_t) (e - w) == plen && memcmp(w, pair, plen) == 0) {
            return 1;
        }
    }

    return 0;
}


/* the filtered header of one input, or "(space)" */

static const char *
filter_n(const char **ins, size_t n, const char *want, size_t cap, keep_t *k)
{
    static char           out[65536];
    size_t                i;
    ssize_t               rc;
    bottle_cookie_str_t   in[8];
    keep_t                local;

    if (k == NULL) {
        k = &local;
    }

    memset(k, 0, sizeof(*k));
    k->want = want;

    for (i = 0; i < n; i++) {
        in[i].data = U(ins[i]);
        in[i].len = strlen(ins[i]);
    }

    rc = bottle_cookie_filter((unsigned char *) out, cap, in, n, keep, k);
    if (rc < 0) {
        return "(space)";
    }

    out[rc] = '\0';

    return out;
}


static const char *
filter(const char *in, const char *want)
{
    return filter_n(&in, 1, want, bottle_cookie_filter_bound(strlen(in)),
                    NULL);
}


/* every pair of out (as written) is a pair of in (trimmed) */

static int
subset(const char *out, const char *in)
{
    char        name[64];
    const char *p, *e, *q, *qe, *nb, *ne, *vb, *ve, *eq;

    for (p = out; *p; p = *e ? e + 2 : e) {
        e = strstr(p, "; ");
        if (e == NULL) {
            e = p + strlen(p);
        }

        for (q = in; ; q = qe + 1) {
            qe = strchr(q, ';');
            if (qe == NULL) {
                qe = q + strlen(q);
            }

            eq = memchr(q, '=', (size_t) (qe - q));
            if (eq) {
                for (nb = q; nb < eq && (*nb == ' ' || *nb == '\t'); nb++) {}
                for (ne = eq; ne > nb && (ne[-1] == ' ' || ne[-1] == '\t');
                     ne--) {}
                for (vb = eq + 1; vb < qe && (*vb == ' ' || *vb == '\t');
                     vb++) {}
                for (ve = qe; ve > vb && (ve[-1] == ' ' || ve[-1] == '\t');
                     ve--) {}

                if ((size_t) (ne - nb) < sizeof(name)
                    && (size_t) (e - p) == (size_t) (ne - nb) + 1
                                           + (size_t) (ve - vb)
                    && memcmp(p, nb, (size_t) (ne - nb)) == 0
                    && p[ne - nb] == '='
                    && memcmp(p + (ne - nb) + 1, vb, (size_t) (ve - vb)) == 0)
                {
                    break;
                }
            }

            if (*qe == '\0') {
                return 0;
            }
        }
    }

    return 1;
}


static void
test_filter(void)
{
    char         *big, *p;
    size_t        i, len;
    keep_t        k;
    const char   *two[2], *r;

    is_str(filter("a=1; b=2", NULL), "a=1; b=2", "all kept");
    is_str(filter("a=1;b=2;c=3", NULL), "a=1; b=2; c=3",
           "\";\" in, \"; \" out: the output is longer than the input");
    is_str(filter("sid=s3cr3t; evil=attacker; theme=light",
                  "sid=s3cr3t theme=dark"),
           "sid=s3cr3t", "only the pairs the callback keeps");
    is_str(filter("a=1", "b=1"), "", "none kept");
    is_str(filter("", NULL), "", "empty input");
    is_str(filter("  a = 1 ;b=\t2\t; ", NULL), "a=1; b=2",
           "spaces and tabs around names and values trimmed");
    is_str(filter("foo; =x; b=; ;;", NULL), "b=",
           "no '=' and empty names skipped, empty value kept");
    is_str(filter("a=b=c; d=e", NULL), "a=b=c; d=e",
           "a value may hold '='");
    is_str(filter("ab=1; a=2; b=3; ab=4", NULL), "ab=1; a=2; b=3",
           "a name is not a prefix of another");
    is_str(filter("a=b=c; b=1", NULL), "a=b=c; b=1",
           "a name inside a written value is not written");

    /* a repeated name: once, its first kept pair */

    is_str(filter("a=1;a=1;a=1", "a=1"), "a=1", "a repeated pair once");
    is_str(filter("a=2; a=1; a=3; a=1", "a=1"), "a=1",
           "the first kept pair of a name");
    is_str(filter("a=2; a=1", NULL), "a=2", "the first, when all are kept");

    filter_n((const char *[]) { "a=2;a=1;a=1;b=2;a=1;a=3" }, 1, "a=1 b=2",
             4096, &k);
    is_int(k.asked, 3, "not asked again about a name already written");
    is_str(k.seen, "a|2,a|1,b|2,", "asked until a pair of the name is kept");

    filter_n((const char *[]) { " x = y z ; q=\t" }, 1, NULL, 4096, &k);
    is_str(k.seen, "x|y z,q|,", "the callback sees trimmed names and values");

    /* several headers */

    two[0] = "a=1";
    two[1] = "a=1; b=2";
    is_str(filter_n(two, 2, NULL, 64, NULL), "a=1; b=2",
           "several headers: joined, a name once across them");
    two[0] = "";
    two[1] = "c=3";
    is_str(filter_n(two, 2, NULL, 64, NULL), "c=3", "an empty header");
    is_str(filter_n(two, 0, NULL, 64, NULL), "", "no header");

    /* the overflow of issue 11: "a=1;" over 8 KB, a=1 in the jar */

    len = 8192;
    big = malloc(len + 1);
    for (i = 0; i + 4 <= len; i += 4) {
        memcpy(big + i, "a=1;", 4);
    }
    big[i] = '\0';

    is_str(filter_n((const char **) &big, 1, "a=1", strlen(big), NULL),
           "a=1", "8 KB of a=1; in, a=1 once out, in the input's length");

    /* all distinct names kept: the output is longer than the input */

    for (i = 0, p = big; p + 6 <= big + len; i++) {
        p += sprintf(p, "%c%c=%c;", 'a' + (int) (i % 26),
                     'a' + (int) (i / 26 % 26), '0' + (int) (i % 10));
        if (i == 26 * 26 - 1) {
            break;
        }
    }
    *p = '\0';
    len = strlen(big);

    r = filter_n((const char **) &big, 1, NULL, len, NULL);
    is_str(r, "(space)", "distinct pairs in the input's length: no room");

    r = filter_n((const char **) &big, 1, NULL,
                 bottle_cookie_filter_bound(len), NULL);
    ok(strlen(r) > len && strlen(r) <= bottle_cookie_filter_bound(len),
       "distinct pairs: longer than the input, within the bound");
    ok(subset(r, big), "distinct pairs: every output pair is an input pair");

    /*
     * more distinct names than the table of written names holds (384):
     * those after it are found by a scan; each name still once
     */

    free(big);
    big = malloc(65536);
    for (i = 0, p = big; i < 2 * 676; i++) {
        p += sprintf(p, "%c%c=%d;", 'a' + (int) (i % 676 / 26),
                     'a' + (int) (i % 26), (int) i);
    }
    *p = '\0';

    r = filter_n((const char **) &big, 1, NULL, 65536, NULL);
    len = 0;
    for (p = (char *) r; (p = strchr(p, '=')) != NULL; p++) {
        len++;
    }
    is_int(len, 676, "676 distinct names twice: each once");
    ok(strncmp(r, "aa=0; ab=1; ", 12) == 0
       && strcmp(r + strlen(r) - 8, "; zz=675") == 0,
       "676 distinct names: the first pair of each, in order");

    free(big);

    /* cap: whole pairs or an error, never a byte past cap */

    is_str(filter_n((const char *[]) { "a=1;b=2" }, 1, NULL, 8, NULL),
           "a=1; b=2", "cap exactly the output");
    is_str(filter_n((const char *[]) { "a=1;b=2" }, 1, NULL, 7, NULL),
           "(space)", "cap one short");
    is_str(filter_n((const char *[]) { "a=1;b=2" }, 1, NULL, 0, NULL),
           "(space)", "cap 0");
    is_str(filter_n((const char *[]) { "x;y" }, 1, NULL, 0, NULL),
           "", "cap 0, nothing to write");

    {
        unsigned char        out[16];
        bottle_cookie_str_t  in = { U("a=1;b=2"), 7 };

        memset(out, 'Z', sizeof(out));
        ok(bottle_cookie_filter(out, 5, &in, 1, keep, &k) < 0
           && out[5] == 'Z', "nothing written past cap");
    }

    is_int(bottle_cookie_filter_bound(0), 0, "bound of nothing");
    is_int(bottle_cookie_filter_bound(3), 6, "bound: twice the input");
    is_int(bottle_cookie_filter_bound(SIZE_MAX), 0, "bound overflow: 0");
}


/* random inputs from a small alphabet: within the bound, a subset */

static void
test_random(void)
{
    int           bad_bound, bad_subset, bad_dup;
    char          in[200], *o, *e;
    size_t        i, j, len, n;
    unsigned      seed;
    const char   *r;
    static const char  alphabet[] = "ab=; \t1";

    bad_bound = bad_subset = bad_dup = 0;
    seed = 12345;

    for (i = 0; i < 20000; i++) {
        len = (seed = seed * 1103515245 + 12345) >> 16 & 127;

        for (j = 0; j < len; j++) {
            seed = seed * 1103515245 + 12345;
            in[j] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }

        in[len] = '\0';

        r = filter_n((const char *[]) { in }, 1, (i & 1) ? NULL : "a=1 ab=",
                     bottle_cookie_filter_bound(len), NULL);

        if (strcmp(r, "(space)") == 0
            || strlen(r) > bottle_cookie_filter_bound(len))
        {
            bad_bound++;
            continue;
        }

        if (!subset(r, in)) {
            bad_subset++;
        }

        /* no name twice */
        for (o = (char *) r, n = 0; *o; o = *e ? e + 2 : e, n++) {
            char  *x, *xe;

            e = strstr(o, "; ");
            e = e ? e : o + strlen(o);

            for (x = (char *) r; x < o; x = xe + 2) {
                xe = strstr(x, "; ");
                if ((size_t) (strchr(x, '=') - x)
                        == (size_t) (strchr(o, '=') - o)
                    && memcmp(x, o, (size_t) (strchr(o, '=') - o)) == 0)
                {
                    bad_dup++;
                }
            }
        }
    }

    is_int(bad_bound, 0, "random: within the bound");
    is_int(bad_subset, 0, "random: every output pair is an input pair");
    is_int(bad_dup, 0, "random: no name twice");
}


static const char *
str(bottle_cookie_str_t s)
{
    static char  buf[4][128];
    static int   i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%.*s", (int) s.len,
             s.data ? (const char *) s.data : "");

    return buf[i];
}


static int
set(bottle_cookie_set_t *c, const char *s)
{
    return bottle_cookie_set_parse(c, U(s), strlen(s));
}


static void
test_set_cookie(void)
{
    bottle_cookie_set_t  c;

    is_int(set(&c, "sid=abc"), 0, "plain cookie");
    is_str(str(c.name), "sid", "name");
    is_str(str(c.value), "abc", "value");
    is_int(c.has_max_age, 0, "no Max-Age");
    is_int(c.expires.len, 0, "no Expires");

    is_int(set(&c, " a = b c ; Path=/; Secure; HttpOnly"), 0, "attributes");
    is_str(str(c.name), "a", "name trimmed");
    is_str(str(c.value), "b c", "value trimmed");

    set(&c, "sid=x; Max-Age=0");
    ok(c.has_max_age && c.max_age == 0, "Max-Age=0");
    set(&c, "sid=x; max-age=-5");
    ok(c.has_max_age && c.max_age == -5, "a negative Max-Age, any case");
    set(&c, "sid=x; MAX-AGE = 60 ");
    ok(c.has_max_age && c.max_age == 60, "Max-Age with spaces");
    set(&c, "sid=x; Max-Age=abc");
    is_int(c.has_max_age, 0, "Max-Age not a number: ignored");
    set(&c, "sid=x; Max-Age=60s");
    is_int(c.has_max_age, 0, "Max-Age with a suffix: ignored");
    set(&c, "sid=x; Max-Age=");
    is_int(c.has_max_age, 0, "empty Max-Age: ignored");
    set(&c, "sid=x; Max-Age=-");
    is_int(c.has_max_age, 0, "Max-Age \"-\": ignored");
    set(&c, "sid=x; Max-Age=99999999999999999999999");
    ok(c.has_max_age && c.max_age == BOTTLE_COOKIE_MAX_AGE,
       "a huge Max-Age is capped");
    set(&c, "sid=x; Max-Age=-99999999999999999999999");
    ok(c.has_max_age && c.max_age == -BOTTLE_COOKIE_MAX_AGE,
       "a huge negative Max-Age is capped");
    set(&c, "sid=x; Max-Age=1; Max-Age=2");
    ok(c.has_max_age && c.max_age == 2, "the last Max-Age counts");
    set(&c, "sid=x; Max-Age=1; Max-Age=junk");
    ok(c.has_max_age && c.max_age == 1, "an invalid later one is ignored");
    set(&c, "sid=x; Max\rAge=0");
    is_int(c.has_max_age, 0, "only the attribute's exact name");

    set(&c, "sid=x; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Max-Age=60");
    is_str(str(c.expires), "Wed, 21 Oct 2015 07:28:00 GMT", "Expires");
    ok(c.has_max_age && c.max_age == 60, "Max-Age next to it");

    is_int(set(&c, "noequals"), -1, "no '=': no cookie");
    is_int(set(&c, "=v; Max-Age=1"), -1, "empty name: no cookie");
    is_int(set(&c, ""), -1, "empty header");
    is_int(set(&c, "; a=b"), -1, "the pair comes first");
    is_int(set(&c, "a="), 0, "empty value");
    is_str(str(c.value), "", "empty value read");
}


int
main(void)
{
    test_filter();
    test_random();
    test_set_cookie();

    return done_testing();
}
