/*
 * bottle_mint: loading a CA (EC and RSA, with and without a chain) and
 * what it refuses; minted leaves verified as a TLS client would; the
 * cache, its LRU eviction and renewal; refused names.
 */

#define _POSIX_C_SOURCE  200809L

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include "tap.h"
#include "bottle_mint.h"


#define DAY  86400L


static char    dir[] = "/tmp/mint_test.XXXXXX";
static char    errbuf[512];
static time_t  fake_now;


static time_t
fake_clock(void)
{
    return fake_now;
}


static const char *
path(const char *name)
{
    static char  buf[4][256];
    static int   i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);

    return buf[i];
}


static void
remove_dir(void)
{
    DIR            *d;
    struct dirent  *de;

    d = opendir(dir);
    if (d == NULL) {
        return;
    }

    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.') {
            unlink(path(de->d_name));
        }
    }

    closedir(d);
    rmdir(dir);
}


/* test fixtures: keys and certificates */

static void
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX       ctx;
    X509_EXTENSION  *ext;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL || !X509_add_ext(x, ext, -1)) {
        fprintf(stderr, "cannot add extension %s\n", value);
        exit(2);
    }

    X509_EXTENSION_free(ext);
}


/*
 * A certificate for key named cn, valid from now+from to now+to, signed
 * by issuer/ikey, or self-signed when issuer is NULL.
 */
static X509 *
make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey,
    int ca, long from, long to, int ski)
{
    X509         *x;
    X509_NAME    *name;
    static long   serial = 1;

    x = X509_new();
    X509_set_version(x, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);

    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               (const unsigned char *) cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509_time_adj_ex(X509_getm_notBefore(x), 0, from, NULL);
    X509_time_adj_ex(X509_getm_notAfter(x), 0, to, NULL);
    X509_set_pubkey(x, key);

    add_ext(x, issuer ? issuer : x, NID_basic_constraints,
            ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add_ext(x, issuer ? issuer : x, NID_key_usage,
            ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    if (ski) {
        add_ext(x, issuer ? issuer : x, NID_subject_key_identifier, "hash");
    }
    if (issuer) {
        add_ext(x, issuer, NID_authority_key_identifier, "keyid:always");
    }

    if (!X509_sign(x, ikey ? ikey : key, EVP_sha256())) {
        fprintf(stderr, "cannot sign %s\n", cn);
        exit(2);
    }

    return x;
}


static void
write_certs(const char *file, X509 *a, X509 *b)
{
    FILE  *f;

    f = fopen(file, "w");
    if (a) {
        PEM_write_X509(f, a);
    }
    if (b) {
        PEM_write_X509(f, b);
    }
    fclose(f);
}


static void
write_key(const char *file, EVP_PKEY *key, const char *passphrase)
{
    FILE  *f;

    f = fopen(file, "w");
    PEM_write_PrivateKey(f, key, passphrase ? EVP_aes_128_cbc() : NULL,
                         (unsigned char *) passphrase,
                         passphrase ? (int) strlen(passphrase) : 0,
                         NULL, NULL);
    fclose(f);
}


/* what a TLS client checks: chain to the trusted CA, purpose, name */

static int
verify(X509 *leaf, STACK_OF(X509) *untrusted, X509 *trusted,
    const char *host, const char *ip, time_t at)
{
    int                  rc;
    X509_STORE          *store;
    X509_STORE_CTX      *ctx;
    X509_VERIFY_PARAM   *param;

    store = X509_STORE_new();
    X509_STORE_add_cert(store, trusted);

    ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, untrusted);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);

    param = X509_STORE_CTX_get0_param(ctx);
    if (host) {
        X509_VERIFY_PARAM_set1_host(param, host, 0);
    }
    if (ip) {
        X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    }
    if (at) {
        X509_VERIFY_PARAM_set_time(param, at);
    }

    rc = X509_verify_cert(ctx);
    if (rc != 1) {
        printf("#   verify: %s\n", X509_verify_cert_error_string(
                                     X509_STORE_CTX_get_error(ctx)));
    }

    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    ERR_clear_error();

    return rc == 1;
}


