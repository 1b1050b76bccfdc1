/*
 * The ClientHello check; see bottle_hello.h.
 *
 * A cursor walks the handshake bytes across record boundaries, checking
 * each record header as it reaches it, so one pass over what has arrived
 * checks the framing and the fields alike.  Each call starts again from
 * the first byte: the caller keeps no state but the buffer.
 */

#include "bottle_hello.h"


#define BOTTLE_HELLO_RECORD_HEADER     5
#define BOTTLE_HELLO_MESSAGE_HEADER    4
#define BOTTLE_HELLO_CLIENT_HELLO      1
#define BOTTLE_HELLO_HANDSHAKE         0x16
#define BOTTLE_HELLO_RANDOM           32
#define BOTTLE_HELLO_SESSION_ID_MAX   32


typedef struct {
    const unsigned char  *buf;
    size_t                n;        /* bytes in buf */
    size_t                pos;      /* offset of the next handshake byte */
    size_t                end;      /* where the current record ends */
    size_t                left;     /* bytes left in the message */
    size_t                need;     /* BOTTLE_HELLO_AGAIN: bytes needed */
    size_t                records;
} bottle_hello_cur_t;


static int bottle_hello_record(bottle_hello_cur_t *c);
static int bottle_hello_uint(bottle_hello_cur_t *c, size_t bytes,
    size_t *v);
static int bottle_hello_skip(bottle_hello_cur_t *c, size_t len);
static int bottle_hello_body(bottle_hello_cur_t *c);
static int bottle_hello_extensions(bottle_hello_cur_t *c);


int
bottle_hello_parse(bottle_hello_t *h, const unsigned char *buf, size_t n)
{
    int                 rc;
    size_t              type, len;
    bottle_hello_cur_t  c;

    c.buf = buf;
    c.n = n;
    c.pos = 0;
    c.end = 0;
    c.left = (size_t) -1;      /* the header says how long the message is */
    c.need = 0;
    c.records = 0;

    h->need = 0;
    h->len = 0;

    rc = bottle_hello_uint(&c, 1, &type);

    if (rc == BOTTLE_HELLO_OK && type != BOTTLE_HELLO_CLIENT_HELLO) {
        rc = BOTTLE_HELLO_E_TYPE;
    }

    if (rc == BOTTLE_HELLO_OK) {
        rc = bottle_hello_uint(&c, 3, &len);
    }

    if (rc == BOTTLE_HELLO_OK) {
        if (len > BOTTLE_HELLO_MAX_MESSAGE - BOTTLE_HELLO_MESSAGE_HEADER) {
            rc = BOTTLE_HELLO_E_TOO_LARGE;

        } else if (c.end - c.pos > len) {
            /* nothing may follow a ClientHello in its record */
            rc = BOTTLE_HELLO_E_TRAILING;

        } else {
            c.left = len;
            rc = bottle_hello_body(&c);
        }
    }

    if (rc == BOTTLE_HELLO_OK && c.pos != c.end) {
        rc = BOTTLE_HELLO_E_TRAILING;
    }

    if (rc == BOTTLE_HELLO_OK && c.end > n) {
        /* checked, but the last bytes are not in yet */
        c.need = c.end;
        rc = BOTTLE_HELLO_AGAIN;
    }

    h->records = c.records;

    if (rc == BOTTLE_HELLO_AGAIN) {
        h->need = c.need;

    } else if (rc == BOTTLE_HELLO_OK) {
        h->len = c.end;
    }

    return rc;
}


/* the next record header, at c->pos */

static int
bottle_hello_record(bottle_hello_cur_t *c)
{
    size_t                p, len;
    const unsigned char  *b;

    p = c->pos;
    b = c->buf;

    /* a record carries one byte at least, within the cap */
    if (p + BOTTLE_HELLO_RECORD_HEADER + 1 > BOTTLE_HELLO_MAX_WIRE) {
        return BOTTLE_HELLO_E_TOO_LARGE;
    }

    /* what has come of the header is checked at once */

    if (p < c->n && b[p] != BOTTLE_HELLO_HANDSHAKE) {
        return BOTTLE_HELLO_E_RECORD;
    }

    if (p + 1 < c->n && b[p + 1] != 3) {
        return BOTTLE_HELLO_E_VERSION;
    }

    if (p + 2 < c->n && b[p + 2] > 4) {
        return BOTTLE_HELLO_E_VERSION;
    }

    if (p + BOTTLE_HELLO_RECORD_HEADER > c->n) {
        c->need = p + BOTTLE_HELLO_RECORD_HEADER;
        return BOTTLE_HELLO_AGAIN;
    }

    len = (size_t) b[p + 3] << 8 | b[p + 4];

    /* RFC 8446 5.1: no empty handshake fragments */
    if (len == 0 || len > BOTTLE_HELLO_RECORD_MAX) {
        return BOTTLE_HELLO_E_RECORD_LEN;
    }

    /* the record that ends the ClientHello ends with it */
    if (len > c->left) {
        return BOTTLE_HELLO_E_TRAILING;
    }

    c->pos = p + BOTTLE_HELLO_RECORD_HEADER;
    c->end = c->pos + len;
    c->records++;

    if (c->end > BOTTLE_HELLO_MAX_WIRE) {
        return BOTTLE_HELLO_E_TOO_LARGE;
    }

    return BOTTLE_HELLO_OK;
}


/* a big-endian integer of 1 to 3 bytes, which may straddle records */

