/*
 * bottlectl audit verify [--from ID]: walks the audit journal's hash
 * chain (lib/bottle_audit_chain.h, docs/control-plane.md "The chain"),
 * recomputes every event's digest and link, and names the first break:
 * an edited event (its hash does not match it, or the next one does not
 * link to it), a removed one (a seq missing), reordered ones (a seq out of
 * place, found further on).  Exit 0 when whole, 1 after the line that
 * names the break.
 *
 * The walk reads the stream in batches (XRANGE with an exclusive start);
 * the chain's head is read first, so events appended meanwhile are
 * beyond it and harmless.
 */

#define _POSIX_C_SOURCE  200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottlectl.h"
#include "bottlectl_chain.h"
#include "bottle_audit_chain.h"


#define BOTTLECTL_VERIFY_BATCH  512


typedef struct {
    const char         *from;           /* --from, or NULL */
    const char         *against;        /* --against FILE, or NULL */
    const char         *pubkey;         /* --pubkey FILE */

    uint64_t            head_seq;       /* bottle:audit:chain */
    char                head_hash[BOTTLE_AUDIT_HEX_LEN];
    uint64_t            trimmed_seq;
    char                trimmed_hash[BOTTLE_AUDIT_HEX_LEN];

    int                 started;
    uint64_t            first_seq;
    uint64_t            seq;            /* the last entry's */
    char                hash[BOTTLE_AUDIT_HEX_LEN];
    char                id[BOTTLECTL_CHAIN_ID_LEN];
    uint64_t            n;              /* chained entries seen */
    uint64_t            unchained;      /* before the chain began */
    const char         *origin;
} bottlectl_verify_t;


static int bottlectl_verify_args(bottlectl_verify_t *v, int argc,
    char **argv);
static int bottlectl_verify_head(bottlectl_t *ctl, bottlectl_verify_t *v);
static int bottlectl_verify_entry(bottlectl_t *ctl, bottlectl_verify_t *v,
    const bottlectl_entry_t *e);
static int bottlectl_verify_jump(bottlectl_t *ctl, bottlectl_verify_t *v,
    const bottlectl_entry_t *e);
static int bottlectl_verify_end(bottlectl_verify_t *v);


int
bottlectl_audit_verify(bottlectl_t *ctl, int argc, char **argv)
{
    int                 rc;
    char                start[BOTTLECTL_CHAIN_ID_LEN + 1];
    size_t              i, got;
    redisReply         *r;
    bottlectl_entry_t   e;
    bottlectl_verify_t  v;

    memset(&v, 0, sizeof(v));

    rc = bottlectl_verify_args(&v, argc, argv);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    rc = bottlectl_verify_head(ctl, &v);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    snprintf(start, sizeof(start), "%s", v.from ? v.from : "-");

    for ( ;; ) {
        rc = bottlectl_chain_range(ctl, &r, start, BOTTLECTL_VERIFY_BATCH);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }

        got = r->elements;

        for (i = 0; i < r->elements; i++) {
            if (bottlectl_chain_entry(r->element[i], &e) != 0) {
                continue;
            }

            snprintf(start, sizeof(start), "(%s", e.id);

            rc = bottlectl_verify_entry(ctl, &v, &e);
            if (rc != BOTTLECTL_OK) {
                freeReplyObject(r);
                return rc;
            }
        }

        freeReplyObject(r);

        if (got < BOTTLECTL_VERIFY_BATCH) {
            break;
        }
    }

    rc = bottlectl_verify_end(&v);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (v.against) {
        return bottlectl_verify_against(ctl, v.against, v.pubkey);
    }

    return BOTTLECTL_OK;
}


static int
bottlectl_verify_args(bottlectl_verify_t *v, int argc, char **argv)
{
    int          i;
    const char **to;

    static const char  usage[] =
        "audit verify [--from ID] [--against FILE --pubkey PUBKEY]";

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0) {
            to = &v->from;
        } else if (strcmp(argv[i], "--against") == 0) {
            to = &v->against;
        } else if (strcmp(argv[i], "--pubkey") == 0) {
            to = &v->pubkey;
        } else {
            bottlectl_error("unknown option '%s'", argv[i]);
            return bottlectl_usage(usage);
        }

        if (i + 1 >= argc) {
            return bottlectl_usage(usage);
        }

        *to = argv[++i];
    }

    if (v->from && (strlen(v->from) >= BOTTLECTL_CHAIN_ID_LEN
                    || strspn(v->from, "0123456789-") != strlen(v->from)))
    {
        bottlectl_error("invalid --from '%s': a stream id", v->from);
        return BOTTLECTL_USAGE;
    }

    if ((v->against == NULL) != (v->pubkey == NULL)) {
        bottlectl_error("--against and --pubkey go together");
        return bottlectl_usage(usage);
    }

    return BOTTLECTL_OK;
}


