/*
 * Leaf certificates for intercepted TLS, minted on demand and signed by
 * the gateway CA (docs/ca.md).
 *
 * One leaf key pair (ECDSA P-256) per minter, generated at creation and
 * used for every leaf, as mitmproxy does: minting is then one signature,
 * never a key generation, on the handshake path.  Leaves are cached by
 * name with LRU eviction, so a worker's memory stays bounded however many
 * hosts its agents reach.
 *
 * Errors are written into the caller's buffer (lowercase, failure first,
 * subject quoted) and the OpenSSL error queue is left empty, so that a
 * caller inside a TLS handshake does not see stale errors.  Not thread
 * safe: one minter per process (nginx worker).
 *
 * No nginx types: shared by the nginx module and the helper daemons.
 */

#ifndef BOTTLE_MINT_H
#define BOTTLE_MINT_H

#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>


/* limits of bottle_mint_create() and bottle_mint_get() */
#define BOTTLE_MINT_MAX_ENTRIES  1048576
#define BOTTLE_MINT_NAME_MAX     253        /* a DNS name, without NUL */


typedef struct bottle_ca_s    bottle_ca_t;      /* cert, key, chain */
typedef struct bottle_mint_s  bottle_mint_t;    /* leaf key and cache */


/*
 * Loads the CA certificate (PEM) and its private key (PEM, any type
 * OpenSSL reads: EC, RSA, PKCS#8; never an encrypted key, which would
 * prompt for a passphrase), and the optional chain file (PEM).
 *
 * Refuses a key that does not match the certificate, a certificate that
 * is not a CA (basicConstraints CA:TRUE, and keyCertSign if it has a
 * keyUsage) or is not valid now.
 *
 * The chain served after every leaf (bottle_mint_get's out_chain):
 *   - without chain_file: the CA certificate alone;
 *   - with chain_file: exactly the certificates of that file, in file
 *     order, and not the CA certificate itself.  The file must hold at
 *     least one certificate, and its first must carry the CA's subject
 *     and public key: the CA certificate, or a copy of it cross-signed by
 *     another CA.  For rotation (scripts/bottle-ca rotate) it is the new
 *     CA cross-signed by the old one, then the old CA, so that the
 *     gateway serves leaf -> new CA (issued by old) -> old CA.
 */
int bottle_ca_load(bottle_ca_t **out, const char *cert_file,
    const char *key_file, const char *chain_file, char *err, size_t errlen);

void bottle_ca_free(bottle_ca_t *ca);


/*
 * A minter for one CA, which must outlive it.  Leaves are valid for
 * validity_seconds (1 hour earlier for clock skew, and never after the
 * CA's notAfter); up to max_entries (1..BOTTLE_MINT_MAX_ENTRIES) are
 * cached.  A cached leaf is re-minted once it is within renew_before
 * seconds of its notAfter: by default a quarter of validity_seconds.
 */
int bottle_mint_create(bottle_mint_t **out, const bottle_ca_t *ca,
    size_t max_entries, long validity_seconds, char *err, size_t errlen);

void bottle_mint_free(bottle_mint_t *m);

/* 0..validity_seconds-1; -1 if out of range */
int bottle_mint_set_renew_before(bottle_mint_t *m, long seconds);

/* the clock minting and renewal use; NULL restores time(); for tests */
void bottle_mint_set_clock(bottle_mint_t *m, time_t (*now)(void));


/*
 * The leaf, its key and the chain to serve after it, for a name of len
 * bytes (need not be NUL-terminated):
 *   - is_ip == 0: a DNS name, lowercased by the caller, 1..253 bytes of
 *     [a-z0-9.-_]; the leaf has SAN DNS:name and CN=name (truncated to
 *     64 bytes);
 *   - is_ip != 0: an IPv4 or IPv6 literal as inet_pton() reads it,
 *     preferably in canonical form (the cache is keyed by the text); the
 *     leaf has SAN IP:addr and CN=name.
 *
 * The same X509 is returned for the same (name, is_ip) until it is due
 * for renewal; a leaf already ending with the CA's notAfter is not
 * renewed, and once the CA has expired nothing is minted.
 *
 * All three outputs are borrowed.  *out_key and *out_chain live as long
 * as the minter and the CA.  *out_leaf stays valid until a later
 * bottle_mint_get() evicts or renews it, or bottle_mint_free(): a caller
 * that keeps it across calls takes its own reference (X509_up_ref).
 */
int bottle_mint_get(X509 **out_leaf, EVP_PKEY **out_key,
    STACK_OF(X509) **out_chain, bottle_mint_t *m, const char *name,
    size_t len, int is_ip, char *err, size_t errlen);

/* leaves in the cache */
size_t bottle_mint_cached(const bottle_mint_t *m);

/* leaves minted by this minter so far, renewals included */
unsigned long bottle_mint_count(const bottle_mint_t *m);


#endif /* BOTTLE_MINT_H */
