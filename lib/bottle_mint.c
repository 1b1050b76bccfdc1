/*
 * Leaf certificates signed by the gateway CA: minting, and the
 * per-process LRU cache of minted leaves.  Loading the CA is in
 * bottle_mint_ca.c.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "bottle_mint_int.h"


#define BOTTLE_MINT_SKEW        3600    /* notBefore back: client clocks */
#define BOTTLE_MINT_SERIAL_LEN  16
#define BOTTLE_MINT_CN_MAX      64      /* ub-common-name, RFC 5280 */
#define BOTTLE_MINT_QUOTE_MAX   64      /* of a name in an error message */
#define BOTTLE_MINT_IP_MAX      45      /* INET6_ADDRSTRLEN without NUL */


typedef struct bottle_leaf_s  bottle_leaf_t;

struct bottle_leaf_s {
    bottle_leaf_t      *hnext;      /* hash bucket chain */
    bottle_leaf_t      *prev;       /* LRU list, most recent first */
    bottle_leaf_t      *next;
    X509               *cert;
    time_t              not_after;
    uint32_t            hash;
    int                 is_ip;
    size_t              len;
    char                name[BOTTLE_MINT_NAME_MAX + 1];
};


struct bottle_mint_s {
    const bottle_ca_t  *ca;
    EVP_PKEY           *key;        /* of every leaf */
    const char         *key_usage;
    time_t            (*now)(void);
    long                validity;
    long                renew_before;
    bottle_leaf_t     **buckets;
    size_t              mask;       /* buckets - 1, a power of two */
    bottle_leaf_t      *head;       /* most recently used */
    bottle_leaf_t      *tail;       /* evicted next */
    size_t              n;
    size_t              max;
    unsigned long       minted;
};


/* a name checked by bottle_mint_get(), NUL-terminated */
typedef struct {
    char                name[BOTTLE_MINT_NAME_MAX + 1];
    size_t              len;
    int                 is_ip;
    unsigned char       addr[16];
    size_t              addrlen;
} bottle_mint_name_t;


/* errors */

int
bottle_mint_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }

    /* a TLS caller would otherwise see these errors as its own */
    ERR_clear_error();

    return -1;
}


/* the reason of the last OpenSSL error; static text, outlives the queue */

