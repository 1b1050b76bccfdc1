/*
 * git's pkt-line framing and the few protocol v2 messages git-gate reads
 * on a first clone (gg_first.c): the agent's fetch and ls-refs requests
 * and the forge's ls-refs answer.  Both sides are untrusted: every length
 * is checked against the buffer, nothing is allocated but the want list
 * (at most one per 45 bytes of request).  No libbottle, no I/O
 * (fuzz/gg_pkt_fuzz.c).
 */

#ifndef GG_PKT_H
#define GG_PKT_H

#include <stddef.h>


#define GG_PKT_MAX          65520   /* git's LARGE_PACKET_MAX */
#define GG_PKT_OID_HEX      40      /* sha1 repositories only */

enum {
    GG_PKT_FLUSH = 0,       /* 0000 */
    GG_PKT_DELIM,           /* 0001 */
    GG_PKT_END,             /* 0002, response end */
    GG_PKT_DATA
};

/*
 * One pkt-line at buf[0, len): its size (> 0), 0 when buf holds only
 * part of it, -1 when malformed (a bad length, 0003, a length past
 * GG_PKT_MAX).  *type one of the above; for data, *data and *dlen.
 */
long gg_pkt_next(const char *buf, size_t len, int *type, const char **data,
    size_t *dlen);


/* an agent's protocol v2 request, as git-gate reads it */
typedef struct {
    int                 command;        /* GG_CMD_* */
    unsigned            simple:1;       /* a fetch the gate may pass on */
    unsigned            done:1;
    unsigned            no_progress:1;
    unsigned            include_tag:1;
    unsigned            ofs_delta:1;
    unsigned            symrefs:1;      /* ls-refs */
    unsigned            peel:1;
    unsigned            unborn:1;
    size_t              nwants;
    const char        **wants;          /* GG_PKT_OID_HEX chars each */
    size_t              nprefixes;
    const char        **prefixes;       /* ls-refs ref-prefix, in order */
    size_t             *prefix_lens;
} gg_v2_request_t;

enum {
    GG_CMD_OTHER = 0,
    GG_CMD_FETCH,
    GG_CMD_LS_REFS
};

/*
 * Parse body[0, len) (pointers into it are kept): 0, or -1 for a request
 * that is not well-formed (err says why).  "simple": command=fetch with
 * only want, done, thin-pack, ofs-delta, no-progress, include-tag, at
 * least one want and "done": a whole clone, nothing the gate's copy
 * could not hold.  Free with gg_v2_request_free().
 */
int gg_v2_request_parse(gg_v2_request_t *r, const char *body, size_t len,
    char *err, size_t errlen);
void gg_v2_request_free(gg_v2_request_t *r);

/*
 * A forge's ls-refs line (payload, "\n" optional): 1 when its ref is one
 * the gate serves (HEAD, refs/heads/..., refs/tags/...), 0 when not, -1
 * malformed.  *oid (GG_PKT_OID_HEX chars) and *peeled (NULL if none).
 */
int gg_ls_refs_line(const char *line, size_t len, const char **oid,
    const char **peeled);

/* a lowercase hex object id of GG_PKT_OID_HEX chars at p[0, len) */
int gg_pkt_oid(const char *p, size_t len);

#endif /* GG_PKT_H */
