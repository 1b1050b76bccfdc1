/*
 * bottlectl audit verify --against FORWARDED --pubkey PUB: the chain in
 * the store against a copy audit forward wrote (ctl_forward.c).  The
 * copy is checked first: every record's hash recomputed from its event,
 * consecutive records linked, every checkpoint's Ed25519 signature (the
 * key the store never held) and its (seq, hash) equal to the record's.
 * The records up to the newest signed checkpoint are then authenticated
 * by it (their hashes chain to the signed one); every store entry of such
 * a seq must carry the same hash, and the store must still reach that
 * checkpoint (unless trimmed past it).  A chain rewritten in Redis, every
 * hash recomputed after an edit, verifies alone but not against this.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "bottlectl_chain.h"


#define BOTTLECTL_AGAINST_LINE_MAX  (1024 * 1024)


typedef struct {
    uint64_t            seq;
    char                hash[BOTTLE_AUDIT_HEX_LEN];
} bottlectl_fwd_rec_t;


typedef struct {
    bottlectl_fwd_rec_t  *recs;         /* by seq, increasing */
    size_t                n;
    size_t                cap;
    uint64_t              signed_seq;   /* the newest signed checkpoint */
    size_t                checkpoints;
} bottlectl_against_t;


static int bottlectl_against_read(bottlectl_against_t *a, const char *file,
    EVP_PKEY *pub);
static int bottlectl_against_record(bottlectl_against_t *a, json_t *o,
    const char *file, size_t line);
static int bottlectl_against_checkpoint(bottlectl_against_t *a, json_t *c,
    EVP_PKEY *pub, const char *file, size_t line);
static const bottlectl_fwd_rec_t *bottlectl_against_find(
    const bottlectl_against_t *a, uint64_t seq);
static int bottlectl_against_store(bottlectl_t *ctl, bottlectl_against_t *a);


int
bottlectl_verify_against(bottlectl_t *ctl, const char *file,
    const char *pubkey)
{
    int                  rc;
    FILE                *fp;
    EVP_PKEY            *pub;
    bottlectl_against_t  a;

    fp = fopen(pubkey, "r");
    pub = fp ? PEM_read_PUBKEY(fp, NULL, NULL, NULL) : NULL;
    if (fp) {
        fclose(fp);
    }

    if (pub == NULL || EVP_PKEY_id(pub) != EVP_PKEY_ED25519) {
        bottlectl_error("cannot read an Ed25519 public key (PEM) from %s",
                        pubkey);
        EVP_PKEY_free(pub);
        return BOTTLECTL_REFUSED;
    }

    memset(&a, 0, sizeof(a));

    rc = bottlectl_against_read(&a, file, pub);
    EVP_PKEY_free(pub);

    if (rc == BOTTLECTL_OK) {
        rc = bottlectl_against_store(ctl, &a);
    }

    free(a.recs);

    return rc;
}


static int
bottlectl_against_read(bottlectl_against_t *a, const char *file,
    EVP_PKEY *pub)
{
    int            rc;
    FILE          *fp;
    char          *line;
    size_t         n, cap;
    ssize_t        len;
    json_t        *o, *c;
    json_error_t   jerr;

    fp = fopen(file, "r");
    if (fp == NULL) {
        bottlectl_error("cannot read %s: %s", file, strerror(errno));
        return BOTTLECTL_REFUSED;
    }

    line = NULL;
    cap = 0;
    rc = BOTTLECTL_OK;

    for (n = 1; rc == BOTTLECTL_OK && (len = getline(&line, &cap, fp)) > 0;
         n++)
    {
        if (len > BOTTLECTL_AGAINST_LINE_MAX) {
            rc = bottlectl_broken("%s line %zu: longer than %d "
                                          "bytes", file, n,
                                          BOTTLECTL_AGAINST_LINE_MAX);
            break;
        }

        o = json_loadb(line, (size_t) len, 0, &jerr);
        if (o == NULL || !json_is_object(o)) {
            json_decref(o);
            rc = bottlectl_broken("%s line %zu: not a record",
                                          file, n);
            break;
        }

        c = json_object_get(o, "checkpoint");

        if (c) {
            rc = bottlectl_against_checkpoint(a, c, pub, file, n);

        } else if (json_is_integer(json_object_get(o, "seq"))) {
            rc = bottlectl_against_record(a, o, file, n);
        }

        /* gaps and entries from before the chain: nothing to check */

        json_decref(o);
    }

    free(line);
    fclose(fp);

    if (rc == BOTTLECTL_OK && a->checkpoints == 0) {
        rc = bottlectl_broken("%s holds no signed checkpoint", file);
    }

    return rc;
}