static int
bottle_hello_uint(bottle_hello_cur_t *c, size_t bytes, size_t *v)
{
    int  rc;

    *v = 0;

    while (bytes--) {
        if (c->left == 0) {
            return BOTTLE_HELLO_E_SHORT;
        }

        if (c->pos == c->end) {
            rc = bottle_hello_record(c);
            if (rc != BOTTLE_HELLO_OK) {
                return rc;
            }
        }

        if (c->pos >= c->n) {
            c->need = c->end;
            return BOTTLE_HELLO_AGAIN;
        }

        *v = *v << 8 | c->buf[c->pos++];
        c->left--;
    }

    return BOTTLE_HELLO_OK;
}


/*
 * Bytes whose value does not matter.  They need not have arrived: only the
 * record headers on the way are read.
 */

static int
bottle_hello_skip(bottle_hello_cur_t *c, size_t len)
{
    int     rc;
    size_t  part;

    if (len > c->left) {
        return BOTTLE_HELLO_E_SHORT;
    }

    while (len) {
        if (c->pos == c->end) {
            rc = bottle_hello_record(c);
            if (rc != BOTTLE_HELLO_OK) {
                return rc;
            }
        }

        part = c->end - c->pos;
        part = part < len ? part : len;

        c->pos += part;
        c->left -= part;
        len -= part;
    }

    return BOTTLE_HELLO_OK;
}


/* RFC 8446 4.1.2, which RFC 5246 7.4.1.2 agrees with */

static int
bottle_hello_body(bottle_hello_cur_t *c)
{
    int     rc;
    size_t  v;

    rc = bottle_hello_uint(c, 2, &v);               /* legacy_version */
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    if ((v >> 8) != 3 || (v & 0xff) > 4) {
        return BOTTLE_HELLO_E_LEGACY_VERSION;
    }

    rc = bottle_hello_skip(c, BOTTLE_HELLO_RANDOM);
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    rc = bottle_hello_uint(c, 1, &v);               /* legacy_session_id */
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    if (v > BOTTLE_HELLO_SESSION_ID_MAX || v > c->left) {
        return BOTTLE_HELLO_E_SESSION_ID;
    }

    rc = bottle_hello_skip(c, v);
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    rc = bottle_hello_uint(c, 2, &v);               /* cipher_suites */
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    if (v < 2 || v % 2 || v > c->left) {
        return BOTTLE_HELLO_E_CIPHERS;
    }

    rc = bottle_hello_skip(c, v);
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    rc = bottle_hello_uint(c, 1, &v);       /* legacy_compression_methods */
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    if (v < 1 || v > c->left) {
        return BOTTLE_HELLO_E_COMPRESSION;
    }

    rc = bottle_hello_skip(c, v);
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    /* a ClientHello without extensions ends here (RFC 5246 7.4.1.2) */

    if (c->left == 0) {
        return BOTTLE_HELLO_OK;
    }

    return bottle_hello_extensions(c);
}


/* the extensions block fills the rest of the message, and they fill it */

static int
bottle_hello_extensions(bottle_hello_cur_t *c)
{
    int     rc;
    size_t  v;

    if (c->left < 2) {
        return BOTTLE_HELLO_E_EXTENSIONS;
    }

    rc = bottle_hello_uint(c, 2, &v);
    if (rc != BOTTLE_HELLO_OK) {
        return rc;
    }

    if (v != c->left) {
        return BOTTLE_HELLO_E_EXTENSIONS;
    }

    while (c->left) {
        if (c->left < 4) {
            return BOTTLE_HELLO_E_EXTENSIONS;
        }

        rc = bottle_hello_uint(c, 2, &v);           /* extension_type */
        if (rc != BOTTLE_HELLO_OK) {
            return rc;
        }

        rc = bottle_hello_uint(c, 2, &v);           /* extension_data */
        if (rc != BOTTLE_HELLO_OK) {
            return rc;
        }

        if (v > c->left) {
            return BOTTLE_HELLO_E_EXTENSIONS;
        }

        rc = bottle_hello_skip(c, v);
        if (rc != BOTTLE_HELLO_OK) {
            return rc;
        }
    }

    return BOTTLE_HELLO_OK;
}


const char *
bottle_hello_strerror(int rc)
{
    switch (rc) {
    case BOTTLE_HELLO_OK:
        return "ok";
    case BOTTLE_HELLO_AGAIN:
        return "incomplete ClientHello";
    case BOTTLE_HELLO_E_RECORD:
        return "not a TLS handshake record";
    case BOTTLE_HELLO_E_VERSION:
        return "TLS record version is not 3.0 to 3.4";
    case BOTTLE_HELLO_E_RECORD_LEN:
        return "TLS record length is 0 or over 16384";
    case BOTTLE_HELLO_E_TYPE:
        return "the handshake message is not a ClientHello";
    case BOTTLE_HELLO_E_TOO_LARGE:
        return "ClientHello larger than the gateway accepts";
    case BOTTLE_HELLO_E_TRAILING:
        return "bytes follow the ClientHello in its record";
    case BOTTLE_HELLO_E_LEGACY_VERSION:
        return "ClientHello version is not 3.0 to 3.4";
    case BOTTLE_HELLO_E_SESSION_ID:
        return "ClientHello session id length is invalid";
    case BOTTLE_HELLO_E_CIPHERS:
        return "ClientHello cipher suites length is invalid";
    case BOTTLE_HELLO_E_COMPRESSION:
        return "ClientHello compression methods length is invalid";
    case BOTTLE_HELLO_E_EXTENSIONS:
        return "ClientHello extension lengths are inconsistent";
    case BOTTLE_HELLO_E_SHORT:
        return "ClientHello ends inside a field";
    }

    return "unknown error";
}
