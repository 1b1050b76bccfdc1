/*
 * libFuzzer target for git-gate's commit trailer reader
 * (gitgate-helper/gg_trailer.c).  The input's first byte splits it: a
 * bottle id of up to 64 bytes, then a commit message.  Beyond "no crash,
 * no sanitizer report": the counts never pass the message's lines; a
 * message of one paragraph has none; a message given its own
 * "\n\nBottle-Id: <id>\n" last paragraph names the id at least once when
 * the message has a line not blank before it and the id has no LF or CR
 * and no space or tab at either end.  Exact-size
 * copies, so ASan sees any read past them.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_trailer.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char           *id, *msg, *with;
    size_t          blen, mlen, i, lines, wlen;
    gg_trailers_t   t;

    if (size == 0) {
        return 0;
    }

    blen = data[0] % 65;
    if (blen > size - 1) {
        blen = size - 1;
    }

    mlen = size - 1 - blen;
    id = malloc(blen ? blen : 1);
    msg = malloc(mlen ? mlen : 1);
    CHECK(id != NULL && msg != NULL);
    memcpy(id, data + 1, blen);
    memcpy(msg, data + 1 + blen, mlen);

    gg_trailers(&t, msg, mlen, id, blen);

    for (i = 0, lines = 1; i < mlen; i++) {
        lines += msg[i] == '\n';
    }
    CHECK(t.named + t.other <= lines);

    if (memchr(msg, '\n', mlen) == NULL) {
        CHECK(t.named == 0 && t.other == 0);
    }

    /* the message, a blank line, its own trailer */

    wlen = mlen + sizeof("\n\n" GG_TRAILER_NAME ": \n") - 1 + blen;
    with = malloc(wlen);
    CHECK(with != NULL);
    memcpy(with, msg, mlen);
    memcpy(with + mlen, "\n\n" GG_TRAILER_NAME ": ",
           sizeof("\n\n" GG_TRAILER_NAME ": ") - 1);
    memcpy(with + mlen + sizeof("\n\n" GG_TRAILER_NAME ": ") - 1, id, blen);
    with[wlen - 1] = '\n';

    gg_trailers(&t, with, wlen, id, blen);

    for (i = 0; i < mlen; i++) {
        if (msg[i] != ' ' && msg[i] != '\t' && msg[i] != '\n'
            && msg[i] != '\r')
        {
            break;
        }
    }

    /* a title (a line not blank) before it */

    if (i < mlen
        && blen && memchr(id, '\n', blen) == NULL && memchr(id, '\r', blen) == NULL
        && id[0] != ' ' && id[0] != '\t' && id[blen - 1] != ' '
        && id[blen - 1] != '\t' && blen <= GG_TRAILER_VALUE_MAX)
    {
        CHECK(t.named >= 1);
    }

    free(with);
    free(id);
    free(msg);

    return 0;
}