static int
bottlectl_against_record(bottlectl_against_t *a, json_t *o,
    const char *file, size_t line)
{
    char                  link[BOTTLE_AUDIT_HEX_LEN];
    json_int_t            seq;
    const char           *prev, *hash, *event;
    bottlectl_fwd_rec_t  *last, *nr;

    seq = json_integer_value(json_object_get(o, "seq"));
    prev = json_string_value(json_object_get(o, "prev"));
    hash = json_string_value(json_object_get(o, "hash"));
    event = json_string_value(json_object_get(o, "event"));

    if (seq < 1 || prev == NULL || hash == NULL || event == NULL
        || strlen(hash) != BOTTLE_AUDIT_HEX_LEN - 1)
    {
        return bottlectl_broken("%s line %zu: not a chain record",
                                        file, line);
    }

    bottle_audit_sha256_hex(link, event,
                            json_string_length(json_object_get(o, "event")));

    if (bottle_audit_link(link, prev, (uint64_t) seq, link) != 0
        || strcmp(link, hash) != 0)
    {
        return bottlectl_broken("the forwarded copy: %s line %zu "
                                        "(seq %" PRIu64 "): its event does "
                                        "not match its hash", file, line,
                                        (uint64_t) seq);
    }

    last = a->n ? &a->recs[a->n - 1] : NULL;

    if (last && (uint64_t) seq <= last->seq) {
        /* a resend: the same as before, or the copy is not one chain */
        nr = (bottlectl_fwd_rec_t *) bottlectl_against_find(a,
                                                            (uint64_t) seq);
        if (nr && strcmp(nr->hash, hash) == 0) {
            return BOTTLECTL_OK;
        }

        return bottlectl_broken("the forwarded copy: %s line %zu: "
                                        "seq %" PRIu64 " again, another "
                                        "hash", file, line, (uint64_t) seq);
    }

    if (last && (uint64_t) seq == last->seq + 1
        && strcmp(prev, last->hash) != 0)
    {
        return bottlectl_broken("the forwarded copy: %s line %zu "
                                        "(seq %" PRIu64 ") does not link to "
                                        "seq %" PRIu64, file, line,
                                        (uint64_t) seq, last->seq);
    }

    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        nr = realloc(a->recs, a->cap * sizeof(bottlectl_fwd_rec_t));
        if (nr == NULL) {
            bottlectl_error("out of memory");
            return BOTTLECTL_REFUSED;
        }
        a->recs = nr;
    }

    a->recs[a->n].seq = (uint64_t) seq;
    memcpy(a->recs[a->n].hash, hash, BOTTLE_AUDIT_HEX_LEN);
    a->n++;

    return BOTTLECTL_OK;
}


