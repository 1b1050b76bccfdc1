/*
 * The gateway CA that minted leaves are signed by: its certificate and key
 * read from PEM files and checked against each other, the chain served
 * after every leaf, and the authority key identifier put in every leaf.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "bottle_mint_int.h"


static int bottle_mint_no_passphrase(char *buf, int size, int rwflag,
    void *data);
static int bottle_asn1_to_time(time_t *out, const ASN1_TIME *t);


/* never prompt on the terminal for an encrypted key: refuse it */

static int
bottle_mint_no_passphrase(char *buf, int size, int rwflag, void *data)
{
    (void) buf;
    (void) size;
    (void) rwflag;

    *(int *) data = 1;

    return -1;
}


/* RFC 5280 time to time_t, without timegm(), which is not POSIX */

static int
bottle_asn1_to_time(time_t *out, const ASN1_TIME *t)
{
    int         days, secs, rc;
    ASN1_TIME  *epoch;

    epoch = ASN1_TIME_set(NULL, 0);
    if (epoch == NULL) {
        return -1;
    }

    rc = ASN1_TIME_diff(&days, &secs, epoch, t) ? 0 : -1;

    ASN1_TIME_free(epoch);

    if (rc == 0) {
        *out = (time_t) days * 86400 + secs;
    }

    return rc;
}


/* the CA */

static int
bottle_ca_read_cert(X509 **out, const char *file, char *err, size_t errlen)
{
    int    encrypted;
    FILE  *f;

    f = fopen(file, "r");
    if (f == NULL) {
        return bottle_mint_errf(err, errlen,
                                "cannot open CA certificate \"%s\": %s",
                                file, strerror(errno));
    }

    encrypted = 0;
    *out = PEM_read_X509(f, NULL, bottle_mint_no_passphrase, &encrypted);

    fclose(f);

    if (*out == NULL) {
        return bottle_mint_errf(err, errlen,
                                "cannot read CA certificate \"%s\": %s",
                                file, bottle_mint_ssl_reason());
    }

    return 0;
}


static int
bottle_ca_read_key(EVP_PKEY **out, const char *file, char *err,
    size_t errlen)
{
    int    encrypted;
    FILE  *f;

    f = fopen(file, "r");
    if (f == NULL) {
        return bottle_mint_errf(err, errlen, "cannot open CA key \"%s\": %s",
                                file, strerror(errno));
    }

    encrypted = 0;
    *out = PEM_read_PrivateKey(f, NULL, bottle_mint_no_passphrase,
                               &encrypted);

    fclose(f);

    if (*out == NULL && encrypted) {
        return bottle_mint_errf(err, errlen,
                                "cannot read CA key \"%s\": it is encrypted "
                                "and passphrases are not supported", file);
    }

    if (*out == NULL) {
        return bottle_mint_errf(err, errlen, "cannot read CA key \"%s\": %s",
                                file, bottle_mint_ssl_reason());
    }

    return 0;
}


static int
bottle_ca_check(bottle_ca_t *ca, const char *cert_file, const char *key_file,
    char *err, size_t errlen)
{
    uint32_t  ku;

    if (X509_check_private_key(ca->cert, ca->key) != 1) {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA key \"%s\": it does not match "
                                "certificate \"%s\"", key_file, cert_file);
    }

    /* the flags are valid only after X509_check_purpose() cached them */
    if (X509_check_purpose(ca->cert, -1, 0) != 1
        || !(X509_get_extension_flags(ca->cert) & EXFLAG_CA))
    {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA certificate \"%s\": it is not "
                                "a CA (no basicConstraints CA:TRUE)",
                                cert_file);
    }

    /* UINT32_MAX when there is no keyUsage, which allows any use */
    ku = X509_get_key_usage(ca->cert);
    if (!(ku & KU_KEY_CERT_SIGN)) {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA certificate \"%s\": its "
                                "keyUsage lacks keyCertSign", cert_file);
    }

    if (X509_cmp_current_time(X509_get0_notBefore(ca->cert)) >= 0) {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA certificate \"%s\": it is not "
                                "valid yet", cert_file);
    }

    if (X509_cmp_current_time(X509_get0_notAfter(ca->cert)) <= 0) {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA certificate \"%s\": it has "
                                "expired", cert_file);
    }

    if (bottle_asn1_to_time(&ca->not_after, X509_get0_notAfter(ca->cert))
        != 0)
    {
        return bottle_mint_errf(err, errlen,
                                "cannot use CA certificate \"%s\": invalid "
                                "notAfter", cert_file);
    }

    return 0;
}


/* all certificates of a PEM file, in file order */

static int
bottle_ca_read_chain(STACK_OF(X509) **out, const char *file, char *err,
    size_t errlen)
{
    int               rc, encrypted;
    X509             *x;
    FILE             *f;
    unsigned long     e;
    STACK_OF(X509)   *chain;

    f = fopen(file, "r");
    if (f == NULL) {
        return bottle_mint_errf(err, errlen, "cannot open chain \"%s\": %s",
                                file, strerror(errno));
    }

    rc = -1;
    encrypted = 0;

    chain = sk_X509_new_null();
    if (chain == NULL) {
        bottle_mint_errf(err, errlen, "cannot read chain \"%s\": out of "
                         "memory", file);
        goto cleanup;
    }

    for ( ;; ) {
        x = PEM_read_X509(f, NULL, bottle_mint_no_passphrase, &encrypted);
        if (x == NULL) {
            break;
        }

        if (!sk_X509_push(chain, x)) {
            X509_free(x);
            bottle_mint_errf(err, errlen, "cannot read chain \"%s\": out "
                             "of memory", file);
            goto cleanup;
        }
    }

    /* the end of the file reads as "no start line"; anything else is bad */
    e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) != ERR_LIB_PEM
        || ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
    {
        bottle_mint_errf(err, errlen, "cannot read chain \"%s\": "
                         "certificate %d: %s", file, sk_X509_num(chain) + 1,
                         bottle_mint_ssl_reason());
        goto cleanup;
    }

    ERR_clear_error();

    if (sk_X509_num(chain) == 0) {
        bottle_mint_errf(err, errlen, "cannot read chain \"%s\": no "
                         "certificates in it", file);
        goto cleanup;
    }

    *out = chain;
    chain = NULL;
    rc = 0;