const char *
bottle_mint_ssl_reason(void)
{
    const char     *reason;
    unsigned long   e;

    e = ERR_peek_last_error();
    if (e == 0) {
        return "unknown error";
    }

    /* what PEM and the OpenSSL 3 decoders say of a file without one */
    if ((ERR_GET_LIB(e) == ERR_LIB_PEM
         && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
        || (ERR_GET_LIB(e) == ERR_LIB_OSSL_DECODER
            && ERR_GET_REASON(e) == ERR_R_UNSUPPORTED))
    {
        return "no PEM data of the expected type";
    }

    reason = ERR_reason_error_string(e);

    return reason != NULL ? reason : "unknown error";
}


/* the minter */

static time_t
bottle_mint_time(void)
{
    return time(NULL);
}


int
bottle_mint_create(bottle_mint_t **out, const bottle_ca_t *ca,
    size_t max_entries, long validity_seconds, char *err, size_t errlen)
{
    size_t          nbuckets;
    bottle_mint_t  *m;

    *out = NULL;

    if (max_entries < 1 || max_entries > BOTTLE_MINT_MAX_ENTRIES) {
        return bottle_mint_errf(err, errlen, "cannot create minter: "
                                "max_entries %zu not in 1..%d",
                                max_entries, BOTTLE_MINT_MAX_ENTRIES);
    }

    if (validity_seconds < 1) {
        return bottle_mint_errf(err, errlen, "cannot create minter: "
                                "validity %ld not positive",
                                validity_seconds);
    }

    m = calloc(1, sizeof(bottle_mint_t));
    if (m == NULL) {
        return bottle_mint_errf(err, errlen, "cannot create minter: out of "
                                "memory");
    }

    /* at most one leaf per bucket on average */
    for (nbuckets = 1; nbuckets < max_entries; nbuckets <<= 1) {
        /* void */
    }

    m->ca = ca;
    m->now = bottle_mint_time;
    m->validity = validity_seconds;
    m->renew_before = validity_seconds / 4;
    m->max = max_entries;
    m->mask = nbuckets - 1;

    m->buckets = calloc(nbuckets, sizeof(bottle_leaf_t *));
    if (m->buckets == NULL) {
        bottle_mint_free(m);
        return bottle_mint_errf(err, errlen, "cannot create minter: out of "
                                "memory");
    }

    m->key = EVP_EC_gen("P-256");
    if (m->key == NULL) {
        bottle_mint_free(m);
        return bottle_mint_errf(err, errlen, "cannot create minter: cannot "
                                "generate the leaf key: %s",
                                bottle_mint_ssl_reason());
    }

    /* RSA key exchange encrypts to the key; ECDSA keys only sign */
    m->key_usage = EVP_PKEY_is_a(m->key, "RSA")
                   ? "critical,digitalSignature,keyEncipherment"
                   : "critical,digitalSignature";

    *out = m;

    return 0;
}


void
bottle_mint_free(bottle_mint_t *m)
{
    bottle_leaf_t  *e, *next;

    if (m == NULL) {
        return;
    }

    for (e = m->head; e != NULL; e = next) {
        next = e->next;
        X509_free(e->cert);
        free(e);
    }

    free(m->buckets);
    EVP_PKEY_free(m->key);
    free(m);
}


int
bottle_mint_set_renew_before(bottle_mint_t *m, long seconds)
{
    if (seconds < 0 || seconds >= m->validity) {
        return -1;
    }

    m->renew_before = seconds;

    return 0;
}


void
bottle_mint_set_clock(bottle_mint_t *m, time_t (*now)(void))
{
    m->now = now != NULL ? now : bottle_mint_time;
}


size_t
bottle_mint_cached(const bottle_mint_t *m)
{
    return m->n;
}


unsigned long
bottle_mint_count(const bottle_mint_t *m)
{
    return m->minted;
}


/* names */

/* a name for an error message: it comes from the agent, so printable only */

static const char *
bottle_mint_quote(char *buf, size_t size, const char *name, size_t len)
{
    size_t  i, n;

    n = len < BOTTLE_MINT_QUOTE_MAX ? len : BOTTLE_MINT_QUOTE_MAX;
    if (n > size - 4) {
        n = size - 4;
    }

    for (i = 0; i < n; i++) {
        buf[i] = (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '"')
                 ? name[i] : '?';
    }

    strcpy(buf + n, n < len ? "..." : "");

    return buf;
}


static int
bottle_mint_check_dns(const char *name, size_t len)
{
    size_t  i;
    char    c;

    for (i = 0; i < len; i++) {
        c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '.' || c == '-' || c == '_'))
        {
            return -1;
        }
    }

    return 0;
}


/* NULL if the name is acceptable, else why not */

static const char *
bottle_mint_parse_name(bottle_mint_name_t *out, const char *name, size_t len,
    int is_ip)
{
    if (len == 0) {
        return "empty name";
    }

    if (!is_ip) {
        if (len > BOTTLE_MINT_NAME_MAX) {
            return "name longer than 253 bytes";
        }

        if (bottle_mint_check_dns(name, len) != 0) {
            return "invalid character in name (not [a-z0-9.-_])";
        }

    } else if (len > BOTTLE_MINT_IP_MAX || memchr(name, '\0', len) != NULL) {
        return "not an IP address";
    }

    memcpy(out->name, name, len);
    out->name[len] = '\0';
    out->len = len;
    out->is_ip = is_ip ? 1 : 0;
    out->addrlen = 0;

    if (!is_ip) {
        return NULL;
    }

    if (inet_pton(AF_INET, out->name, out->addr) == 1) {
        out->addrlen = 4;

    } else if (inet_pton(AF_INET6, out->name, out->addr) == 1) {
        out->addrlen = 16;

    } else {
        return "not an IP address";
    }

    return NULL;
}


