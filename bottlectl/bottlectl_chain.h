/*
 * The audit journal's chain as bottlectl reads it (ctl_chain.c): one
 * stream entry's fields, the batches of XRANGE, the link recomputed.
 * audit verify (ctl_verify.c) and audit forward (ctl_forward.c) use it.
 */

#ifndef BOTTLECTL_CHAIN_H
#define BOTTLECTL_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "bottlectl.h"
#include "bottle_audit_chain.h"


#define BOTTLECTL_CHAIN_ID_LEN  48      /* "<ms>-<seq>", and a NUL */


/* an entry [id, [field, value, ...]]; pointers into the reply */
typedef struct {
    char                id[BOTTLECTL_CHAIN_ID_LEN];
    const char         *event;          /* NULL: no event field */
    size_t              event_len;
    int                 chained;        /* seq, prev and hash all valid */
    uint64_t            seq;
    char                prev[BOTTLE_AUDIT_HEX_LEN];
    char                hash[BOTTLE_AUDIT_HEX_LEN];
} bottlectl_entry_t;


/* XRANGE bottle:audit <start> + COUNT <count>: 0 with an array reply */
int bottlectl_chain_range(bottlectl_t *ctl, redisReply **out,
    const char *start, size_t count);

/* the fields of one element of that reply; 0, or -1 if not an entry */
int bottlectl_chain_entry(const redisReply *r, bottlectl_entry_t *e);

/* the entry's link hash recomputed from its event, prev and seq; 0/-1 */
int bottlectl_chain_link(char out[BOTTLE_AUDIT_HEX_LEN],
    const bottlectl_entry_t *e);


/* ctl_forward_out.c: where audit forward ships the chain */

typedef enum {
    BOTTLECTL_OUT_FILE = 0,
    BOTTLECTL_OUT_SYSLOG,
    BOTTLECTL_OUT_HTTP
} bottlectl_out_kind_e;

typedef struct {
    bottlectl_out_kind_e    kind;
    const char             *path;           /* file */
    unsigned long long      max_size;       /* file: rotated past it */
    const char             *url;            /* http */
    int                     fd;             /* syslog */
    char                    host[256];      /* syslog: our host name */
} bottlectl_out_t;

/* --to parsed and the socket connected; 0, or -1 after a line */
int bottlectl_out_open(bottlectl_out_t *o, const char *to);
void bottlectl_out_close(bottlectl_out_t *o);

/* lines delivered and acknowledged (fsync'd, sent, 2xx); 0 or -1 */
int bottlectl_out_send(bottlectl_out_t *o, const char *batch, size_t len);


/* ctl_forward.c */

int bottlectl_audit_forward(bottlectl_t *ctl, int argc, char **argv);

/* the signed text of a checkpoint: "bottle-audit-checkpoint 1 seq hash
 * time"; its length */
size_t bottlectl_checkpoint_text(char *buf, size_t size, uint64_t seq,
    const char *hash, const char *time);


/* ctl_verify.c */

int bottlectl_audit_verify(bottlectl_t *ctl, int argc, char **argv);


/* ctl_against.c: verify --against FILE --pubkey PUB */

int bottlectl_verify_against(bottlectl_t *ctl, const char *file,
    const char *pubkey);


/* "audit verify: broken: <what>" on stdout; BOTTLECTL_REFUSED */
int bottlectl_broken(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;


#endif /* BOTTLECTL_CHAIN_H */
