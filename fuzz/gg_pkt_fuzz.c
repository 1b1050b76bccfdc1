/*
 * libFuzzer target for git-gate's pkt-line and protocol v2 readers
 * (gitgate-helper/gg_pkt.c): the agent's requests and the forge's ls-refs
 * lines of a first clone.  Beyond "no crash, no sanitizer report": every
 * pkt-line lies inside the input and is at most GG_PKT_MAX bytes; a
 * parsed request's wants are lowercase hex object ids inside the input,
 * a "simple" one is a fetch with wants and "done"; a kept ls-refs line
 * has its ids inside the line.  The input is an exact-size copy, so ASan
 * sees any read past it.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_pkt.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               type, keep;
    char              err[256], *in;
    long              n;
    size_t            off, dlen, i;
    const char       *d, *oid, *peeled;
    gg_v2_request_t   r;

    in = malloc(size ? size : 1);
    CHECK(in != NULL);
    if (size) {
        memcpy(in, data, size);
    }

    for (off = 0; off < size; off += (size_t) n) {
        n = gg_pkt_next(in + off, size - off, &type, &d, &dlen);
        if (n <= 0) {
            break;
        }
        CHECK((size_t) n <= size - off && (size_t) n <= GG_PKT_MAX);
        if (type == GG_PKT_DATA) {
            CHECK(d == in + off + 4 && dlen + 4 == (size_t) n);

            keep = gg_ls_refs_line(d, dlen, &oid, &peeled);
            CHECK(keep >= -1 && keep <= 1);
            if (keep >= 0 && oid) {
                CHECK(oid >= d && oid + GG_PKT_OID_HEX <= d + dlen);
                CHECK(gg_pkt_oid(oid, GG_PKT_OID_HEX));
            }
            if (keep >= 0 && peeled) {
                CHECK(peeled >= d && peeled + GG_PKT_OID_HEX <= d + dlen);
            }
        } else {
            CHECK(n == 4);
        }
    }

    err[0] = '\0';
    if (gg_v2_request_parse(&r, in, size, err, sizeof(err)) != 0) {
        CHECK(err[0] != '\0');
        free(in);
        return 0;
    }

    for (i = 0; i < r.nwants; i++) {
        CHECK(r.wants[i] >= in && r.wants[i] + GG_PKT_OID_HEX <= in + size);
        CHECK(gg_pkt_oid(r.wants[i], GG_PKT_OID_HEX));
    }

    for (i = 0; i < r.nprefixes; i++) {
        CHECK(r.prefixes[i] >= in
              && r.prefixes[i] + r.prefix_lens[i] <= in + size);
    }

    if (r.simple) {
        CHECK(r.command == GG_CMD_FETCH && r.nwants > 0 && r.done);
    }

    gg_v2_request_free(&r);
    free(in);
    return 0;
}