/* inspecting a leaf */

static const char *
leaf_cn(X509 *x)
{
    static char  buf[256];

    buf[0] = '\0';
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
                              buf, sizeof(buf));

    return buf;
}


/* "DNS:name" or "IP:n" (n = address length) if the SAN is exactly one */

static const char *
leaf_san(X509 *x)
{
    static char      buf[300];
    GENERAL_NAME    *gn;
    GENERAL_NAMES   *gens;

    strcpy(buf, "(none)");

    gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    if (gens == NULL) {
        return buf;
    }

    if (sk_GENERAL_NAME_num(gens) != 1) {
        strcpy(buf, "(several)");

    } else {
        gn = sk_GENERAL_NAME_value(gens, 0);

        if (gn->type == GEN_DNS) {
            snprintf(buf, sizeof(buf), "DNS:%.*s",
                     ASN1_STRING_length(gn->d.dNSName),
                     (const char *) ASN1_STRING_get0_data(gn->d.dNSName));

        } else if (gn->type == GEN_IPADD) {
            snprintf(buf, sizeof(buf), "IP:%d",
                     ASN1_STRING_length(gn->d.iPAddress));
        }
    }

    GENERAL_NAMES_free(gens);

    return buf;
}


static time_t
to_time(const ASN1_TIME *t)
{
    int         days, secs;
    ASN1_TIME  *epoch;

    epoch = ASN1_TIME_set(NULL, 0);
    ASN1_TIME_diff(&days, &secs, epoch, t);
    ASN1_TIME_free(epoch);

    return (time_t) days * DAY + secs;
}


static int
ext_critical(X509 *x, int nid)
{
    int  i;

    i = X509_get_ext_by_NID(x, nid, -1);

    return i >= 0 ? X509_EXTENSION_get_critical(X509_get_ext(x, i)) : -1;
}


static int
mint(X509 **leaf, bottle_mint_t *m, const char *name, int is_ip)
{
    EVP_PKEY        *key;
    STACK_OF(X509)  *chain;

    return bottle_mint_get(leaf, &key, &chain, m, name, strlen(name), is_ip,
                           errbuf, sizeof(errbuf));
}


/* the tests */

