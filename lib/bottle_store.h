/*
 * The control plane's contract (docs/control-plane.md): where a Redis
 * store is, the keys and channel its policy lives under, and the scripts
 * that change it atomically.  Shared by the gateway, bottlectl and the
 * helpers, so that every writer and reader agrees on one layout.
 *
 * No hiredis here: callers bring their own connection.
 */

#ifndef BOTTLE_STORE_H
#define BOTTLE_STORE_H

#include <stddef.h>


#define BOTTLE_STORE_HOST_MAX      255
#define BOTTLE_STORE_PATH_MAX      107     /* sun_path less its NUL */
#define BOTTLE_STORE_CRED_MAX      255
#define BOTTLE_STORE_SENTINELS_MAX 8
#define BOTTLE_STORE_MASTER_MAX    63
#define BOTTLE_STORE_SENTINEL_PORT 26379

typedef struct {
    char            host[BOTTLE_STORE_HOST_MAX + 1];    /* unbracketed */
    unsigned        port;
} bottle_store_node_t;

typedef struct {
    int             is_unix;
    char            host[BOTTLE_STORE_HOST_MAX + 1];    /* unbracketed */
    unsigned        port;                   /* 6379 if not given */
    char            path[BOTTLE_STORE_PATH_MAX + 1];    /* unix socket */
    char            user[BOTTLE_STORE_CRED_MAX + 1];    /* "" none */
    char            password[BOTTLE_STORE_CRED_MAX + 1];    /* "" none */
    int             has_password;
    unsigned        db;                     /* SELECT, 0 if not given */

    /* redis-sentinel:// (nsentinels 0 otherwise): host and port above
       unused, user and password the primary's */
    unsigned        nsentinels;
    bottle_store_node_t  sentinel[BOTTLE_STORE_SENTINELS_MAX];
    char            master[BOTTLE_STORE_MASTER_MAX + 1];
    char            sentinel_user[BOTTLE_STORE_CRED_MAX + 1];
    char            sentinel_password[BOTTLE_STORE_CRED_MAX + 1];
    int             has_sentinel_password;
} bottle_store_url_t;

/*
 * Parses "redis://[[user]:password@]host[:port][/db]" (host a name, an
 * IPv4 address or a bracketed IPv6 one; user and password percent-
 * decoded) or "unix:/path/to/socket[?db=N][&user=U][&password=P]".
 * Returns 0, or -1 with a lowercase reason in err that never repeats the
 * password.
 */
int bottle_store_url_parse(bottle_store_url_t *u, const char *s,
    char *err, size_t errlen);

/*
 * the URL without credentials, for logs: "redis://host:port/db", or
 * "redis-sentinel://host:port,host:port/master?db=N"
 */
void bottle_store_url_print(const bottle_store_url_t *u, char *buf,
    size_t size);

/* 1 if s starts like a store URL (and is not a file path) */
int bottle_store_url_is(const char *s);


/* the keys (docs/control-plane.md) */
#define BOTTLE_STORE_POLICY_PREFIX  "bottle:policy:"    /* + id: hash */
#define BOTTLE_STORE_BOTTLES        "bottle:bottles"    /* id -> version */
#define BOTTLE_STORE_TOKENS         "bottle:tokens"     /* sha256 -> id */
#define BOTTLE_STORE_VERSION        "bottle:version"    /* counter */
#define BOTTLE_STORE_CHANGES        "bottle:changes"    /* channel */
#define BOTTLE_STORE_AUDIT          "bottle:audit"      /* stream */
#define BOTTLE_STORE_CONTACTS_PREFIX  "bottle:contacts:"  /* + id: set */
#define BOTTLE_STORE_WRITE_PREFIX   "bottle:write:"     /* + write id */

/* how long a write id's outcome is kept, seconds (7 days) */
#define BOTTLE_STORE_WRITE_TTL      604800
#define BOTTLE_STORE_WRITE_ID_LEN   32      /* hex digits */

/* the fields of a bottle's hash */
#define BOTTLE_STORE_F_JSON         "json"
#define BOTTLE_STORE_F_VERSION      "version"
#define BOTTLE_STORE_F_TOKEN        "token_sha256"

