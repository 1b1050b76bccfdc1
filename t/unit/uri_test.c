/*
 * Unit tests for the request-target checks and query credential names
 * (lib/bottle_uri.c).
 */

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_uri.h"


#define U(s)  ((const unsigned char *) (s))


static int
path(const char *s)
{
    int             rc;
    size_t          n;
    unsigned char  *scratch;

    n = strlen(s);
    scratch = malloc(n + 1);
    rc = bottle_uri_check_path(U(s), n, scratch);
    free(scratch);

    return rc;
}


static int
cred(const char *s)
{
    return bottle_query_is_credential(U(s), strlen(s));
}


static char *
strip(const char *q, size_t *stripped)
{
    size_t  n, len;
    char   *out;

    n = strlen(q);
    out = malloc(n + 1);
    len = bottle_query_strip((unsigned char *) out, U(q), n, stripped);
    out[len] = '\0';

    return out;
}


static void
test_fragment(void)
{
    is_int(bottle_uri_check_target(U("/a#b"), 4), BOTTLE_URI_E_FRAGMENT,
           "'#' in the path");
    is_int(bottle_uri_check_target(U("/a?x=1#b"), 8), BOTTLE_URI_E_FRAGMENT,
           "'#' in the query");
    is_int(bottle_uri_check_target(U("/a%23b"), 6), BOTTLE_URI_OK,
           "encoded '#' is data");
    is_int(bottle_uri_check_target(U(""), 0), BOTTLE_URI_OK, "empty target");
}


static void
test_dots(void)
{
    static const char  *bad[] = {
        "/.", "/..", "/./x", "/a/../b", "/a/..", "..", ".",
        "/public/..;/admin", "/public/..%3b/admin", "/public/..%3B/x",
        "/public/.;/..;/admin", "/p/..;jsessionid=1/x", "/p/.;x=1",
        "/p/%2e%2e/x", "/p/%2E./x", "/p/.%2e/x",
        "/p/%252e%252e/x", "/p/%25252e%25252e/x", "/p/%252E./x",
        "/p/..%09/x", "/p/..%2509/x", "/p/%20..%20/x", "/p/..%00/x",
        "/p/..%0d%0a/x", "/p/..%7f/x", "/p/ ../x", "/p/.. ;a/x",
        "/p/..%2fx", "/p/..%2Fx", "/p/..%252fx", "/p/x%2f..%2fy",
        "/p/..%5cx", "/p/..\\x", "/p\\..\\x", "/p/x\\.\\y",
        "/p/%c0%ae%c0%ae/x", "/p/%c0%ae./x", "/p/..%c0%afx",
        "/p/%e0%80%ae%e0%80%ae/x", "/p/..%c1%9cx",
        "/p/%25c0%25ae%25c0%25ae/x", "/p/...", "/p/...;v=1/x",
        "/p/%2e%2e%2e/x", "/p/....%20/x", "/p/. ./x", "/p/.%09./x",
        NULL
    };
    static const char  *good[] = {
        "/", "", "/a", "/public/a..b/x", "/public/.well-known/x",
        "/public/x;v=1", "/p/%2e%2e.x/y", "/p/x%20y/z",
        "/p/.x", "/p/x.", "/p/a.b.c", "/p/main...feature",
        "/p/x;..", "/p/x;/y", "/p/%25", "/p/100%25", "/p/%zz/x",
        "/p/%2", "/p/%", "/p/%2541/x", "/p/%c0", "/p/%c0%2e",
        "/projects/group%2Fname", "/p/a%5cb",
        NULL
    };
    int  i;

    for (i = 0; bad[i]; i++) {
        is_int(path(bad[i]), BOTTLE_URI_E_DOT, "dot segment: %s", bad[i]);
    }

    for (i = 0; good[i]; i++) {
        is_int(path(good[i]), BOTTLE_URI_OK, "no dot segment: %s", good[i]);
    }

    is_int(path("/p/%2525252e%2525252e/x"), BOTTLE_URI_E_DEEP,
           "four rounds of encoding: refused as too deep");
    is_int(path("/p/%25252541"), BOTTLE_URI_E_DEEP,
           "still encoded after three rounds, even without dots");
    is_int(path("/p/%252541"), BOTTLE_URI_OK, "three rounds: decoded");

    ok(strcmp(bottle_uri_strerror(BOTTLE_URI_E_DOT), "unknown error") != 0
       && strcmp(bottle_uri_strerror(BOTTLE_URI_E_DEEP), "unknown error")
          != 0
       && strcmp(bottle_uri_strerror(BOTTLE_URI_E_FRAGMENT),
                 "unknown error") != 0
       && strcmp(bottle_uri_strerror(7), "unknown error") == 0,
       "strerror names every code");
}