static int
bottle_mint_check_name(bottle_mint_name_t *out, const char *name,
    size_t len, int is_ip, char *err, size_t errlen)
{
    char         q[BOTTLE_MINT_QUOTE_MAX + 4];
    const char  *why;

    why = bottle_mint_parse_name(out, name, len, is_ip);
    if (why == NULL) {
        return 0;
    }

    return bottle_mint_errf(err, errlen, "cannot mint a leaf for \"%s\": %s",
                            bottle_mint_quote(q, sizeof(q), name, len), why);
}


/* FNV-1a over the name, then the kind */

static uint32_t
bottle_mint_hash(const bottle_mint_name_t *n)
{
    size_t    i;
    uint32_t  h;

    h = 2166136261u;

    for (i = 0; i < n->len; i++) {
        h = (h ^ (unsigned char) n->name[i]) * 16777619u;
    }

    return (h ^ (uint32_t) n->is_ip) * 16777619u;
}


/* minting */

static int
bottle_mint_serial(X509 *x)
{
    int            rc;
    BIGNUM        *bn;
    unsigned char  buf[BOTTLE_MINT_SERIAL_LEN];

    if (RAND_bytes(buf, sizeof(buf)) != 1) {
        return -1;
    }

    /* positive (top bit clear) and a full 16 bytes (next bit set) */
    buf[0] = (unsigned char) ((buf[0] & 0x7f) | 0x40);

    bn = BN_bin2bn(buf, sizeof(buf), NULL);
    if (bn == NULL) {
        return -1;
    }

    rc = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL ? 0 : -1;

    BN_free(bn);

    return rc;
}


static int
bottle_mint_names(X509 *x, const bottle_ca_t *ca, const bottle_mint_name_t *n)
{
    int         rc;
    size_t      cnlen;
    X509_NAME  *subject;

    subject = X509_NAME_new();
    if (subject == NULL) {
        return -1;
    }

    cnlen = n->len < BOTTLE_MINT_CN_MAX ? n->len : BOTTLE_MINT_CN_MAX;

    rc = (X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8,
                                     (const unsigned char *) n->name,
                                     (int) cnlen, -1, 0)
          && X509_set_subject_name(x, subject)
          && X509_set_issuer_name(x, X509_get_subject_name(ca->cert)))
         ? 0 : -1;

    X509_NAME_free(subject);

    return rc;
}


static int
bottle_mint_validity(X509 *x, time_t *out_not_after, const bottle_mint_t *m,
    time_t now)
{
    time_t  not_after;

    not_after = now + m->validity;
    if (not_after > m->ca->not_after) {
        not_after = m->ca->not_after;
    }

    if (ASN1_TIME_set(X509_getm_notBefore(x), now - BOTTLE_MINT_SKEW)
        == NULL
        || ASN1_TIME_set(X509_getm_notAfter(x), not_after) == NULL)
    {
        return -1;
    }

    *out_not_after = not_after;

    return 0;
}


static int
bottle_mint_san(X509 *x, const bottle_mint_name_t *n)
{
    int             rc;
    ASN1_STRING    *s;
    GENERAL_NAME   *gn;
    GENERAL_NAMES  *gens;

    rc = -1;
    gn = NULL;

    gens = GENERAL_NAMES_new();
    if (gens == NULL) {
        return -1;
    }

    s = n->is_ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
    if (s == NULL) {
        goto cleanup;
    }

    if ((n->is_ip ? !ASN1_OCTET_STRING_set(s, n->addr, (int) n->addrlen)
                  : !ASN1_STRING_set(s, n->name, (int) n->len))
        || (gn = GENERAL_NAME_new()) == NULL)
    {
        ASN1_STRING_free(s);
        goto cleanup;
    }

    GENERAL_NAME_set0_value(gn, n->is_ip ? GEN_IPADD : GEN_DNS, s);

    if (!sk_GENERAL_NAME_push(gens, gn)) {
        GENERAL_NAME_free(gn);
        goto cleanup;
    }

    rc = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0,
                           X509V3_ADD_DEFAULT) == 1 ? 0 : -1;

cleanup:

    GENERAL_NAMES_free(gens);

    return rc;
}