/*
 * EVAL scripts, no KEYS (one Redis, not a cluster):
 *
 * put: ARGV = n, then n triples (id, json, token_sha256 as 64 lowercase
 *   hex digits).  Either every bottle is written or none: a token that is
 *   already another bottle's identity (in the store or twice in ARGV) is
 *   an error reply naming both bottles.  Each bottle gets the next
 *   version; its old token digest is dropped from the index; one message
 *   "<id> <version>" per bottle on the changes channel.  Returns the
 *   versions, in order.
 *
 * rm: ARGV = id.  Removes the bottle, its token digest and its
 *   first-contact set, publishes "<id> 0".  Returns 1, or 0 if there was
 *   no such bottle.
 */
extern const char  bottle_store_put_script[];
extern const char  bottle_store_rm_script[];

/*
 * The same, written once under a write id and journalled (bottlectl):
 *
 * put: ARGV as above, then per bottle its expected version (its
 *   bottle:bottles entry, "" none) and its policy.changed event, then the
 *   write id, the TTL of its record, the most bytes of JSON the store may
 *   hold (bottle_limits_t.store; past it, the error reply "LIMIT <total
 *   bytes>" and nothing is written) and the audit stream's MAXLEN.
 * rm: ARGV = id, write id, TTL, expected version, event, MAXLEN.
 *
 * A bottle whose version is not the expected one is the error reply
 * "CHANGED ..." (the event was built against another version); a
 * bottle:audit that is not a stream is "JOURNAL ...": nothing written
 * either way.  Else each changed bottle's event (an empty one is
 * skipped) is added to bottle:audit in the same script, its first
 * ',"new_version":0,' replaced by the version given.  A write id already
 * recorded (applied, or settled as void) is an error reply "WRITTEN
 * <record>" and nothing is written; else the write is applied and its
 * outcome recorded under bottle:write:<wid>: "applied" then one line per
 * bottle, "<id> version <v>" (put) or "<id> removed|none" (rm).
 *
 * settle: ARGV = write id, TTL.  The record of that write, or, when there
 * is none, "void" recorded: a write id settled is never applied later.
 * So a writer that lost its reply knows the outcome from the settle's
 * answer, whatever order Redis runs the two in.
 */
extern const char  bottle_store_put_once_script[];
extern const char  bottle_store_rm_once_script[];
extern const char  bottle_store_settle_script[];

/*
 * The gateway's read of one bottle, its size checked in Redis first:
 * ARGV = id, the most bytes of JSON to send.  Replies {json, version};
 * {size, version} (size an integer) when the JSON is larger; {nil, nil}
 * when there is no such bottle.
 */
extern const char  bottle_store_fetch_script[];

/*
 * Parses a changes-channel message "<id> <version>" (version 0: removed).
 * Returns 0, or -1 if the message is not one.
 */
int bottle_store_change_parse(const char *msg, size_t len,
    const char **id, size_t *id_len, unsigned long long *version);



/*
 * Over a hiredis connection (bottle_store_client.c): a synchronous
 * context to the store, shared by bottlectl and the helpers.  hiredis's
 * header is not needed to include this one.
 */

struct redisContext;

/*
 * Connects (TCP or unix socket, connect_s seconds), sets the command
 * timeout (command_s; 0: none), AUTH [user] password and SELECT db.  0
 * with the context in *out, or -1 with one line in err that never
 * repeats the password (*out NULL).
 *
 * A Sentinel URL: the sentinels are asked in turn for the primary
 * (SENTINEL get-master-addr-by-name, each bounded by connect_s), and the
 * address one gives is used once ROLE says it is a master.
 */
int bottle_store_connect(struct redisContext **out,
    const bottle_store_url_t *u, int connect_s, int command_s, char *err,
    size_t errlen);

/*
 * 1 if an error reply says the server is not (or not yet) a writable
 * primary: READONLY, LOADING, MASTERDOWN; a client of a Sentinel URL
 * reconnects through the sentinels when it sees one.
 */
int bottle_store_reply_demoted(const char *str, size_t len);


#endif /* BOTTLE_STORE_H */
