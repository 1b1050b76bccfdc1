
/*
 * The record of a request: what the full log (docs/full-log.md) and the
 * firehose (docs/firehose.md) say about one request and its response, in
 * one place, so that the module writes and bottlectl reads the same JSON.
 *
 *   bottle_record_t        one request as the gateway saw it: who, where,
 *                          the verdict, its headers and the first bytes of
 *                          its body (as the agent sent them), the answer
 *   bottle_record_scrub    a bottle's registered secrets (canary, egress
 *                          tokens, held secrets) masked in a buffer
 *   bottle_record_full     the full log's two JSON lines
 *   bottle_record_ocsf     the firehose's OCSF HTTP Activity record
 *
 * Credentials (Authorization, Proxy-Authorization, Cookie, Set-Cookie,
 * the route's own auth header and every header the gateway strips as a
 * credential, bottle_decide_strips) never appear in either: the full log says
 * "[scrubbed]", the firehose drops them.  Everything built from the
 * agent's bytes is copied before it is scrubbed; nothing given is changed.
 */

#ifndef _BOTTLE_RECORD_H_INCLUDED_
#define _BOTTLE_RECORD_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "bottle_policy.h"


/* what one body keeps: the full log's and the firehose's default */
#define BOTTLE_RECORD_BODY_MAX   65536

#define BOTTLE_RECORD_SCRUBBED   "[scrubbed]"

/* the firehose's Redis channel: gateways PUBLISH, consumers SUBSCRIBE */
#define BOTTLE_RECORD_FIREHOSE_CHANNEL  "bottle:firehose"

/* OCSF: the schema version the records follow, the class */
#define BOTTLE_OCSF_VERSION      "1.1.0"
#define BOTTLE_OCSF_CLASS        4002        /* HTTP Activity */
#define BOTTLE_OCSF_CATEGORY     4           /* Network Activity */


typedef struct {
    const char          *name;
    size_t               name_len;
    const char          *value;
    size_t               value_len;
} bottle_record_header_t;


typedef struct {
    const unsigned char *data;       /* the first bytes, at most the cut */
    size_t               len;
    uint64_t             size;       /* the whole body's */
    unsigned char        sha256[32]; /* of the whole, if has_sha256 */
    unsigned             has_sha256:1;
    unsigned             seen:1;     /* the body was captured at all */
} bottle_record_body_t;


typedef struct {
    int64_t              start_ms;   /* the request's first byte, epoch */
    int64_t              end_ms;     /* its last byte answered */
    bottle_str_t         request_id;

    const bottle_t      *bottle;     /* NULL: not identified */
    const bottle_route_t *route;     /* NULL: none matched */

    bottle_str_t         method;
    bottle_str_t         scheme;     /* "http", "https" */
    bottle_str_t         host;
    unsigned             port;
    bottle_str_t         path;
    bottle_str_t         query;      /* without credentials */
    bottle_str_t         user_agent;
    bottle_str_t         src_ip;
    unsigned             src_port;
    bottle_str_t         dst_addr;   /* "1.2.3.4:443", if dialled */

    bottle_record_header_t  *headers;
    size_t               nheaders;
    bottle_record_body_t body;
    uint64_t             request_length;  /* bytes of the request */

    int                  allowed;    /* the pipeline passed it */
    bottle_str_t         rule;       /* a refusal's rule */
    bottle_str_t         reason;

    unsigned             status;
    bottle_record_header_t  *resp_headers;
    size_t               nresp_headers;
    bottle_record_body_t resp_body;
    uint64_t             response_length;
} bottle_record_t;


/*
 * Masks every occurrence of the bottle's canary, egress token values and
 * held secret values in buf with '*', byte for byte: as they are, in
 * base64 (both alphabets, three alignments; values of 8 bytes or more),
 * percent-encoded (every byte, or the reserved ones; every byte as %25XX),
 * in hex and in JSON \u00XX escapes (ASCII values): the raw forms the
 * DLP looks for, upper or lower case hex; with cut set (buf is the first part of something longer) a
 * tail that begins one of them is masked too (4 characters at least of an
 * encoded form).  Returns how many were masked.
 */
size_t bottle_record_scrub(const bottle_t *b, unsigned char *buf, size_t len,
    int cut);

/* 1 if the header (any case) is a credential the records never show */
int bottle_record_credential(const bottle_route_t *route, const char *name,
    size_t len);

/*
 * The full log's line for the request (response 0) or its response (1):
 * JSON, one line, no newline, malloc()ed into *out; 0, or -1 out of
 * memory.
 */
int bottle_record_full(char **out, size_t *out_len,
    const bottle_record_t *rec, int response);

/*
 * The firehose's OCSF HTTP Activity record; metadata: only destination,
 * decision, status, sizes and timing (audit.firehose: "metadata").  As
 * bottle_record_full.
 */
int bottle_record_ocsf(char **out, size_t *out_len,
    const bottle_record_t *rec, int metadata);

/*
 * Records one after another in one malloc()ed buffer (the firehose's
 * batch): buf[0, len) written, cap bytes allocated.  Zeroed to start;
 * the caller may set len (room for its framing before the records) and
 * write inside [0, cap); it frees buf.
 */
typedef struct {
    char            *buf;
    size_t           len;
    size_t           cap;
} bottle_record_batch_t;

/*
 * As bottle_record_ocsf, the record appended at b->buf + b->len: 0, and
 * b->len is past it with room bytes (at most 4096) free after it for the
 * caller; or -1 (out of memory, room too large), and b->len is as it was
 * (b->buf may have moved).
 */
int bottle_record_ocsf_append(bottle_record_batch_t *b,
    const bottle_record_t *rec, int metadata, size_t room);

/* OCSF's activity_id of a method: 1-8, 99 other */
int bottle_record_ocsf_activity(const char *method, size_t len);

/*
 * A secret's digest as every record names it (refusal reasons, log lines,
 * journal, full log, firehose): "sha256:" and the first
 * BOTTLE_RECORD_DIGEST_HEX hex digits of the value's SHA-256 (md, 32
 * bytes), never the whole: the whole digest of a short secret is a
 * brute-force oracle.  out holds BOTTLE_RECORD_DIGEST_SIZE bytes, NUL
 * included; returns out.
 */
#define BOTTLE_RECORD_DIGEST_HEX   16
#define BOTTLE_RECORD_DIGEST_SIZE  (sizeof("sha256:") + BOTTLE_RECORD_DIGEST_HEX)

char *bottle_record_digest(char *out, const unsigned char *md);

/* every byte of buf that is not in valid UTF-8 becomes '?': text of the
 * agent's, cut anywhere, made fit for a JSON string */
void bottle_record_utf8_fix(unsigned char *buf, size_t len);


#endif /* _BOTTLE_RECORD_H_INCLUDED_ */
