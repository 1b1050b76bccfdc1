/*
 * bottlectl audit forward --to TARGET --state FILE [-f] [--max-size BYTES]
 * [--key KEY.pem]: ships the audit journal's chain off the store
 * (docs/control-plane.md, "Forwarding the chain"), one JSON record per
 * line, in batches:
 *
 *   {"seq":N,"id":"<stream id>","prev":"..","hash":"..","event":"<json>"}
 *   {"gap":{"after":A,"next":B},"reason":"..."}     events trimmed unsent
 *   {"checkpoint":{"seq":N,"hash":"..","time":"..","sig":"<base64>"}}
 *
 * The state file holds the last acknowledged entry and the highest seq
 * ever handed to the target.  It is written (atomically: a new file,
 * fsync'd, renamed) before a batch goes out and again once it was
 * acknowledged, so after a crash the entries that may have gone out
 * already are sent again with "resend":true, never silently twice, and
 * none acknowledged is sent again.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "bottlectl_chain.h"


#define BOTTLECTL_FORWARD_BATCH  256


typedef struct {
    const char         *to;
    const char         *state;
    const char         *key;
    int                 follow;

    bottlectl_out_t     out;
    EVP_PKEY           *pkey;

    uint64_t            acked_seq;
    char                acked_id[BOTTLECTL_CHAIN_ID_LEN];
    uint64_t            sending_seq;    /* highest ever handed out */
    int                 fresh;          /* no state file yet */

    char               *buf;            /* the batch */
    size_t              len;
    size_t              cap;
} bottlectl_fwd_t;


static int bottlectl_fwd_args(bottlectl_fwd_t *f, int argc, char **argv);
static int bottlectl_fwd_load(bottlectl_fwd_t *f);
static int bottlectl_fwd_save(bottlectl_fwd_t *f);
static int bottlectl_fwd_batch(bottlectl_t *ctl, bottlectl_fwd_t *f,
    int *got);
static int bottlectl_fwd_line(bottlectl_fwd_t *f, json_t *o);
static int bottlectl_fwd_checkpoint(bottlectl_fwd_t *f, uint64_t seq,
    const char *hash);
static void bottlectl_fwd_on_signal(int signo);


static volatile sig_atomic_t  bottlectl_fwd_stop;


int
bottlectl_audit_forward(bottlectl_t *ctl, int argc, char **argv)
{
    int              rc, got, failures;
    FILE            *fp;
    bottlectl_fwd_t  f;
    struct timespec  pause = { 0, 200000000 };

    memset(&f, 0, sizeof(f));

    rc = bottlectl_fwd_args(&f, argc, argv);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (f.key) {
        fp = fopen(f.key, "r");
        f.pkey = fp ? PEM_read_PrivateKey(fp, NULL, NULL, NULL) : NULL;
        if (fp) {
            fclose(fp);
        }

        if (f.pkey == NULL || EVP_PKEY_id(f.pkey) != EVP_PKEY_ED25519) {
            bottlectl_error("cannot read an Ed25519 private key (PEM) "
                            "from %s", f.key);
            EVP_PKEY_free(f.pkey);
            return BOTTLECTL_REFUSED;
        }
    }

    if (bottlectl_fwd_load(&f) != 0 || bottlectl_out_open(&f.out, f.to) != 0)
    {
        EVP_PKEY_free(f.pkey);
        return BOTTLECTL_REFUSED;
    }

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, bottlectl_fwd_on_signal);
    signal(SIGTERM, bottlectl_fwd_on_signal);

    failures = 0;

    while (!bottlectl_fwd_stop) {
        got = 0;
        rc = bottlectl_fwd_batch(ctl, &f, &got);

        if (rc != BOTTLECTL_OK) {
            if (!f.follow) {
                break;
            }

            /* following: the store or the target comes back */
            bottlectl_disconnect(ctl);
            failures++;
            sleep(failures < 5 ? 1 : 5);
            continue;
        }

        failures = 0;

        if (got == BOTTLECTL_FORWARD_BATCH) {
            continue;
        }

        if (!f.follow) {
            break;
        }

        nanosleep(&pause, NULL);
    }

    bottlectl_out_close(&f.out);
    EVP_PKEY_free(f.pkey);
    free(f.buf);

    return rc;
}