static void
test_leaf(X509 *ca_cert, EVP_PKEY *ca_key)
{
    int              n;
    X509            *leaf, *again, *other;
    time_t           now;
    BIGNUM          *serial;
    EVP_PKEY        *key, *key2;
    bottle_ca_t     *ca;
    bottle_mint_t   *m;
    STACK_OF(X509)  *chain;

    write_certs(path("ec.crt"), ca_cert, NULL);
    write_key(path("ec.key"), ca_key, NULL);

    is_int(bottle_ca_load(&ca, path("ec.crt"), path("ec.key"), NULL,
                          errbuf, sizeof(errbuf)), 0, "EC CA loads");
    is_int(bottle_mint_create(&m, ca, 16, 30 * DAY, errbuf, sizeof(errbuf)),
           0, "minter created");

    now = time(NULL);
    is_int(bottle_mint_get(&leaf, &key, &chain, m, "api.example.com", 15, 0,
                           errbuf, sizeof(errbuf)), 0, "leaf minted");
    is_int(sk_X509_num(chain), 1, "chain without chain file: one cert");
    ok(X509_cmp(sk_X509_value(chain, 0), ca_cert) == 0,
       "chain without chain file: the CA cert");

    ok(verify(leaf, chain, ca_cert, "api.example.com", NULL, 0),
       "leaf verifies for api.example.com (SSL server purpose)");
    ok(!verify(leaf, chain, ca_cert, "other.example.com", NULL, 0),
       "leaf does not verify for another host");
    is_str(leaf_san(leaf), "DNS:api.example.com", "SAN is DNS:name");
    is_str(leaf_cn(leaf), "api.example.com", "CN is the name");
    ok(X509_NAME_cmp(X509_get_issuer_name(leaf),
                     X509_get_subject_name(ca_cert)) == 0,
       "issuer is the CA's subject");
    is_int(X509_check_private_key(leaf, key), 1, "key matches the leaf");
    ok(EVP_PKEY_is_a(key, "EC"), "leaf key is EC");
    is_int(X509_get_version(leaf), X509_VERSION_3, "version 3");

    serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
    ok(!BN_is_negative(serial) && BN_num_bytes(serial) == 16,
       "serial positive, 16 bytes");
    BN_free(serial);

    n = (int) (to_time(X509_get0_notBefore(leaf)) - (now - 3600));
    ok(n >= 0 && n <= 5, "notBefore is an hour ago (off by %d s)", n);
    n = (int) (to_time(X509_get0_notAfter(leaf)) - (now + 30 * DAY));
    ok(n >= 0 && n <= 5, "notAfter is now + validity (off by %d s)", n);
    ok(ASN1_TIME_compare(X509_get0_notAfter(leaf),
                            X509_get0_notAfter(ca_cert)) <= 0,
       "notAfter not after the CA's");

    is_int(ext_critical(leaf, NID_basic_constraints), 1,
           "basicConstraints critical");
    ok(!(X509_get_extension_flags(leaf) & EXFLAG_CA), "not a CA");
    is_int(ext_critical(leaf, NID_key_usage), 1, "keyUsage critical");
    is_int(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE,
           "keyUsage digitalSignature only (EC leaf key)");
    is_int(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER,
           "extendedKeyUsage serverAuth");
    ok(X509_get0_subject_key_id(leaf) != NULL, "subjectKeyIdentifier");
    ok(X509_get0_authority_key_id(leaf) != NULL
       && ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf),
                                X509_get0_subject_key_id(ca_cert)) == 0,
       "authorityKeyIdentifier is the CA's key id");
    is_int(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256,
           "signed ecdsa-with-SHA256");

    is_int(mint(&again, m, "api.example.com", 0), 0, "second get");
    ok(again == leaf, "second get: the same X509 (cached)");
    is_int(bottle_mint_count(m), 1, "one leaf minted");
    is_int(bottle_mint_cached(m), 1, "one leaf cached");

    bottle_mint_get(&other, &key2, &chain, m, "www.example.org", 15, 0,
                    errbuf, sizeof(errbuf));
    ok(other != leaf && X509_cmp(other, leaf) != 0,
       "another name: another leaf");
    ok(key2 == key && EVP_PKEY_eq(X509_get0_pubkey(other),
                                  X509_get0_pubkey(leaf)) == 1,
       "another name: the same key");
    is_str(leaf_san(other), "DNS:www.example.org", "its SAN");
    is_int(bottle_mint_count(m), 2, "two leaves minted");

    bottle_mint_free(m);
    bottle_ca_free(ca);
}


