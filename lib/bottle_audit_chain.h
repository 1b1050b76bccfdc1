/*
 * The audit journal as a hash chain (docs/control-plane.md, "The chain"):
 * the one place that appends to the bottle:audit stream.  Every entry
 * holds the fields
 *
 *   event <json>  seq <n>  prev <64 hex>  hash <64 hex>
 *
 * with seq counting from 1 per store, prev the hash of the entry before
 * (64 zeros for seq 1), and
 *
 *   hash = SHA-256(prev (32 bytes) || seq (8 bytes, big-endian) ||
 *                  SHA-256(event))
 *
 * The writer computes SHA-256(event) (OpenSSL) and hands the script a
 * "chained argument", "<64 hex digits>:<json>"; the script (Lua, so the
 * append is atomic however many writers interleave) computes the small
 * fixed-size link hash, XADDs, and keeps the head (seq, hash) in
 * bottle:audit:chain.  Trimming keeps a checkpoint there too: the seq and
 * hash of the last entry trimmed, from which what remains verifies.
 */

#ifndef BOTTLE_AUDIT_CHAIN_H
#define BOTTLE_AUDIT_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "bottle_audit.h"


#define BOTTLE_STORE_AUDIT_CHAIN    "bottle:audit:chain"    /* hash */
#define BOTTLE_AUDIT_F_SEQ          "seq"
#define BOTTLE_AUDIT_F_HASH         "hash"
#define BOTTLE_AUDIT_F_TRIMMED_SEQ  "trimmed_seq"
#define BOTTLE_AUDIT_F_TRIMMED_HASH "trimmed_hash"

/* 64 hex digits and a NUL */
#define BOTTLE_AUDIT_HEX_LEN        65

/* trimmed once the stream is this many entries over its bound */
#define BOTTLE_AUDIT_TRIM_SLACK     256
#define BOTTLE_AUDIT_TRIM_SLACK_S   "256"


/*
 * Lua, for a script that appends: defines
 *   bottle_sha256(s): the SHA-256 of a string, 64 lowercase hex digits
 *   bottle_chain_append(max, arg): arg a chained argument; XADD (never
 *     throws: the reply or the error table, as redis.pcall), the head
 *     moved, the stream trimmed to max (about; "" or nil: not trimmed).
 */
extern const char  bottle_audit_chain_lua[];

/* EVAL, no KEYS: ARGV = MAXLEN (about), chained argument; the new id */
extern const char  bottle_audit_append_script[];

/*
 * EVAL, no KEYS: ARGV = an entry's id.  Takes that entry out of the
 * stream only if it is still the chain's newest (the head goes back to
 * its prev); 1 if taken out, 0 if left.
 */
extern const char  bottle_audit_takeback_script[];


/* SHA-256 of data as 64 lowercase hex digits */
void bottle_audit_sha256_hex(char out[BOTTLE_AUDIT_HEX_LEN], const void *data,
    size_t len);

/* the link hash of (prev hex, seq, digest hex); 0 or -1 (not hex) */
int bottle_audit_link(char out[BOTTLE_AUDIT_HEX_LEN], const char *prev,
    uint64_t seq, const char *digest);

/* "<SHA-256(json) hex>:<json>", malloc()ed, NUL-terminated; *outlen */
char *bottle_audit_chain_arg(const char *json, size_t len, size_t *outlen);

/* bottle_audit_json() as a chained argument (free() it) */
char *bottle_audit_chained(const bottle_audit_event_t *e, size_t *len);

/*
 * The synchronous writers' append (bottlectl, git-gate): EVAL of
 * bottle_audit_append_script; the reply (the entry's id, or an error) or
 * NULL when the connection failed (c->errstr).
 */
redisReply *bottle_audit_append(redisContext *c, const char *maxlen,
    const char *json, size_t len);


#endif /* BOTTLE_AUDIT_CHAIN_H */
