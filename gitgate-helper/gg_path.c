/*
 * The request line of git's smart HTTP (gg_path.h).
 */

#include <stdio.h>
#include <string.h>

#include "gg_path.h"


static int gg_suffix(const char *s, size_t len, const char *suffix);
static int gg_query_service(const char *q, size_t qlen);


const char *
gg_service_name(int service)
{
    return service == GG_SVC_RECEIVE ? "git-receive-pack" : "git-upload-pack";
}


int
gg_path_parse(gg_request_t *out, const char *path, size_t len,
    const char *query, size_t qlen, char *err, size_t errlen)
{
    size_t  n;

    memset(out, 0, sizeof(*out));

    if (len == 0 || path[0] != '/') {
        snprintf(err, errlen, "the path does not start with '/'");
        return -1;
    }

    if (len > GG_PATH_MAX) {
        snprintf(err, errlen, "the path is longer than %d bytes",
                 GG_PATH_MAX);
        return -1;
    }

    if ((n = gg_suffix(path, len, "/info/refs")) != 0) {
        out->op = GG_OP_INFO_REFS;
        out->service = gg_query_service(query, query ? qlen : 0);
        if (out->service == 0) {
            snprintf(err, errlen, "info/refs without service=git-upload-pack "
                     "or service=git-receive-pack (the dumb protocol is "
                     "not served)");
            return -1;
        }

    } else if ((n = gg_suffix(path, len, "/git-upload-pack")) != 0) {
        out->op = GG_OP_RPC;
        out->service = GG_SVC_UPLOAD;

    } else if ((n = gg_suffix(path, len, "/git-receive-pack")) != 0) {
        out->op = GG_OP_RPC;
        out->service = GG_SVC_RECEIVE;

    } else {
        snprintf(err, errlen, "not a git smart-HTTP path (info/refs, "
                 "git-upload-pack, git-receive-pack)");
        return -1;
    }

    /* between the leading '/' and the suffix: <forge>/<owner>/<repo> */
    if (bottle_repo_parse(&out->repo, path + 1, len - 1 - n, 0, err, errlen)
        != 0)
    {
        return -1;
    }

    return 0;
}


/* the suffix's length if s ends with it and has something before it */

static int
gg_suffix(const char *s, size_t len, const char *suffix)
{
    size_t  n;

    n = strlen(suffix);

    if (len <= n + 1 || memcmp(s + len - n, suffix, n) != 0) {
        return 0;
    }

    return (int) n;
}


/* the service of "service=git-upload-pack" among &-separated params */

static int
gg_query_service(const char *q, size_t qlen)
{
    int          service;
    size_t       i, start, n;
    const char  *p;

    static const char  key[] = "service=";

    if (q == NULL) {
        return 0;
    }

    service = 0;
    start = 0;

    for (i = 0; i <= qlen; i++) {
        if (i < qlen && q[i] != '&') {
            continue;
        }

        p = q + start;
        n = i - start;
        start = i + 1;

        if (n < sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1) != 0) {
            continue;
        }

        p += sizeof(key) - 1;
        n -= sizeof(key) - 1;

        /* two service= params: neither is believed */
        if (service != 0) {
            return 0;
        }

        if (n == 15 && memcmp(p, "git-upload-pack", 15) == 0) {
            service = GG_SVC_UPLOAD;
        } else if (n == 16 && memcmp(p, "git-receive-pack", 16) == 0) {
            service = GG_SVC_RECEIVE;
        } else {
            return 0;
        }
    }

    return service;
}