static void
test_ip(bottle_mint_t *m, X509 *ca_cert)
{
    X509            *leaf;
    EVP_PKEY        *key;
    STACK_OF(X509)  *chain;

    is_int(bottle_mint_get(&leaf, &key, &chain, m, "127.0.0.1", 9, 1,
                           errbuf, sizeof(errbuf)), 0, "IPv4 leaf minted");
    is_str(leaf_san(leaf), "IP:4", "IPv4 leaf: SAN IP, 4 bytes");
    is_str(leaf_cn(leaf), "127.0.0.1", "IPv4 leaf: CN");
    ok(verify(leaf, chain, ca_cert, NULL, "127.0.0.1", 0),
       "IPv4 leaf verifies for 127.0.0.1");
    ok(!verify(leaf, chain, ca_cert, NULL, "127.0.0.2", 0),
       "IPv4 leaf does not verify for 127.0.0.2");

    is_int(bottle_mint_get(&leaf, &key, &chain, m, "::1", 3, 1,
                           errbuf, sizeof(errbuf)), 0, "IPv6 leaf minted");
    is_str(leaf_san(leaf), "IP:16", "IPv6 leaf: SAN IP, 16 bytes");
    ok(verify(leaf, chain, ca_cert, NULL, "::1", 0),
       "IPv6 leaf verifies for ::1");
    ok(verify(leaf, chain, ca_cert, NULL, "0:0::1", 0),
       "IPv6 leaf verifies for ::1 spelled otherwise");

    is_int(mint(&leaf, m, "127.0.0.1", 0), 0,
           "\"127.0.0.1\" as a DNS name: allowed characters");
    is_str(leaf_san(leaf), "DNS:127.0.0.1", "a distinct (DNS) cache entry");
}


static void
test_names(bottle_mint_t *m)
{
    size_t           i;
    X509            *leaf;
    char             name[300];
    EVP_PKEY        *key;
    STACK_OF(X509)  *chain;
    const char   *bad[] = { "API.example.com", "a b", "a/b", "*.example.com",
                            "a:b", "ex\xc3\xa4mple.com", "a,DNS:evil" };
    const char   *bad_ip[] = { "1.2.3", "example.com", "::1%eth0", "1.2.3.4/8",
                               "[::1]", "" };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_int(mint(&leaf, m, bad[i], 0), -1, "refused: name \"%s\"", bad[i]);
    }

    ok(strstr(errbuf, "\"a,DNS:evil\"") && strstr(errbuf, "invalid character"),
       "the refusal quotes the name and says why: %s", errbuf);

    for (i = 0; i < sizeof(bad_ip) / sizeof(bad_ip[0]); i++) {
        is_int(mint(&leaf, m, bad_ip[i], 1), -1, "refused: IP \"%s\"",
               bad_ip[i]);
    }

    is_int(mint(&leaf, m, "", 0), -1, "refused: empty name");
    is_int(bottle_mint_get(&leaf, &key, &chain, m, "a\0b", 3, 0, errbuf,
                           sizeof(errbuf)), -1, "refused: name with a NUL");
    ok(strstr(errbuf, "\"a?b\"") != NULL, "NUL shown as '?': %s", errbuf);

    memset(name, 'a', sizeof(name));
    name[254] = '\0';
    is_int(mint(&leaf, m, name, 0), -1, "refused: 254 bytes");
    ok(strstr(errbuf, "longer than 253") && strlen(errbuf) < 200,
       "and the message is short: %s", errbuf);

    name[253] = '\0';
    is_int(mint(&leaf, m, name, 0), 0, "253 bytes allowed");
    is_int(strlen(leaf_cn(leaf)), 64, "CN truncated to 64 bytes");
    is_int(strlen(leaf_san(leaf)), 4 + 253, "SAN holds all 253 bytes");

    is_int(mint(&leaf, m, "under_score-1.example", 0), 0,
           "'_' and '-' allowed");
    ok(ERR_peek_error() == 0, "no OpenSSL errors left in the queue");
}


