/*
 * libFuzzer target for git-gate's raw object readers
 * (gitgate-helper/gg_object.c): the input read as a tree object's
 * entries, then as a commit's or a tag's header and message.  Beyond "no
 * crash, no sanitizer report": every entry lies inside the input, one
 * after the other, its mode octal digits of the value it says, its name
 * free of NUL; the header entries cover the input from its start, each a
 * line and its continuation lines, and the message starts after them.
 * The input is an exact-size copy, so ASan sees any read past it.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_object.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               rc;
    char             *in;
    size_t            i, len;
    uint32_t          m;
    const char       *p, *end, *s, *msg, *nl;
    gg_tree_entry_t   e;

    in = malloc(size ? size : 1);
    CHECK(in != NULL);
    if (size) {
        memcpy(in, data, size);
    }
    end = in + size;

    /* a tree */

    p = in;
    while ((rc = gg_tree_next(&e, &p, end)) == 1) {
        CHECK(e.mode >= in && e.mlen >= 1 && e.mlen <= GG_MODE_MAX);
        CHECK(e.mode[e.mlen] == ' ' && e.name == e.mode + e.mlen + 1);
        for (i = 0, m = 0; i < e.mlen; i++) {
            CHECK(e.mode[i] >= '0' && e.mode[i] <= '7');
            m = m * 8 + (uint32_t) (e.mode[i] - '0');
        }
        CHECK(m == e.m);
        CHECK(memchr(e.name, '\0', e.nlen) == NULL);
        CHECK((const char *) e.oid == e.name + e.nlen + 1);
        CHECK(p == (const char *) e.oid + GG_OID_RAWSZ && p <= end);
    }
    CHECK(rc == -1 || p == end);

    /* a commit or a tag */

    p = in;
    msg = NULL;
    while (gg_header_next(&p, end, &s, &len, &msg)) {
        CHECK(len > 0 && s + len == p && p <= end && *s != '\n');
        for (i = 0; i < len; i = (size_t) (nl - s) + 1) {
            nl = memchr(s + i, '\n', len - i);
            if (nl == NULL) {
                CHECK(p == end);
                break;
            }
            CHECK(i == 0 || s[i] == ' ');
        }
        CHECK(p == end || *p != ' ');
        (void) gg_header_is(s, len, "tree",
                            "0123456789abcdef0123456789abcdef01234567");
        (void) gg_header_prefix(s, len, "author ");
    }
    CHECK(msg != NULL && msg >= p && msg <= end);
    CHECK(msg == end || (msg == p + 1 && *p == '\n'));

    free(in);
    return 0;
}