static int
bottle_mint_extensions(X509 *x, const bottle_mint_t *m,
    const bottle_mint_name_t *n)
{
    size_t            i;
    X509V3_CTX        ctx;
    X509_EXTENSION   *ext;
    struct {
        int           nid;
        const char   *value;
    }                 exts[] = {
        { NID_basic_constraints, "critical,CA:FALSE" },
        { NID_key_usage, m->key_usage },
        { NID_ext_key_usage, "serverAuth" },
        { NID_subject_key_identifier, "hash" },
    };

    X509V3_set_ctx(&ctx, m->ca->cert, x, NULL, NULL, 0);

    for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        ext = X509V3_EXT_conf_nid(NULL, &ctx, exts[i].nid, exts[i].value);
        if (ext == NULL) {
            return -1;
        }

        if (!X509_add_ext(x, ext, -1)) {
            X509_EXTENSION_free(ext);
            return -1;
        }

        X509_EXTENSION_free(ext);
    }

    if (X509_add1_ext_i2d(x, NID_authority_key_identifier, m->ca->akid, 0,
                          X509V3_ADD_DEFAULT) != 1)
    {
        return -1;
    }

    return bottle_mint_san(x, n);
}


static int
bottle_mint_sign(X509 *x, const bottle_ca_t *ca)
{
    const EVP_MD  *md;

    /* EdDSA signs the message itself: no digest may be named */
    md = (EVP_PKEY_is_a(ca->key, "ED25519") || EVP_PKEY_is_a(ca->key, "ED448"))
         ? NULL : EVP_sha256();

    return X509_sign(x, ca->key, md) > 0 ? 0 : -1;
}


static int
bottle_mint_leaf(X509 **out, time_t *out_not_after, bottle_mint_t *m,
    const bottle_mint_name_t *n, time_t now, char *err, size_t errlen)
{
    X509  *x;

    x = X509_new();

    if (x == NULL
        || !X509_set_version(x, X509_VERSION_3)
        || bottle_mint_serial(x) != 0
        || bottle_mint_names(x, m->ca, n) != 0
        || bottle_mint_validity(x, out_not_after, m, now) != 0
        || !X509_set_pubkey(x, m->key)
        || bottle_mint_extensions(x, m, n) != 0
        || bottle_mint_sign(x, m->ca) != 0)
    {
        bottle_mint_errf(err, errlen, "cannot mint a leaf for \"%s\": %s",
                         n->name, bottle_mint_ssl_reason());
        X509_free(x);
        return -1;
    }

    *out = x;

    return 0;
}


/* the cache */

static bottle_leaf_t *
bottle_mint_find(const bottle_mint_t *m, const bottle_mint_name_t *n,
    uint32_t hash)
{
    bottle_leaf_t  *e;

    for (e = m->buckets[hash & m->mask]; e != NULL; e = e->hnext) {
        if (e->hash == hash && e->is_ip == n->is_ip && e->len == n->len
            && memcmp(e->name, n->name, n->len) == 0)
        {
            return e;
        }
    }

    return NULL;
}


static void
bottle_mint_lru_unlink(bottle_mint_t *m, bottle_leaf_t *e)
{
    if (e->prev != NULL) {
        e->prev->next = e->next;
    } else {
        m->head = e->next;
    }

    if (e->next != NULL) {
        e->next->prev = e->prev;
    } else {
        m->tail = e->prev;
    }

    e->prev = NULL;
    e->next = NULL;
}


static void
bottle_mint_lru_push(bottle_mint_t *m, bottle_leaf_t *e)
{
    e->prev = NULL;
    e->next = m->head;

    if (m->head != NULL) {
        m->head->prev = e;
    } else {
        m->tail = e;
    }

    m->head = e;
}


static void
bottle_mint_hash_unlink(bottle_mint_t *m, bottle_leaf_t *e)
{
    bottle_leaf_t  **p;

    for (p = &m->buckets[e->hash & m->mask]; *p != NULL; p = &(*p)->hnext) {
        if (*p == e) {
            *p = e->hnext;
            break;
        }
    }

    e->hnext = NULL;
}