static void
test_lru(bottle_ca_t *ca)
{
    X509           *a, *b, *c, *x;
    bottle_mint_t  *m;

    is_int(bottle_mint_create(&m, ca, 2, DAY, errbuf, sizeof(errbuf)), 0,
           "minter with max_entries 2");

    mint(&a, m, "a.example", 0);
    mint(&b, m, "b.example", 0);
    X509_up_ref(a);
    X509_up_ref(b);

    mint(&x, m, "a.example", 0);
    ok(x == a, "a cached (and now the most recent)");

    mint(&c, m, "c.example", 0);
    X509_up_ref(c);
    is_int(bottle_mint_cached(m), 2, "third name: still 2 cached");
    is_int(bottle_mint_count(m), 3, "3 minted");

    mint(&x, m, "a.example", 0);
    ok(x == a, "a survived (it was recently used)");
    is_int(bottle_mint_count(m), 3, "no new mint for a");

    mint(&x, m, "b.example", 0);
    ok(x != b && X509_cmp(x, b) != 0, "b was evicted: re-minted");
    is_int(bottle_mint_count(m), 4, "4 minted");

    mint(&x, m, "a.example", 0);
    ok(x == a, "a still cached after b evicted c");
    mint(&x, m, "c.example", 0);
    ok(x != c && X509_cmp(x, c) != 0, "c was evicted: re-minted");
    is_int(bottle_mint_count(m), 5, "5 minted");
    is_int(bottle_mint_cached(m), 2, "2 cached");

    X509_free(a);
    X509_free(b);
    X509_free(c);
    bottle_mint_free(m);
}


static void
test_renewal(bottle_ca_t *ca, X509 *ca_cert)
{
    X509            *a, *x, *y;
    EVP_PKEY        *key;
    bottle_mint_t   *m;
    STACK_OF(X509)  *chain;

    is_int(bottle_mint_create(&m, ca, 4, 10, errbuf, sizeof(errbuf)), 0,
           "minter with 10 s validity");
    bottle_mint_set_clock(m, fake_clock);
    is_int(bottle_mint_set_renew_before(m, 10), -1,
           "renew_before must be less than validity");
    is_int(bottle_mint_set_renew_before(m, -1), -1,
           "renew_before must not be negative");
    is_int(bottle_mint_set_renew_before(m, 5), 0, "renew_before 5 s");

    fake_now = time(NULL);
    bottle_mint_get(&a, &key, &chain, m, "r.example", 9, 0, errbuf,
                    sizeof(errbuf));
    X509_up_ref(a);
    is_int(to_time(X509_get0_notAfter(a)), fake_now + 10,
           "notAfter is now + 10 s");

    fake_now += 4;
    mint(&x, m, "r.example", 0);
    ok(x == a, "6 s left: still cached");

    fake_now += 1;
    mint(&x, m, "r.example", 0);
    ok(x != a, "5 s left: re-minted");
    is_int(to_time(X509_get0_notAfter(x)), fake_now + 10,
           "the new leaf ends 10 s from the (fake) now");
    is_int(bottle_mint_count(m), 2, "2 minted");
    is_int(bottle_mint_cached(m), 1, "1 cached");
    ok(verify(x, chain, ca_cert, "r.example", NULL, fake_now),
       "renewed leaf verifies");

    fake_now += 20;
    mint(&y, m, "r.example", 0);
    ok(y != x, "expired leaf re-minted");
    is_int(bottle_mint_count(m), 3, "3 minted");

    X509_free(a);
    bottle_mint_free(m);
}


/* a leaf never outlives the CA, and is not renewed when it ends with it */

static void
test_ca_end(EVP_PKEY *ca_key)
{
    X509           *ca_cert, *a, *x;
    time_t          ca_end;
    bottle_ca_t    *ca;
    bottle_mint_t  *m;

    ca_cert = make_cert(ca_key, "Short CA", NULL, NULL, 1, -DAY, DAY, 1);
    ca_end = to_time(X509_get0_notAfter(ca_cert));
    write_certs(path("short.crt"), ca_cert, NULL);

    bottle_ca_load(&ca, path("short.crt"), path("ec.key"), NULL,
                   errbuf, sizeof(errbuf));
    bottle_mint_create(&m, ca, 4, 30 * DAY, errbuf, sizeof(errbuf));
    bottle_mint_set_clock(m, fake_clock);

    fake_now = time(NULL);
    mint(&a, m, "short.example", 0);
    is_int(to_time(X509_get0_notAfter(a)), ca_end,
           "leaf ends with the CA (validity 30 days, CA 1 day)");

    fake_now = ca_end - 10;
    mint(&x, m, "short.example", 0);
    ok(x == a, "due for renewal but ends with the CA: not re-minted");
    is_int(bottle_mint_count(m), 1, "1 minted");

    fake_now = ca_end;
    is_int(mint(&x, m, "short.example", 0), -1, "CA expired: refused");
    ok(strstr(errbuf, "expired") != NULL, "says so: %s", errbuf);

    bottle_mint_free(m);
    bottle_ca_free(ca);
    X509_free(ca_cert);
}


