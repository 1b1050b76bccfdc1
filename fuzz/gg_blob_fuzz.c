/*
 * libFuzzer target for git-gate's blob reader (gitgate-helper/gg_blob.c):
 * the input is what `git cat-file --batch` would answer, on a socket in
 * place of the child, to requests for one object id until the reader
 * fails.  Beyond "no crash, no sanitizer report": a blob read is never
 * longer than what is left of the input, and the reader ends closed after
 * a failure.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gg_blob.h"
#include "fuzz.h"


#define HEX  "0123456789abcdef0123456789abcdef01234567"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                sv[2], i;
    char               err[256];
    size_t             sent;
    ssize_t            n;
    gg_blob_t          b;
    gg_blob_reader_t  *br;

    /* what one socket's buffer holds without a reader on the other end */
    if (size > 65536) {
        return 0;
    }

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    for (sent = 0; sent < size; sent += (size_t) n) {
        n = write(sv[1], data + sent, size - sent);
        CHECK(n > 0);
    }
    CHECK(shutdown(sv[1], SHUT_WR) == 0);

    br = malloc(sizeof(*br));
    CHECK(br != NULL);
    gg_blob_reader_init(br, "/nonexistent", NULL);
    br->fd = sv[0];

    memset(&b, 0, sizeof(b));
    for (i = 0; i < 64; i++) {
        err[0] = '\0';
        if (gg_blob_read(&b, br, HEX, err, sizeof(err)) != 0) {
            CHECK(err[0] != '\0');
            CHECK(br->fd < 0);
            break;
        }
        CHECK(b.len <= size);
    }

    gg_blob_reader_close(br);
    free(br);
    free(b.data);
    close(sv[1]);
    return 0;
}
