/*
 * libFuzzer target for the request-target checks and the query credential
 * stripping (bottle_uri.c).  See docs/fuzzing.md.  Beyond "no crash, no
 * sanitizer report" it checks: '#' is found exactly when present, a "."
 * segment put in front of any path is always refused, the stripped query
 * is never longer than the query, stripping it again removes nothing, and
 * a query with nothing stripped goes out byte for byte.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_uri.h"
#include "fuzz.h"


static void
check_path(const uint8_t *data, size_t size)
{
    int             rc, rc2;
    uint8_t        *copy, *scratch, *dotted;

    /* exact-size buffers so ASan sees any access past them */
    copy = malloc(size + 1);
    scratch = malloc(size + 3);
    dotted = malloc(size + 3);
    CHECK(copy && scratch && dotted);
    memcpy(copy, data, size);

    rc = bottle_uri_check_path(copy, size, scratch);
    CHECK(rc == BOTTLE_URI_OK || rc == BOTTLE_URI_E_DOT
          || rc == BOTTLE_URI_E_DEEP);
    CHECK(memcmp(copy, data, size) == 0);

    rc2 = bottle_uri_check_path(copy, size, scratch);
    CHECK(rc == rc2);

    memcpy(dotted, "/./", 3);
    memcpy(dotted + 3, data, size);
    CHECK(bottle_uri_check_path(dotted, size + 3, scratch)
          == BOTTLE_URI_E_DOT);

    rc = bottle_uri_check_target(copy, size);
    CHECK((rc == BOTTLE_URI_E_FRAGMENT)
          == (size > 0 && memchr(data, '#', size) != NULL));

    free(copy);
    free(scratch);
    free(dotted);
}


static void
check_query(const uint8_t *data, size_t size)
{
    size_t    n, m, stripped, again;
    uint8_t  *copy, *out, *out2;

    copy = malloc(size + 1);
    out = malloc(size + 1);
    out2 = malloc(size + 1);
    CHECK(copy && out && out2);
    memcpy(copy, data, size);

    n = bottle_query_strip(out, copy, size, &stripped);
    CHECK(n <= size);
    CHECK(stripped <= size + 1);

    if (stripped == 0) {
        CHECK(n == size && memcmp(out, data, size) == 0);
    }

    m = bottle_query_strip(out2, out, n, &again);
    CHECK(again == 0);
    CHECK(m == n && memcmp(out2, out, n) == 0);

    (void) bottle_query_is_credential(copy, size);

    free(copy);
    free(out);
    free(out2);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_path(data, size);
    check_query(data, size);

    return 0;
}