static void
test_rsa(void)
{
    X509           *ca_cert, *leaf;
    EVP_PKEY       *ca_key, *key;
    bottle_ca_t    *ca;
    bottle_mint_t  *m;
    STACK_OF(X509) *chain;

    ca_key = EVP_RSA_gen(2048);
    ca_cert = make_cert(ca_key, "RSA CA", NULL, NULL, 1, -DAY, 365 * DAY, 1);
    write_certs(path("rsa.crt"), ca_cert, NULL);
    write_key(path("rsa.key"), ca_key, NULL);

    is_int(bottle_ca_load(&ca, path("rsa.crt"), path("rsa.key"), NULL,
                          errbuf, sizeof(errbuf)), 0, "RSA CA loads");
    bottle_mint_create(&m, ca, 4, DAY, errbuf, sizeof(errbuf));
    is_int(bottle_mint_get(&leaf, &key, &chain, m, "rsa.example", 11, 0,
                           errbuf, sizeof(errbuf)), 0, "RSA CA: leaf minted");
    ok(verify(leaf, chain, ca_cert, "rsa.example", NULL, 0),
       "RSA CA: leaf verifies");
    is_int(X509_get_signature_nid(leaf), NID_sha256WithRSAEncryption,
           "RSA CA: signed sha256WithRSAEncryption");
    ok(EVP_PKEY_is_a(key, "EC"), "RSA CA: leaf key still EC");

    bottle_mint_free(m);
    bottle_ca_free(ca);
    X509_free(ca_cert);
    EVP_PKEY_free(ca_key);
}


/* a CA without subjectKeyIdentifier: the key id is computed */

static void
test_no_ski(EVP_PKEY *ca_key)
{
    X509           *ca_cert, *leaf;
    EVP_PKEY       *key;
    bottle_ca_t    *ca;
    bottle_mint_t  *m;
    STACK_OF(X509) *chain;

    ca_cert = make_cert(ca_key, "No SKI CA", NULL, NULL, 1, -DAY, DAY, 0);
    write_certs(path("noski.crt"), ca_cert, NULL);

    is_int(bottle_ca_load(&ca, path("noski.crt"), path("ec.key"), NULL,
                          errbuf, sizeof(errbuf)), 0, "CA without SKI loads");
    bottle_mint_create(&m, ca, 4, DAY, errbuf, sizeof(errbuf));
    bottle_mint_get(&leaf, &key, &chain, m, "noski.example", 13, 0,
                    errbuf, sizeof(errbuf));
    ok(X509_get0_authority_key_id(leaf) != NULL
       && ASN1_STRING_length(X509_get0_authority_key_id(leaf)) == 20,
       "CA without SKI: leaf has a 20-byte AKI key id");
    ok(verify(leaf, chain, ca_cert, "noski.example", NULL, 0),
       "CA without SKI: leaf verifies");

    bottle_mint_free(m);
    bottle_ca_free(ca);
    X509_free(ca_cert);
}