static int
bottlectl_against_checkpoint(bottlectl_against_t *a, json_t *c,
    EVP_PKEY *pub, const char *file, size_t line)
{
    int                         ok;
    char                        text[256];
    size_t                      n;
    json_int_t                  seq;
    EVP_MD_CTX                 *md;
    const char                 *hash, *time, *sig;
    unsigned char               raw[96];
    const bottlectl_fwd_rec_t  *r;

    seq = json_integer_value(json_object_get(c, "seq"));
    hash = json_string_value(json_object_get(c, "hash"));
    time = json_string_value(json_object_get(c, "time"));
    sig = json_string_value(json_object_get(c, "sig"));

    if (seq < 1 || hash == NULL || time == NULL || sig == NULL
        || strlen(sig) != 88
        || EVP_DecodeBlock(raw, (const unsigned char *) sig, 88) != 66)
    {
        return bottlectl_broken("%s line %zu: not a checkpoint",
                                        file, line);
    }

    n = bottlectl_checkpoint_text(text, sizeof(text), (uint64_t) seq, hash,
                                  time);

    md = EVP_MD_CTX_new();
    ok = md && n
         && EVP_DigestVerifyInit(md, NULL, NULL, NULL, pub) == 1
         && EVP_DigestVerify(md, raw, 64, (unsigned char *) text, n) == 1;
    EVP_MD_CTX_free(md);

    if (!ok) {
        return bottlectl_broken("the forwarded copy: %s line %zu: "
                                        "the checkpoint of seq %" PRIu64
                                        " is not signed by that key", file,
                                        line, (uint64_t) seq);
    }

    r = bottlectl_against_find(a, (uint64_t) seq);

    if (r == NULL || strcmp(r->hash, hash) != 0) {
        return bottlectl_broken("the forwarded copy: %s line %zu: "
                                        "the signed checkpoint of seq %"
                                        PRIu64 " is not the record before "
                                        "it", file, line, (uint64_t) seq);
    }

    a->signed_seq = (uint64_t) seq;
    a->checkpoints++;

    return BOTTLECTL_OK;
}


static const bottlectl_fwd_rec_t *
bottlectl_against_find(const bottlectl_against_t *a, uint64_t seq)
{
    size_t  lo, hi, mid;

    lo = 0;
    hi = a->n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (a->recs[mid].seq == seq) {
            return &a->recs[mid];
        }

        if (a->recs[mid].seq < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return NULL;
}


/* every store entry the signed copy covers: the same hash */

static int
bottlectl_against_store(bottlectl_t *ctl, bottlectl_against_t *a)
{
    int                         rc;
    char                        start[BOTTLECTL_CHAIN_ID_LEN + 1];
    size_t                      i, got;
    uint64_t                    compared, newest;
    redisReply                 *r;
    bottlectl_entry_t           e;
    const bottlectl_fwd_rec_t  *f;

    strcpy(start, "-");
    compared = 0;
    newest = 0;

    do {
        rc = bottlectl_chain_range(ctl, &r, start, 512);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }

        got = r->elements;

        for (i = 0; i < r->elements; i++) {
            if (bottlectl_chain_entry(r->element[i], &e) != 0) {
                continue;
            }

            snprintf(start, sizeof(start), "(%s", e.id);

            if (!e.chained) {
                continue;
            }

            newest = e.seq;

            if (e.seq > a->signed_seq) {
                continue;
            }

            f = bottlectl_against_find(a, e.seq);
            if (f == NULL) {
                continue;
            }

            if (strcmp(f->hash, e.hash) != 0) {
                freeReplyObject(r);
                return bottlectl_broken("rewritten: seq %" PRIu64
                                                " (entry %s) has hash %.16s"
                                                "... in the store, %.16s... "
                                                "in the forwarded copy, "
                                                "signed up to seq %" PRIu64,
                                                e.seq, e.id, e.hash, f->hash,
                                                a->signed_seq);
            }

            compared++;
        }

        freeReplyObject(r);

    } while (got == 512);

    if (newest < a->signed_seq) {
        return bottlectl_broken("removed: the store's chain ends at "
                                        "seq %" PRIu64 ", the forwarded "
                                        "copy has a signed checkpoint at "
                                        "seq %" PRIu64, newest,
                                        a->signed_seq);
    }

    printf("audit verify: the store matches the forwarded copy: %" PRIu64
           " events compared, %zu signed checkpoints, the newest at seq %"
           PRIu64 "\n", compared, a->checkpoints, a->signed_seq);

    return BOTTLECTL_OK;
}

