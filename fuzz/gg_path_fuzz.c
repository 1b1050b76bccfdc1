/*
 * libFuzzer target for git-gate's request path parser
 * (gitgate-helper/gg_path.c, with libbottle's grant grammar).  The input
 * is split at its first NUL into the path and the query string.  Beyond
 * "no crash, no sanitizer report": a parsed request names a repo whose
 * forge, owner and repo are non-empty, NUL-terminated within their
 * bounds, and have only the characters of the grammar; the forge is
 * lowercase; op and service are known.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gg_path.h"
#include "fuzz.h"


static int
segment_ok(const char *s, size_t max, const char *extra)
{
    size_t  n;

    n = strnlen(s, max + 1);
    if (n == 0 || n > max) {
        return 0;
    }

    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')
              || strchr(extra, *s)))
        {
            return 0;
        }
    }

    return 1;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char          err[256], *path, *query;
    size_t        plen, qlen;
    const char   *nul;
    gg_request_t  req;

    nul = memchr(data, '\0', size);
    plen = nul ? (size_t) (nul - (const char *) data) : size;
    qlen = nul ? size - plen - 1 : 0;

    /* exact-size copies: ASan sees any read past them */
    path = malloc(plen ? plen : 1);
    query = malloc(qlen ? qlen : 1);
    CHECK(path != NULL && query != NULL);
    memcpy(path, data, plen);
    if (qlen) {
        memcpy(query, nul + 1, qlen);
    }

    err[0] = '\0';

    if (gg_path_parse(&req, path, plen, nul ? query : NULL, qlen, err,
                      sizeof(err)) != 0)
    {
        CHECK(err[0] != '\0');

    } else {
        CHECK(req.op == GG_OP_INFO_REFS || req.op == GG_OP_RPC);
        CHECK(req.service == GG_SVC_UPLOAD || req.service == GG_SVC_RECEIVE);
        CHECK(req.repo.write == 0);
        CHECK(segment_ok(req.repo.forge, BOTTLE_FORGE_NAME_MAX, ".-:"));
        CHECK(segment_ok(req.repo.owner, BOTTLE_REPO_SEGMENT_MAX,
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ._-"));
        CHECK(segment_ok(req.repo.repo, BOTTLE_REPO_SEGMENT_MAX,
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ._-"));
        CHECK(req.repo.owner[0] != '.' && req.repo.repo[0] != '.');
        CHECK(plen > 0 && path[0] == '/');
    }

    free(path);
    free(query);
    return 0;
}