static void
test_refused_ca(EVP_PKEY *ca_key)
{
    X509          *x;
    EVP_PKEY      *other;
    bottle_ca_t   *ca;

    other = EVP_EC_gen("P-256");
    write_key(path("other.key"), other, NULL);

    is_int(bottle_ca_load(&ca, path("ec.crt"), path("other.key"), NULL,
                          errbuf, sizeof(errbuf)), -1,
           "mismatched key refused");
    ok(strstr(errbuf, path("other.key")) && strstr(errbuf, "does not match"),
       "message names the key file: %s", errbuf);
    ok(ca == NULL, "*out NULL on failure");

    x = make_cert(other, "Not a CA", NULL, NULL, 0, -DAY, DAY, 1);
    write_certs(path("leaf.crt"), x, NULL);
    X509_free(x);
    is_int(bottle_ca_load(&ca, path("leaf.crt"), path("other.key"), NULL,
                          errbuf, sizeof(errbuf)), -1, "non-CA cert refused");
    ok(strstr(errbuf, "not a CA") != NULL, "says so: %s", errbuf);

    x = make_cert(ca_key, "Old CA", NULL, NULL, 1, -2 * DAY, -DAY, 1);
    write_certs(path("expired.crt"), x, NULL);
    X509_free(x);
    is_int(bottle_ca_load(&ca, path("expired.crt"), path("ec.key"), NULL,
                          errbuf, sizeof(errbuf)), -1, "expired CA refused");
    ok(strstr(errbuf, "expired") != NULL, "says so: %s", errbuf);

    x = make_cert(ca_key, "Future CA", NULL, NULL, 1, DAY, 2 * DAY, 1);
    write_certs(path("future.crt"), x, NULL);
    X509_free(x);
    is_int(bottle_ca_load(&ca, path("future.crt"), path("ec.key"), NULL,
                          errbuf, sizeof(errbuf)), -1,
           "not yet valid CA refused");

    is_int(bottle_ca_load(&ca, path("missing.crt"), path("ec.key"), NULL,
                          errbuf, sizeof(errbuf)), -1, "missing cert refused");
    ok(strstr(errbuf, "cannot open CA certificate")
       && strstr(errbuf, "missing.crt"), "names it: %s", errbuf);

    is_int(bottle_ca_load(&ca, path("ec.crt"), path("ec.crt"), NULL,
                          errbuf, sizeof(errbuf)), -1, "cert as key refused");
    ok(strncmp(errbuf, "cannot read CA key \"", 20) == 0, "%s", errbuf);

    write_key(path("enc.key"), ca_key, "secret");
    is_int(bottle_ca_load(&ca, path("ec.crt"), path("enc.key"), NULL,
                          errbuf, sizeof(errbuf)), -1,
           "encrypted key refused, without a prompt");
    ok(strstr(errbuf, "encrypted") != NULL, "says so: %s", errbuf);
    ok(ERR_peek_error() == 0, "no OpenSSL errors left in the queue");

    EVP_PKEY_free(other);
}


/*
 * Rotation: leaves signed by the new key, served with the new CA cross-
 * signed by the old one and the old CA, verify for clients trusting
 * either.
 */