static int
bottlectl_fwd_args(bottlectl_fwd_t *f, int argc, char **argv)
{
    int           i;
    char         *end;
    const char  **to, *max;

    static const char  usage[] =
        "audit forward --to TARGET --state FILE [-f] [--max-size BYTES] "
        "[--key KEY.pem]";

    max = NULL;

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            f->follow = 1;
            continue;
        }

        if (strcmp(argv[i], "--to") == 0) {
            to = &f->to;
        } else if (strcmp(argv[i], "--state") == 0) {
            to = &f->state;
        } else if (strcmp(argv[i], "--key") == 0) {
            to = &f->key;
        } else if (strcmp(argv[i], "--max-size") == 0) {
            to = &max;
        } else {
            bottlectl_error("unknown option '%s'", argv[i]);
            return bottlectl_usage(usage);
        }

        if (i + 1 >= argc) {
            return bottlectl_usage(usage);
        }

        *to = argv[++i];
    }

    if (f->to == NULL || f->state == NULL) {
        return bottlectl_usage(usage);
    }

    if (max) {
        errno = 0;
        f->out.max_size = strtoull(max, &end, 10);
        if (*max < '1' || *max > '9' || *end != '\0' || errno != 0) {
            bottlectl_error("invalid --max-size '%s': a number of bytes",
                            max);
            return BOTTLECTL_USAGE;
        }
    }

    return BOTTLECTL_OK;
}


/* "acked_seq N\nacked_id ID\nsending_seq M\n"; none: from the start */

static int
bottlectl_fwd_load(bottlectl_fwd_t *f)
{
    int         n;
    FILE       *fp;
    char        id[BOTTLECTL_CHAIN_ID_LEN];
    uint64_t    acked, sending;

    strcpy(f->acked_id, "-");

    fp = fopen(f->state, "r");
    if (fp == NULL) {
        if (errno == ENOENT) {
            f->fresh = 1;
            return 0;
        }

        bottlectl_error("cannot read %s: %s", f->state, strerror(errno));
        return -1;
    }

    n = fscanf(fp, "acked_seq %" SCNu64 "\nacked_id %47s\nsending_seq %"
               SCNu64, &acked, id, &sending);
    fclose(fp);

    if (n != 3 || strspn(id, "0123456789-") != strlen(id)) {
        bottlectl_error("%s is not a forwarding state", f->state);
        return -1;
    }

    f->acked_seq = acked;
    f->sending_seq = sending;
    memcpy(f->acked_id, id, sizeof(id));

    return 0;
}


