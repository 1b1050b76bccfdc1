/*
 * Strict check of the TLS ClientHello an agent sends into a tunnel, before
 * the gateway relays a byte of it.  After "200 Connection established" only
 * TLS may pass; a record header alone proves nothing (anything can follow
 * it), so the whole ClientHello is read and every length in it must agree:
 * the records (RFC 8446 5.1), the handshake message (4) and the ClientHello
 * body (4.1.2), down to each extension.
 *
 * The ClientHello may be split over several handshake records, as TLS
 * allows; the record that ends it must end with it.  No nginx types and no
 * allocation: the caller re-runs the check on the grown buffer.
 */

#ifndef BOTTLE_HELLO_H
#define BOTTLE_HELLO_H

#include <stddef.h>


#define BOTTLE_HELLO_OK                0
/* incomplete: call again with at least h->need bytes */
#define BOTTLE_HELLO_AGAIN             1

#define BOTTLE_HELLO_E_RECORD         -1   /* not a handshake record */
#define BOTTLE_HELLO_E_VERSION        -2   /* record version not 3.x */
#define BOTTLE_HELLO_E_RECORD_LEN     -3   /* record empty or over 2^14 */
#define BOTTLE_HELLO_E_TYPE           -4   /* not a client_hello message */
#define BOTTLE_HELLO_E_TOO_LARGE      -5   /* over BOTTLE_HELLO_MAX_* */
#define BOTTLE_HELLO_E_TRAILING       -6   /* its record goes on after it */
#define BOTTLE_HELLO_E_LEGACY_VERSION -7
#define BOTTLE_HELLO_E_SESSION_ID     -8
#define BOTTLE_HELLO_E_CIPHERS        -9
#define BOTTLE_HELLO_E_COMPRESSION   -10
#define BOTTLE_HELLO_E_EXTENSIONS    -11
#define BOTTLE_HELLO_E_SHORT         -12   /* the message ends in a field */

#define BOTTLE_HELLO_E_MIN           -12

/* the largest record payload a TLS client may send (RFC 8446 5.1) */
#define BOTTLE_HELLO_RECORD_MAX    16384

/* the ClientHello message, its 4-byte header included: one full record */
#define BOTTLE_HELLO_MAX_MESSAGE   16384

/* the records that carry it, their headers included: room for a full
 * record and a few hundred more record headers of a split ClientHello */
#define BOTTLE_HELLO_MAX_WIRE      18432


typedef struct {
    /* BOTTLE_HELLO_AGAIN: the bytes needed in all before it can say more
     * (more than it was given, at most BOTTLE_HELLO_MAX_WIRE) */
    size_t   need;
    /* BOTTLE_HELLO_OK: the bytes of the records that carry the ClientHello;
     * what follows them is not looked at */
    size_t   len;
    /* records seen so far */
    size_t   records;
} bottle_hello_t;


/*
 * Checks the n bytes at buf, which begin with the first record.  Errors are
 * reported as soon as the bytes that make them are in, so a stream that is
 * no TLS is refused without waiting for the rest of it.
 */
int bottle_hello_parse(bottle_hello_t *h, const unsigned char *buf, size_t n);

const char *bottle_hello_strerror(int rc);


#endif /* BOTTLE_HELLO_H */