static void
test_chain(EVP_PKEY *old_key, X509 *old_cert)
{
    X509            *new_cert, *cross, *leaf;
    EVP_PKEY        *new_key, *key;
    bottle_ca_t     *ca;
    bottle_mint_t   *m;
    STACK_OF(X509)  *chain;

    new_key = EVP_EC_gen("P-256");
    new_cert = make_cert(new_key, "New CA", NULL, NULL, 1, -DAY, 365 * DAY, 1);
    cross = make_cert(new_key, "New CA", old_cert, old_key, 1, -DAY,
                      365 * DAY, 1);
    write_certs(path("new.crt"), new_cert, NULL);
    write_key(path("new.key"), new_key, NULL);
    write_certs(path("chain.pem"), cross, old_cert);

    is_int(bottle_ca_load(&ca, path("new.crt"), path("new.key"),
                          path("chain.pem"), errbuf, sizeof(errbuf)), 0,
           "CA with a chain file loads");
    bottle_mint_create(&m, ca, 4, DAY, errbuf, sizeof(errbuf));
    bottle_mint_get(&leaf, &key, &chain, m, "rot.example", 11, 0,
                    errbuf, sizeof(errbuf));

    is_int(sk_X509_num(chain), 2, "chain: the chain file's 2 certs");
    ok(X509_cmp(sk_X509_value(chain, 0), cross) == 0,
       "chain[0]: the cross-signed new CA (file order)");
    ok(X509_cmp(sk_X509_value(chain, 1), old_cert) == 0,
       "chain[1]: the old CA");
    ok(X509_NAME_cmp(X509_get_issuer_name(leaf),
                     X509_get_subject_name(new_cert)) == 0,
       "leaf issued by the new CA");
    ok(verify(leaf, chain, old_cert, "rot.example", NULL, 0),
       "a client trusting the old CA verifies the leaf");
    ok(verify(leaf, chain, new_cert, "rot.example", NULL, 0),
       "a client trusting the new CA verifies the leaf");

    bottle_mint_free(m);
    bottle_ca_free(ca);

    write_certs(path("wrong.pem"), old_cert, NULL);
    is_int(bottle_ca_load(&ca, path("new.crt"), path("new.key"),
                          path("wrong.pem"), errbuf, sizeof(errbuf)), -1,
           "chain not starting with the CA refused");
    ok(strstr(errbuf, "wrong.pem") != NULL, "names the chain: %s", errbuf);

    write_certs(path("empty.pem"), NULL, NULL);
    is_int(bottle_ca_load(&ca, path("new.crt"), path("new.key"),
                          path("empty.pem"), errbuf, sizeof(errbuf)), -1,
           "empty chain file refused");
    ok(strstr(errbuf, "no certificates") != NULL, "says so: %s", errbuf);

    is_int(bottle_ca_load(&ca, path("new.crt"), path("new.key"),
                          path("nochain.pem"), errbuf, sizeof(errbuf)), -1,
           "missing chain file refused");

    X509_free(new_cert);
    X509_free(cross);
    EVP_PKEY_free(new_key);
}


static void
test_create(bottle_ca_t *ca)
{
    bottle_mint_t  *m;

    is_int(bottle_mint_create(&m, ca, 0, DAY, errbuf, sizeof(errbuf)), -1,
           "max_entries 0 refused");
    is_int(bottle_mint_create(&m, ca, BOTTLE_MINT_MAX_ENTRIES + 1, DAY,
                              errbuf, sizeof(errbuf)), -1,
           "max_entries too large refused");
    is_int(bottle_mint_create(&m, ca, 1, 0, errbuf, sizeof(errbuf)), -1,
           "validity 0 refused");
    ok(m == NULL, "*out NULL on failure");
}


int
main(void)
{
    X509           *ca_cert;
    EVP_PKEY       *ca_key;
    bottle_ca_t    *ca;
    bottle_mint_t  *m;

    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }

    ca_key = EVP_EC_gen("P-256");
    ca_cert = make_cert(ca_key, "Test CA", NULL, NULL, 1, -DAY, 365 * DAY, 1);

    test_leaf(ca_cert, ca_key);

    bottle_ca_load(&ca, path("ec.crt"), path("ec.key"), NULL, errbuf,
                   sizeof(errbuf));
    bottle_mint_create(&m, ca, 64, DAY, errbuf, sizeof(errbuf));
    test_ip(m, ca_cert);
    test_names(m);
    bottle_mint_free(m);

    test_lru(ca);
    test_renewal(ca, ca_cert);
    test_create(ca);
    bottle_ca_free(ca);

    test_ca_end(ca_key);
    test_rsa();
    test_no_ski(ca_key);
    test_refused_ca(ca_key);
    test_chain(ca_key, ca_cert);

    X509_free(ca_cert);
    EVP_PKEY_free(ca_key);

    remove_dir();

    return done_testing();
}