static int
bottlectl_fwd_save(bottlectl_fwd_t *f)
{
    int     fd, n;
    char    tmp[4200], text[256];

    n = snprintf(text, sizeof(text), "acked_seq %" PRIu64 "\nacked_id %s\n"
                 "sending_seq %" PRIu64 "\n", f->acked_seq, f->acked_id,
                 f->sending_seq);
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->state);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd == -1 || write(fd, text, (size_t) n) != n || fsync(fd) != 0
        || close(fd) != 0 || rename(tmp, f->state) != 0)
    {
        bottlectl_error("cannot write %s: %s", f->state, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    return 0;
}


/* one XRANGE after the last acknowledged entry, sent; *got: entries */

static int
bottlectl_fwd_batch(bottlectl_t *ctl, bottlectl_fwd_t *f, int *got)
{
    int                 rc;
    char                start[BOTTLECTL_CHAIN_ID_LEN + 1];
    char                last_id[BOTTLECTL_CHAIN_ID_LEN];
    char                last_hash[BOTTLE_AUDIT_HEX_LEN];
    size_t              i;
    json_t             *o;
    uint64_t            expect, last_seq;
    redisReply         *r;
    bottlectl_entry_t   e;

    if (strcmp(f->acked_id, "-") == 0) {
        strcpy(start, "-");
    } else {
        snprintf(start, sizeof(start), "(%s", f->acked_id);
    }

    rc = bottlectl_chain_range(ctl, &r, start, BOTTLECTL_FORWARD_BATCH);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    *got = (int) r->elements;
    f->len = 0;
    last_seq = f->acked_seq;
    last_id[0] = '\0';
    last_hash[0] = '\0';
    expect = f->acked_seq + 1;

    for (i = 0; i < r->elements; i++) {
        if (bottlectl_chain_entry(r->element[i], &e) != 0) {
            continue;
        }

        snprintf(last_id, sizeof(last_id), "%s", e.id);

        if (!e.chained) {
            o = json_pack("{s:n, s:s, s:s%}", "seq", "id", e.id, "event",
                          e.event ? e.event : "", e.event ? e.event_len : 0);

        } else {
            if (e.seq > expect && (f->acked_seq || f->fresh || e.seq > 1)) {
                /* trimmed from the store before they were forwarded */
                o = json_pack("{s:{s:I, s:I}, s:s}", "gap", "after",
                              (json_int_t) (expect - 1), "next",
                              (json_int_t) e.seq, "reason",
                              "trimmed from the store before they were "
                              "forwarded");
                if (bottlectl_fwd_line(f, o) != 0) {
                    freeReplyObject(r);
                    return BOTTLECTL_REFUSED;
                }
            }

            o = json_pack("{s:I, s:s, s:s, s:s, s:s%}", "seq",
                          (json_int_t) e.seq, "id", e.id, "prev", e.prev,
                          "hash", e.hash, "event", e.event, e.event_len);

            if (o && e.seq <= f->sending_seq) {
                /* it may have gone out before: said so */
                json_object_set_new(o, "resend", json_true());
            }

            expect = e.seq + 1;
            last_seq = e.seq;
            memcpy(last_hash, e.hash, BOTTLE_AUDIT_HEX_LEN);
        }

        if (bottlectl_fwd_line(f, o) != 0) {
            freeReplyObject(r);
            return BOTTLECTL_REFUSED;
        }
    }

    freeReplyObject(r);

    if (last_id[0] == '\0') {
        return BOTTLECTL_OK;
    }

    if (f->pkey && last_hash[0]
        && bottlectl_fwd_checkpoint(f, last_seq, last_hash) != 0)
    {
        return BOTTLECTL_REFUSED;
    }

    if (last_seq > f->sending_seq) {
        f->sending_seq = last_seq;
    }

    if (bottlectl_fwd_save(f) != 0) {
        return BOTTLECTL_REFUSED;
    }

    if (bottlectl_out_send(&f->out, f->buf, f->len) != 0) {
        return BOTTLECTL_UNREACHABLE;
    }

    f->acked_seq = last_seq;
    f->fresh = 0;
    memcpy(f->acked_id, last_id, sizeof(last_id));

    return bottlectl_fwd_save(f) == 0 ? BOTTLECTL_OK : BOTTLECTL_REFUSED;
}


/* the record as a line of the batch; takes the reference */

static int
bottlectl_fwd_line(bottlectl_fwd_t *f, json_t *o)
{
    char    *s, *nb;
    size_t   n;

    s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);

    if (s == NULL) {
        bottlectl_error("out of memory");
        return -1;
    }

    n = strlen(s);

    if (f->len + n + 1 > f->cap) {
        nb = realloc(f->buf, (f->len + n + 1) * 2);
        if (nb == NULL) {
            free(s);
            bottlectl_error("out of memory");
            return -1;
        }
        f->buf = nb;
        f->cap = (f->len + n + 1) * 2;
    }

    memcpy(f->buf + f->len, s, n);
    f->buf[f->len + n] = '\n';
    f->len += n + 1;
    free(s);

    return 0;
}


size_t
bottlectl_checkpoint_text(char *buf, size_t size, uint64_t seq,
    const char *hash, const char *time)
{
    int  n;

    n = snprintf(buf, size, "bottle-audit-checkpoint 1 %" PRIu64 " %s %s",
                 seq, hash, time);

    return n > 0 && (size_t) n < size ? (size_t) n : 0;
}


/* the newest entry's seq and hash, the time, signed with --key */

static int
bottlectl_fwd_checkpoint(bottlectl_fwd_t *f, uint64_t seq, const char *hash)
{
    char             now[BOTTLE_AUDIT_TIME_LEN], text[256];
    size_t           n, siglen;
    EVP_MD_CTX      *md;
    unsigned char    sig[64], b64[96];
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    if (bottle_audit_time(now, sizeof(now), (int64_t) ts.tv_sec * 1000
                                            + ts.tv_nsec / 1000000)
        != 0)
    {
        return -1;
    }

    n = bottlectl_checkpoint_text(text, sizeof(text), seq, hash, now);
    siglen = sizeof(sig);

    md = EVP_MD_CTX_new();
    if (md == NULL || n == 0
        || EVP_DigestSignInit(md, NULL, NULL, NULL, f->pkey) != 1
        || EVP_DigestSign(md, sig, &siglen, (unsigned char *) text, n) != 1)
    {
        EVP_MD_CTX_free(md);
        bottlectl_error("cannot sign the checkpoint");
        return -1;
    }

    EVP_MD_CTX_free(md);
    EVP_EncodeBlock(b64, sig, (int) siglen);

    return bottlectl_fwd_line(f, json_pack("{s:{s:I, s:s, s:s, s:s}}",
                                           "checkpoint", "seq",
                                           (json_int_t) seq, "hash", hash,
                                           "time", now, "sig", b64));
}


static void
bottlectl_fwd_on_signal(int signo)
{
    (void) signo;

    /* the batch under way finishes; the state stays whole */
    bottlectl_fwd_stop = 1;
}
