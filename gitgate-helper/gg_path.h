/*
 * The request line of git's smart HTTP as the gate reads it: the path
 * nginx passes (PATH_INFO) and the query string.
 *
 *   /<forge>/<owner>/<repo>[.git]/info/refs?service=git-upload-pack
 *   /<forge>/<owner>/<repo>[.git]/info/refs?service=git-receive-pack
 *   /<forge>/<owner>/<repo>[.git]/git-upload-pack
 *   /<forge>/<owner>/<repo>[.git]/git-receive-pack
 *
 * Agent input: fuzzed on its own (fuzz/gg_path_fuzz.c), with libbottle's
 * grant grammar (bottle_repo_parse) for the repo part.
 */

#ifndef GG_PATH_H
#define GG_PATH_H

#include <stddef.h>

#include "bottle_forge.h"


/* what the request does */
#define GG_OP_INFO_REFS     1       /* the ref advertisement */
#define GG_OP_RPC           2       /* the POST of the service */

/* which service */
#define GG_SVC_UPLOAD       1       /* fetch, clone */
#define GG_SVC_RECEIVE      2       /* push */

/* longest path read: the three names at their bounds and the rest */
#define GG_PATH_MAX         (BOTTLE_FORGE_NAME_MAX                           \
                             + 2 * BOTTLE_REPO_SEGMENT_MAX + 64)


typedef struct {
    bottle_repo_t       repo;       /* write: 0 (the request's, no mode) */
    int                 op;         /* GG_OP_* */
    int                 service;    /* GG_SVC_* */
} gg_request_t;


/*
 * Parses path (len bytes, no NUL needed) and query (qlen bytes; may be
 * NULL for none).  Returns 0, or -1 with one lowercase line in err that
 * never quotes the input.
 */
int gg_path_parse(gg_request_t *out, const char *path, size_t len,
    const char *query, size_t qlen, char *err, size_t errlen);

/* "git-upload-pack" or "git-receive-pack" */
const char *gg_service_name(int service);


#endif /* GG_PATH_H */