static void
test_names(void)
{
    static const char  *yes[] = {
        "access_token", "token", "key", "api_key", "apikey", "private_token",
        "ACCESS_TOKEN", "Api_Key", "%61ccess_token", "access%5Ftoken",
        "access.token", "access+token", "access%20token", "access token",
        "%20access_token", "+access_token", "++access_token",
        "%09access_token", "access_token%20", "access_token+",
        "access_token[]", "access_token%5B%5D", "access_token[x]",
        "access_token[a][b]", "access_token%5Bx%5D", "Access_Token[0]",
        "access[token", "access%5Btoken", "api.key", "API.KEY",
        "private+token", "Private.Token[0]", "private.token",
        "access_token%00junk", "token%00",
        "%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20"
        "%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20apikey",
        NULL
    };
    static const char  *no[] = {
        "", "x", "tokens", "my_key", "key_id", "a.b", "access_token_",
        "access__token", "accesstoken", "access-token", "access%2Btoken",
        "%2561ccess_token", "access_token]", "[access_token]", "[]token",
        "keys[]", "xtoken", "token2", "%00token", "key%00",
        "access_token%5",
        NULL
    };
    int  i;

    for (i = 0; yes[i]; i++) {
        ok(cred(yes[i]), "credential name: %s", yes[i]);
    }

    for (i = 0; no[i]; i++) {
        if (strcmp(no[i], "key%00") == 0) {
            /* the name is "key" once cut at the NUL */
            ok(cred(no[i]), "credential name cut at NUL: %s", no[i]);
            continue;
        }

        ok(!cred(no[i]), "not a credential name: %s", no[i]);
    }
}


static void
test_strip(void)
{
    static const char  *cases[][3] = {
        { "", "", "0" },
        { "a=1", "a=1", "0" },
        { "a=1&b=2", "a=1&b=2", "0" },
        { "a=1;b=2&c=%3B", "a=1;b=2&c=%3B", "0" },
        { "a=1&&b=2&", "a=1&&b=2&", "0" },
        { "&a=1", "&a=1", "0" },
        { "x=1;access_token=K", "x=1", "1" },
        { "access_token=K;x=1", "x=1", "1" },
        { "x=1;token=K&y=2", "x=1&y=2", "1" },
        { "a=1&key=K;b=2", "a=1;b=2", "1" },
        { "access.token=K&x=1", "x=1", "1" },
        { "access_token[]=K&x=1&access_token[]=L", "x=1", "2" },
        { "token", "", "1" },
        { "token&token=&token=x", "", "3" },
        { "x=token&y=access_token", "x=token&y=access_token", "0" },
        { "q=a;key=b", "q=a", "1" },
        { "API.KEY=K&private+token=K&Private.Token[0]=K&x=1", "x=1", "3" },
        { "x=1&apikey", "x=1", "1" },
        { "=1&token=2", "=1", "1" },
        { ";;", ";;", "0" },
    };
    size_t  i, stripped;
    char   *out;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        out = strip(cases[i][0], &stripped);
        is_str(out, cases[i][1], "strip '%s'", cases[i][0]);
        is_int(stripped, atoi(cases[i][2]), "'%s': %s stripped",
               cases[i][0], cases[i][2]);
        free(out);
    }

    out = strip("token=1", NULL);
    is_str(out, "", "stripped count may be NULL");
    free(out);
}


int
main(void)
{
    test_fragment();
    test_dots();
    test_names();
    test_strip();

    return done_testing();
}
