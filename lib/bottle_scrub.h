/*
 * Held secrets scrubbed from responses (docs/dlp.md, "Held secrets in
 * responses"): values the gateway holds for a bottle (the credential a
 * route injects, egress tokens, the canary) are replaced in a response
 * before the agent sees them, plain and in the encodings the outbound DLP
 * knows (base64 and base64url at the three byte alignments, hex, %XX of
 * every byte, URL-encoding), by "[held:NAME]" padded with '*' to the
 * length of what it replaces (shorter: "[held***]"), so a response keeps
 * its length.
 *
 * Two objects:
 *
 *   bottle_scrub_db_t  the values' literals, one vectorscan streaming
 *                      database; read-only once built;
 *   bottle_scrub_t     one stream (a response body, or one header value at
 *                      a time): fed in chunks of any size, it sends the
 *                      scrubbed bytes on to the caller's sink, holding back
 *                      at most bottle_scrub_window() bytes (a value split
 *                      across chunks is found; a stream is not buffered).
 *
 * No nginx types: the module's filter (ngx_http_bottle_scrub.c) and the
 * bench use it.
 */

#ifndef BOTTLE_SCRUB_H
#define BOTTLE_SCRUB_H

#include <stddef.h>
#include <stdint.h>


/* values shorter than this are not held (they would mangle responses) */
#define BOTTLE_SCRUB_MIN            8
/* longest value held; longer ones are refused at build time */
#define BOTTLE_SCRUB_MAX            4096
/* the most values one database holds */
#define BOTTLE_SCRUB_VALUES         64

/* the forms a value was found in (bottle_scrub_found()) */
#define BOTTLE_SCRUB_F_PLAIN        0x01
#define BOTTLE_SCRUB_F_BASE64       0x02
#define BOTTLE_SCRUB_F_BASE64URL    0x04
#define BOTTLE_SCRUB_F_HEX          0x08
#define BOTTLE_SCRUB_F_PCT          0x10    /* %XX of every byte */
#define BOTTLE_SCRUB_F_URL          0x20    /* URL-encoded (RFC 3986) */

#define BOTTLE_SCRUB_OK             0
#define BOTTLE_SCRUB_ERROR         -1       /* engine or memory: fail */
#define BOTTLE_SCRUB_ESINK         -2       /* the sink said stop */


typedef struct bottle_scrub_db_s  bottle_scrub_db_t;
typedef struct bottle_scrub_s     bottle_scrub_t;

typedef struct {
    const char             *name;   /* in the placeholder: [held:NAME] */
    const char             *kind;   /* "credential", "egress_token", ... */
    const unsigned char    *value;
    size_t                  len;
} bottle_scrub_value_t;

/* where scrubbed bytes go; non-zero stops the stream (ESINK) */
typedef int (*bottle_scrub_sink_pt)(void *arg, const unsigned char *p,
    size_t len);


/*
 * Builds the database of values v[0..n-1]: a value shorter than
 * BOTTLE_SCRUB_MIN, or equal to an earlier one, is left out.  *out is
 * NULL (and 0 returned) when nothing is left.  Names and kinds are
 * copied.  -1 with err set on failure; err never holds a value.
 */
int bottle_scrub_db_create(bottle_scrub_db_t **out,
    const bottle_scrub_value_t *v, size_t n, char *err, size_t errlen);
void bottle_scrub_db_free(bottle_scrub_db_t *db);

/* the most bytes a stream holds back: the longest literal less one */
size_t bottle_scrub_window(const bottle_scrub_db_t *db);
/* the values kept, and their names and kinds */
size_t bottle_scrub_count(const bottle_scrub_db_t *db);
const char *bottle_scrub_name(const bottle_scrub_db_t *db, size_t i);
const char *bottle_scrub_kind(const bottle_scrub_db_t *db, size_t i);
/* "plain", "base64", "base64url", "hex", "pct", "url" for one F_ bit */
const char *bottle_scrub_form_name(unsigned form);


int bottle_scrub_create(bottle_scrub_t **out, const bottle_scrub_db_t *db,
    bottle_scrub_sink_pt sink, void *arg);
/* where the next bytes go (between streams) */
void bottle_scrub_sink(bottle_scrub_t *s, bottle_scrub_sink_pt sink,
    void *arg);
/* scrubs p[0, len) on to the sink, holding back the window */
int bottle_scrub_feed(bottle_scrub_t *s, const unsigned char *p, size_t len);
/* the stream ends: what is held back goes to the sink; the object may
 * start a new stream (a new header value) with the next feed */
int bottle_scrub_finish(bottle_scrub_t *s);
/* the forms value i was found in since the last clear (F_ bits) */
unsigned bottle_scrub_found(const bottle_scrub_t *s, size_t i);
void bottle_scrub_clear(bottle_scrub_t *s);
void bottle_scrub_destroy(bottle_scrub_t *s);


#endif /* BOTTLE_SCRUB_H */