cleanup:

    sk_X509_pop_free(chain, X509_free);
    fclose(f);

    return rc;
}


/* a chain that does not start with the CA would not verify */

static int
bottle_ca_check_chain(const bottle_ca_t *ca, const char *chain_file,
    const char *cert_file, char *err, size_t errlen)
{
    X509  *first;

    first = sk_X509_value(ca->chain, 0);

    if (X509_NAME_cmp(X509_get_subject_name(first),
                      X509_get_subject_name(ca->cert)) != 0
        || EVP_PKEY_eq(X509_get0_pubkey(first), X509_get0_pubkey(ca->cert))
           != 1)
    {
        return bottle_mint_errf(err, errlen,
                                "cannot use chain \"%s\": its first "
                                "certificate is not CA certificate \"%s\" "
                                "(subject or key differ)",
                                chain_file, cert_file);
    }

    return 0;
}


/* the CA certificate alone, for a CA loaded without a chain file */

static int
bottle_ca_self_chain(bottle_ca_t *ca)
{
    ca->chain = sk_X509_new_null();
    if (ca->chain == NULL) {
        return -1;
    }

    if (!sk_X509_push(ca->chain, ca->cert)) {
        return -1;
    }

    X509_up_ref(ca->cert);

    return 0;
}


/*
 * The leaves' authorityKeyIdentifier: the CA's subjectKeyIdentifier, or,
 * for a CA without one, the SHA-1 of its public key (RFC 5280 4.2.1.2
 * method 1, what OpenSSL's "hash" would have put there).
 */

static int
bottle_ca_akid(bottle_ca_t *ca)
{
    int                         pklen;
    unsigned int                mdlen;
    unsigned char               md[EVP_MAX_MD_SIZE];
    const unsigned char        *pk;
    const ASN1_OCTET_STRING    *ski;

    ca->akid = AUTHORITY_KEYID_new();
    if (ca->akid == NULL) {
        return -1;
    }

    ski = X509_get0_subject_key_id(ca->cert);
    if (ski != NULL) {
        ca->akid->keyid = ASN1_OCTET_STRING_dup(ski);
        return ca->akid->keyid != NULL ? 0 : -1;
    }

    if (!X509_PUBKEY_get0_param(NULL, &pk, &pklen, NULL,
                                X509_get_X509_PUBKEY(ca->cert))
        || !EVP_Digest(pk, pklen, md, &mdlen, EVP_sha1(), NULL))
    {
        return -1;
    }

    ca->akid->keyid = ASN1_OCTET_STRING_new();
    if (ca->akid->keyid == NULL) {
        return -1;
    }

    return ASN1_OCTET_STRING_set(ca->akid->keyid, md, mdlen) ? 0 : -1;
}


int
bottle_ca_load(bottle_ca_t **out, const char *cert_file,
    const char *key_file, const char *chain_file, char *err, size_t errlen)
{
    int           rc;
    bottle_ca_t  *ca;

    *out = NULL;

    ca = calloc(1, sizeof(bottle_ca_t));
    if (ca == NULL) {
        return bottle_mint_errf(err, errlen, "cannot load CA \"%s\": out of "
                                "memory", cert_file);
    }

    rc = -1;

    if (bottle_ca_read_cert(&ca->cert, cert_file, err, errlen) != 0
        || bottle_ca_read_key(&ca->key, key_file, err, errlen) != 0
        || bottle_ca_check(ca, cert_file, key_file, err, errlen) != 0)
    {
        goto cleanup;
    }

    if (chain_file != NULL) {
        if (bottle_ca_read_chain(&ca->chain, chain_file, err, errlen) != 0
            || bottle_ca_check_chain(ca, chain_file, cert_file, err, errlen)
               != 0)
        {
            goto cleanup;
        }

    } else if (bottle_ca_self_chain(ca) != 0) {
        bottle_mint_errf(err, errlen, "cannot load CA \"%s\": out of memory",
                         cert_file);
        goto cleanup;
    }

    if (bottle_ca_akid(ca) != 0) {
        bottle_mint_errf(err, errlen, "cannot use CA certificate \"%s\": "
                         "no key identifier: %s", cert_file,
                         bottle_mint_ssl_reason());
        goto cleanup;
    }

    *out = ca;
    ca = NULL;
    rc = 0;

cleanup:

    bottle_ca_free(ca);

    return rc;
}


void
bottle_ca_free(bottle_ca_t *ca)
{
    if (ca == NULL) {
        return;
    }

    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    sk_X509_pop_free(ca->chain, X509_free);
    AUTHORITY_KEYID_free(ca->akid);
    free(ca);
}
