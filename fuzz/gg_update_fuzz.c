/*
 * libFuzzer target for git-gate's pre-receive input parser
 * (gitgate-helper/gg_update.c).  Beyond "no crash, no sanitizer report":
 * a parsed input has at most one update per newline, every ref name is
 * as long as it says, non-empty and free of control bytes, and no update
 * is both a creation and a deletion.  The input is an exact-size copy,
 * so ASan sees any read past it.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_update.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char          err[256], *in;
    size_t        i, j, lines;
    gg_updates_t  u;

    in = malloc(size ? size : 1);
    CHECK(in != NULL);
    if (size) {
        memcpy(in, data, size);
    }

    if (gg_updates_parse(&u, in, size, err, sizeof(err)) != 0) {
        CHECK(err[0] != '\0');
        free(in);
        return 0;
    }

    for (i = 0, lines = 0; i < size; i++) {
        lines += in[i] == '\n';
    }
    CHECK(u.n == lines);

    for (i = 0; i < u.n; i++) {
        CHECK(u.u[i].ref_len > 0 && strlen(u.u[i].ref) == u.u[i].ref_len);
        CHECK(!(u.u[i].create && u.u[i].delete));
        for (j = 0; j < u.u[i].ref_len; j++) {
            CHECK((unsigned char) u.u[i].ref[j] >= 0x20);
        }
    }

    gg_updates_free(&u);
    free(in);
    return 0;
}