/* a free entry: a new one while there is room, else the least recent */

static bottle_leaf_t *
bottle_mint_slot(bottle_mint_t *m)
{
    bottle_leaf_t  *e;

    if (m->n < m->max) {
        e = calloc(1, sizeof(bottle_leaf_t));
        if (e != NULL) {
            m->n++;
        }

        return e;
    }

    e = m->tail;

    bottle_mint_lru_unlink(m, e);
    bottle_mint_hash_unlink(m, e);
    X509_free(e->cert);
    e->cert = NULL;

    return e;
}


static void
bottle_mint_touch(bottle_mint_t *m, bottle_leaf_t *e)
{
    if (m->head != e) {
        bottle_mint_lru_unlink(m, e);
        bottle_mint_lru_push(m, e);
    }
}


/* a leaf for a name not in the cache */

static int
bottle_mint_add(bottle_leaf_t **out, bottle_mint_t *m,
    const bottle_mint_name_t *n, uint32_t hash, time_t now, char *err,
    size_t errlen)
{
    X509           *x;
    time_t          not_after;
    bottle_leaf_t  *e;

    if (bottle_mint_leaf(&x, &not_after, m, n, now, err, errlen) != 0) {
        return -1;
    }

    e = bottle_mint_slot(m);
    if (e == NULL) {
        X509_free(x);
        return bottle_mint_errf(err, errlen, "cannot mint a leaf for \"%s\": "
                                "out of memory", n->name);
    }

    memcpy(e->name, n->name, n->len + 1);
    e->len = n->len;
    e->is_ip = n->is_ip;
    e->hash = hash;
    e->cert = x;
    e->not_after = not_after;

    e->hnext = m->buckets[hash & m->mask];
    m->buckets[hash & m->mask] = e;
    bottle_mint_lru_push(m, e);

    m->minted++;
    *out = e;

    return 0;
}


/* a new leaf for a cached name; the old one stays if minting fails */

static int
bottle_mint_renew(bottle_mint_t *m, bottle_leaf_t *e,
    const bottle_mint_name_t *n, time_t now, char *err, size_t errlen)
{
    X509    *x;
    time_t   not_after;

    if (bottle_mint_leaf(&x, &not_after, m, n, now, err, errlen) != 0) {
        return -1;
    }

    X509_free(e->cert);
    e->cert = x;
    e->not_after = not_after;

    m->minted++;

    return 0;
}


/*
 * Due for renewal near its end, unless it already ends with the CA: a new
 * leaf would end no later, and every handshake would mint one.
 */

static int
bottle_mint_due(const bottle_mint_t *m, const bottle_leaf_t *e, time_t now)
{
    return e->not_after - now <= m->renew_before
           && e->not_after < m->ca->not_after;
}


int
bottle_mint_get(X509 **out_leaf, EVP_PKEY **out_key,
    STACK_OF(X509) **out_chain, bottle_mint_t *m, const char *name,
    size_t len, int is_ip, char *err, size_t errlen)
{
    time_t               now;
    uint32_t             hash;
    bottle_leaf_t       *e;
    bottle_mint_name_t   n;

    if (bottle_mint_check_name(&n, name, len, is_ip, err, errlen) != 0) {
        return -1;
    }

    now = m->now();

    if (now >= m->ca->not_after) {
        return bottle_mint_errf(err, errlen, "cannot mint a leaf for \"%s\": "
                                "the CA certificate has expired", n.name);
    }

    hash = bottle_mint_hash(&n);
    e = bottle_mint_find(m, &n, hash);

    if (e == NULL) {
        if (bottle_mint_add(&e, m, &n, hash, now, err, errlen) != 0) {
            return -1;
        }

    } else if (bottle_mint_due(m, e, now)) {
        if (bottle_mint_renew(m, e, &n, now, err, errlen) != 0) {
            return -1;
        }
    }

    bottle_mint_touch(m, e);

    *out_leaf = e->cert;
    *out_key = m->key;
    *out_chain = m->ca->chain;

    return 0;
}
