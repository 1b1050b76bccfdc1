/*
 * Private to the minter (bottle_mint*.c): the CA, which bottle_mint_ca.c
 * loads and the minter signs with, and the error helpers both write their
 * messages with.  Not an interface: users include bottle_mint.h.
 */

#ifndef BOTTLE_MINT_INT_H
#define BOTTLE_MINT_INT_H

#include <time.h>

#include <openssl/x509v3.h>

#include "bottle_mint.h"


struct bottle_ca_s {
    X509               *cert;
    EVP_PKEY           *key;
    STACK_OF(X509)     *chain;      /* served after every leaf */
    AUTHORITY_KEYID    *akid;       /* put in every leaf */
    time_t              not_after;
};


/* errors (bottle_mint.c): the message into err, the OpenSSL queue emptied */
int bottle_mint_errf(char *err, size_t errlen, const char *fmt, ...);
const char *bottle_mint_ssl_reason(void);


#endif /* BOTTLE_MINT_INT_H */
