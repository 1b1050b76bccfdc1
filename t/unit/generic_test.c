/*
 * Unit tests for generic secret assignments (lib/bottle_generic.c).
 */

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_generic.h"


typedef struct {
    size_t  n;
    size_t  start[8];
    size_t  end[8];
} hits_t;


static int
hit(void *arg, size_t start, size_t end)
{
    hits_t  *h = arg;

    if (h->n < 8) {
        h->start[h->n] = start;
        h->end[h->n] = end;
    }

    h->n++;

    return 0;
}


static bottle_generic_t  *g;


static int
found(const char *s, const char *value)
{
    hits_t  h;
    int     rc;

    memset(&h, 0, sizeof(h));
    rc = bottle_generic_scan(g, s, strlen(s), hit, &h);

    if (value == NULL) {
        return rc == 0 && h.n == 0;
    }

    return rc == 1 && h.n == 1 && h.end[0] - h.start[0] == strlen(value)
           && memcmp(s + h.start[0], value, strlen(value)) == 0;
}


int
main(void)
{
    char    err[256], *big;
    size_t  i, n;
    hits_t  h;

    static const char *const  yes[][2] = {
        { "API_KEY = \"q8Zr3kP0vX2mL9tB\"", "q8Zr3kP0vX2mL9tB" },
        { "api_key='q8Zr3kP0vX2mL9tB'", "q8Zr3kP0vX2mL9tB" },
        { "  \"client_secret\": \"Zq81mNa0Lp3kRt7v\",", "Zq81mNa0Lp3kRt7v" },
        { "password: hK29sLq0Pz8vX1m", "hK29sLq0Pz8vX1m" },
        { "export AUTH_TOKEN=7fG2kLp9QzX0vB3n", "7fG2kLp9QzX0vB3n" },
        { "db.passwd := \"Rw9xK2m7Qp0Lz4tY\"", "Rw9xK2m7Qp0Lz4tY" },
        { "token => 'aB3dE5gH7jK9mN1pQ'", "aB3dE5gH7jK9mN1pQ" },
        { "secret ?= Wm4nT8qR2vY6zA0c", "Wm4nT8qR2vY6zA0c" },
        { "const accessKey = `Xy7Pq2Rs9Tu4Vw1Z`;", "Xy7Pq2Rs9Tu4Vw1Z" },
        { "setCredential(\"id\", \"k7Hq2Lm9Xp4Rt0Vw\")", NULL },
        { "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY1q2w3e4",
          "wJalrXUtnFEMI/K7MDENG/bPxRfiCY1q2w3e4" },
        { "key: dGhpcyBpcyBhIHNlY3JldCBrZXk0NTY=",
          "dGhpcyBpcyBhIHNlY3JldCBrZXk0NTY=" },
    };

    static const char *const  no[] = {
        "token = getToken()",
        "password = \"changeme123456789\"",
        "api_key = \"YOUR_API_KEY_HERE1\"",
        "secret = \"xxxxxxxxxxxxxxxx1\"",
        "key = \"aaaaaaaaaaaaaaaa1\"",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "version = 1.2.3.4.5.6.7.8",
        "key = some_configuration_name",
        "password = os.environ['DB_PASSWORD']",
        "the key point is 1234567890abcdef here",
        "monkey = banana",
        "auth = short1",
        "secret = \"example-Zq81mNa0Lp3kRt7v\"",
        "",
    };

    if (bottle_generic_create(&g, err, sizeof(err)) != 0) {
        printf("Bail out! %s\n", err);
        return 1;
    }

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        ok(found(yes[i][0], yes[i][1]), "%s: %s", yes[i][1] ? "found"
           : "not found", yes[i][0]);
    }

    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        ok(found(no[i], NULL), "not found: %s", no[i]);
    }

    /* several on one text, in order, with their spans */
    memset(&h, 0, sizeof(h));
    ok(bottle_generic_scan(g, "a=1\nAPI_KEY=q8Zr3kP0vX2mL9tB\nx\n"
                           "token: \"Zq81mNa0Lp3kRt7v\"\n", 56, hit, &h) == 2
       && h.n == 2 && h.start[0] == 12 && h.end[0] == 28
       && h.start[1] < h.end[1], "two findings with their spans");

    /* the value ends at the line's end, not the data's */
    ok(found("token=Zq81mNa0Lp3kRt7v\nnext", "Zq81mNa0Lp3kRt7v"),
       "a value at the end of a line");

    /* longer than 150: no value of that shape */
    big = malloc(400);
    memcpy(big, "token=", 6);
    for (n = 6; n < 200; n++) {
        big[n] = "aZ3x9Qk2"[n % 8];
    }
    big[n] = '\0';
    ok(found(big, NULL), "a 194-character value is not a secret's shape");

    /* a large text: linear, finds the one in the middle */
    n = 8 * 1024 * 1024;
    big = realloc(big, n + 1);
    for (i = 0; i < n; i++) {
        big[i] = "int keyboard = 0; // tokens are fine\n"[i % 37];
    }
    memcpy(big + n / 2, "\nAPI_KEY=q8Zr3kP0vX2mL9tB\n", 26);
    big[n] = '\0';
    memset(&h, 0, sizeof(h));
    ok(bottle_generic_scan(g, big, n, hit, &h) == 1 && h.n == 1,
       "8 MiB of source with one assignment in the middle");
    free(big);

    ok(bottle_generic_entropy("aaaa", 4) == 0.0
       && bottle_generic_entropy("abcd", 4) == 2.0, "entropy");

    bottle_generic_free(g);

    return done_testing();
}
