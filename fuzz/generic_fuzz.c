/*
 * libFuzzer target for generic secret assignments (bottle_generic.c), the
 * scan git-gate runs over the lines a push adds.  See docs/fuzzing.md.
 * Beyond "no crash, no sanitizer report" it checks: the matcher never
 * fails on any input, every value reported lies inside the data, within
 * the size bounds, after the one before it, and has the entropy asked for;
 * a second scan reports the same.
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_generic.h"
#include "fuzz.h"


typedef struct {
    const uint8_t  *data;
    size_t          size;
    size_t          last;
    size_t          n;
    size_t          sum;
} seen_t;


static int
found(void *arg, size_t start, size_t end)
{
    seen_t  *s = arg;

    CHECK(start < end && end <= s->size);
    CHECK(start >= s->last);
    CHECK(end - start >= BOTTLE_GENERIC_MIN
          && end - start <= BOTTLE_GENERIC_MAX);
    CHECK(bottle_generic_entropy((const char *) s->data + start, end - start)
          >= BOTTLE_GENERIC_ENTROPY);

    s->last = end;
    s->n++;
    s->sum += start * 31 + end;

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                      rc, rc2;
    char                    *copy;
    seen_t                   a, b;
    static bottle_generic_t *g;
    char                     err[256];

    if (g == NULL) {
        CHECK(bottle_generic_create(&g, err, sizeof(err)) == 0);
    }

    /* an exact-size copy so ASan sees any read past the end */
    copy = malloc(size ? size : 1);
    CHECK(copy != NULL);
    memcpy(copy, data, size);

    memset(&a, 0, sizeof(a));
    a.data = data;
    a.size = size;
    rc = bottle_generic_scan(g, copy, size, found, &a);
    CHECK(rc >= 0 && (size_t) rc == a.n);

    memset(&b, 0, sizeof(b));
    b.data = data;
    b.size = size;
    rc2 = bottle_generic_scan(g, copy, size, found, &b);
    CHECK(rc2 == rc && a.sum == b.sum);

    free(copy);

    return 0;
}