/* bottle:audit:chain: the head, and the checkpoint of what was trimmed */

static int
bottlectl_verify_head(bottlectl_t *ctl, bottlectl_verify_t *v)
{
    int          rc;
    redisReply  *r;
    const char  *argv[6];

    argv[0] = "HMGET";
    argv[1] = BOTTLE_STORE_AUDIT_CHAIN;
    argv[2] = BOTTLE_AUDIT_F_SEQ;
    argv[3] = BOTTLE_AUDIT_F_HASH;
    argv[4] = BOTTLE_AUDIT_F_TRIMMED_SEQ;
    argv[5] = BOTTLE_AUDIT_F_TRIMMED_HASH;

    rc = bottlectl_command(ctl, &r, 6, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4) {
        bottlectl_error("cannot read %s: %s", BOTTLE_STORE_AUDIT_CHAIN,
                        r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "not a hash");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    if (r->element[0]->type == REDIS_REPLY_STRING
        && r->element[1]->type == REDIS_REPLY_STRING
        && r->element[1]->len == BOTTLE_AUDIT_HEX_LEN - 1)
    {
        v->head_seq = strtoull(r->element[0]->str, NULL, 10);
        memcpy(v->head_hash, r->element[1]->str, BOTTLE_AUDIT_HEX_LEN);
    }

    if (r->element[2]->type == REDIS_REPLY_STRING
        && r->element[3]->type == REDIS_REPLY_STRING
        && r->element[3]->len == BOTTLE_AUDIT_HEX_LEN - 1)
    {
        v->trimmed_seq = strtoull(r->element[2]->str, NULL, 10);
        memcpy(v->trimmed_hash, r->element[3]->str, BOTTLE_AUDIT_HEX_LEN);
    }

    freeReplyObject(r);

    return BOTTLECTL_OK;
}


static int
bottlectl_verify_entry(bottlectl_t *ctl, bottlectl_verify_t *v,
    const bottlectl_entry_t *e)
{
    char  link[BOTTLE_AUDIT_HEX_LEN];

    static const char  zeros[] =
        "0000000000000000000000000000000000000000000000000000000000000000";

    if (!e->chained) {
        if (!v->started) {
            v->unchained++;
            return BOTTLECTL_OK;
        }

        return bottlectl_broken("entry %s after seq %" PRIu64 " (entry %s) "
                                "is not chained: no valid seq, prev and "
                                "hash (edited, or written around the chain)",
                                e->id, v->seq, v->id);
    }

    if (bottlectl_chain_link(link, e) != 0 || strcmp(link, e->hash) != 0) {
        return bottlectl_broken("edited: entry %s (seq %" PRIu64 "): its "
                                "event does not match its hash", e->id,
                                e->seq);
    }

    if (!v->started) {
        v->started = 1;
        v->first_seq = e->seq;

        if (v->from) {
            v->origin = "from --from";

        } else if (e->seq == 1) {
            if (strcmp(e->prev, zeros) != 0) {
                return bottlectl_broken("edited: entry %s (seq 1) does not "
                                        "begin the chain: its prev is not "
                                        "64 zeros", e->id);
            }
            v->origin = "from the beginning";

        } else if (v->trimmed_seq && e->seq == v->trimmed_seq + 1
                   && strcmp(e->prev, v->trimmed_hash) == 0)
        {
            v->origin = "from the trim checkpoint";

        } else if (v->trimmed_seq) {
            return bottlectl_broken("removed: the stream begins at seq %"
                                    PRIu64 " (entry %s) but the trim "
                                    "checkpoint is seq %" PRIu64 "%s",
                                    e->seq, e->id, v->trimmed_seq,
                                    e->seq == v->trimmed_seq + 1
                                    ? " with another hash" : "");

        } else {
            return bottlectl_broken("removed: the stream begins at seq %"
                                    PRIu64 " (entry %s), seq 1..%" PRIu64
                                    " are missing and nothing was trimmed",
                                    e->seq, e->id, e->seq - 1);
        }

    } else if (e->seq != v->seq + 1) {
        return bottlectl_verify_jump(ctl, v, e);

    } else if (strcmp(e->prev, v->hash) != 0) {
        return bottlectl_broken("edited: seq %" PRIu64 " (entry %s) was "
                                "rewritten: seq %" PRIu64 " (entry %s) "
                                "links to another hash", v->seq, v->id,
                                e->seq, e->id);
    }

    v->seq = e->seq;
    memcpy(v->hash, e->hash, BOTTLE_AUDIT_HEX_LEN);
    snprintf(v->id, sizeof(v->id), "%s", e->id);
    v->n++;

    return BOTTLECTL_OK;
}


/* a seq out of place: the one expected further on (reordered) or not */

static int
bottlectl_verify_jump(bottlectl_t *ctl, bottlectl_verify_t *v,
    const bottlectl_entry_t *e)
{
    int                 rc;
    char                start[BOTTLECTL_CHAIN_ID_LEN + 1];
    char                found[BOTTLECTL_CHAIN_ID_LEN];
    size_t              i, got;
    uint64_t            want;
    redisReply         *r;
    bottlectl_entry_t   f;

    if (e->seq <= v->seq) {
        return bottlectl_broken("reordered: seq %" PRIu64 " (entry %s) "
                                "comes after seq %" PRIu64 " (entry %s)",
                                e->seq, e->id, v->seq, v->id);
    }

    want = v->seq + 1;
    found[0] = '\0';
    snprintf(start, sizeof(start), "(%s", e->id);

    do {
        rc = bottlectl_chain_range(ctl, &r, start, BOTTLECTL_VERIFY_BATCH);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }

        got = r->elements;

        for (i = 0; i < r->elements && found[0] == '\0'; i++) {
            if (bottlectl_chain_entry(r->element[i], &f) != 0) {
                continue;
            }

            snprintf(start, sizeof(start), "(%s", f.id);

            if (f.chained && f.seq == want) {
                snprintf(found, sizeof(found), "%s", f.id);
            }
        }

        freeReplyObject(r);

    } while (found[0] == '\0' && got == BOTTLECTL_VERIFY_BATCH);

    if (found[0]) {
        return bottlectl_broken("reordered: seq %" PRIu64 " (entry %s) "
                                "comes after seq %" PRIu64 " (entry %s)",
                                want, found, e->seq, e->id);
    }

    return bottlectl_broken("removed: seq %" PRIu64 "..%" PRIu64 " missing "
                            "between entry %s (seq %" PRIu64 ") and entry "
                            "%s (seq %" PRIu64 ")", want, e->seq - 1, v->id,
                            v->seq, e->id, e->seq);
}


static int
bottlectl_verify_end(bottlectl_verify_t *v)
{
    if (v->head_seq && (!v->started || v->seq < v->head_seq)) {
        return bottlectl_broken("removed: the chain's head is seq %" PRIu64
                                " but the stream ends %s%s%s", v->head_seq,
                                v->started ? "at entry " : "without a "
                                "chained event", v->started ? v->id : "",
                                v->started ? "" : "");
    }

    if (v->head_seq && v->seq == v->head_seq
        && strcmp(v->hash, v->head_hash) != 0)
    {
        return bottlectl_broken("edited: seq %" PRIu64 " (entry %s), the "
                                "newest, is not the chain's head", v->seq,
                                v->id);
    }

    if (!v->started) {
        printf("audit verify: whole: no chained event (%" PRIu64
               " unchained)\n", v->unchained);
        return BOTTLECTL_OK;
    }

    printf("audit verify: whole: %" PRIu64 " events, seq %" PRIu64 "..%"
           PRIu64 " (%s), head %s\n", v->n, v->first_seq, v->seq,
           v->origin, v->hash);

    if (v->unchained) {
        printf("audit verify: %" PRIu64 " entries before the chain began "
               "are not chained\n", v->unchained);
    }

    return BOTTLECTL_OK;
}
