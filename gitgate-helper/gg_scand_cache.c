/*
 * The resident scanner's policies (gg_scand_run.h): a bottle's parsed
 * policy and its compiled secrets, kept by the scanner under the SHA-256
 * of the exact bytes they were parsed from (with their kind, source and
 * bottle id).  A child that finds its bytes there borrows both (the
 * fork's copy); one that does not parses and compiles them itself, as the
 * hook always did, and offers the bytes to the scanner (a datagram), which
 * parses and compiles them the same way, between requests, for the
 * pushes after it.  A policy change is new bytes: a new key, never an old
 * entry.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "gg_scand_run.h"


/* policies kept; the bytes of one at most */
#define GG_SCAND_CACHE_MAX   16
#define GG_SCAND_POLICY_MAX  (128 * 1024)
#define GG_SCAND_KEY_LEN     32


typedef struct {
    unsigned char           key[GG_SCAND_KEY_LEN];
    bottle_policy_t        *policy;
    bottle_scan_secrets_t  *sec;
} gg_scand_entry_t;


static int gg_scand_key(unsigned char *key, const char *kind,
    const char *source, const char *id, const char *bytes, size_t len);
static int gg_scand_file(char **out, size_t *len, const char *path);
static gg_scand_entry_t *gg_scand_find(const unsigned char *key);
static gg_scand_entry_t *gg_scand_add(bottle_scan_db_t *db,
    const unsigned char *key, const char *kind, const char *source,
    const char *id, const char *bytes, size_t len);
static gg_scand_entry_t *gg_scand_insert(const unsigned char *key,
    bottle_policy_t *p, bottle_scan_secrets_t *sec);


static gg_scand_entry_t  gg_scand_cache[GG_SCAND_CACHE_MAX];
/* fetched once by the scanner: a child's implicit fetch (EVP_sha256())
 * would set up the provider again for every push */
static EVP_MD           *gg_scand_sha256;
static size_t            gg_scand_ncache, gg_scand_evict;
/* the scanner's end and a child's end of the offers' socket pair */
static int               gg_scand_offers[2] = { -1, -1 };
/* in a child: the rule databases, to compile what it offers for itself */
static bottle_scan_db_t *gg_scand_db;


int
gg_scand_cache_init(void)
{
    gg_scand_sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
    return socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
                      gg_scand_offers);
}


int
gg_scand_cache_fd(void)
{
    return gg_scand_offers[0];
}


void
gg_scand_cache_child(bottle_scan_db_t *db)
{
    close(gg_scand_offers[0]);
    gg_scand_offers[0] = -1;
    gg_scand_db = db;
}


int
gg_scand_policy(const char *kind, const char *source, const char *id,
    const char *bytes, size_t len, bottle_policy_t **policy)
{
    size_t             n, k;
    char              *msg;
    unsigned char      key[GG_SCAND_KEY_LEN];
    const char        *part[3];
    gg_scand_entry_t  *en;

    /* only in a scanner's child */
    if (gg_scand_offers[1] < 0 || gg_scand_offers[0] >= 0
        || len > GG_SCAND_POLICY_MAX
        || gg_scand_key(key, kind, source, id, bytes, len) != 0)
    {
        return -1;
    }

    en = gg_scand_find(key);
    if (en != NULL) {
        *policy = en->policy;
        return 0;
    }

    /* kind NUL source NUL id NUL bytes */
    part[0] = kind;
    part[1] = source;
    part[2] = id;
    n = len;
    for (k = 0; k < 3; k++) {
        n += strlen(part[k]) + 1;
    }
    msg = malloc(n);
    if (msg == NULL) {
        return -1;
    }
    for (k = 0, n = 0; k < 3; k++) {
        memcpy(msg + n, part[k], strlen(part[k]) + 1);
        n += strlen(part[k]) + 1;
    }
    memcpy(msg + n, bytes, len);
    (void) send(gg_scand_offers[1], msg, n + len, MSG_DONTWAIT);
    free(msg);

    /*
     * and kept here too, for a warm child's next pushes (gg_scand.c):
     * while there is room, so that no entry borrowed by this push is
     * evicted; else the caller's own parse, as before
     */
    if (gg_scand_db == NULL || gg_scand_ncache == GG_SCAND_CACHE_MAX) {
        return -1;
    }
    en = gg_scand_add(gg_scand_db, key, kind, source, id, bytes, len);
    if (en == NULL) {
        return -1;
    }
    *policy = en->policy;
    return 0;
}


bottle_scan_secrets_t *
gg_scand_secrets(const bottle_policy_t *policy)
{
    size_t  i;

    for (i = 0; policy && i < gg_scand_ncache; i++) {
        if (gg_scand_cache[i].policy == policy) {
            return gg_scand_cache[i].sec;
        }
    }
    return NULL;
}


int
gg_scand_policy_file(const char *path, const char *id,
    bottle_policy_t **policy)
{
    int      rc;
    char    *bytes;
    size_t   len;

    if (gg_scand_offers[1] < 0 || gg_scand_file(&bytes, &len, path) != 0) {
        return -1;
    }
    rc = gg_scand_policy("file", path, id, bytes, len, policy);
    free(bytes);
    return rc;
}


/* in the scanner: one offer read, parsed and compiled as the child would */

void
gg_scand_cache_offer(bottle_scan_db_t *db)
{
    char           *buf;
    size_t          n, len;
    ssize_t         k;
    unsigned char   key[GG_SCAND_KEY_LEN];
    const char     *kind, *source, *id, *bytes, *e;

    buf = malloc(GG_SCAND_POLICY_MAX + 1024);
    if (buf == NULL) {
        return;
    }

    k = recv(gg_scand_offers[0], buf, GG_SCAND_POLICY_MAX + 1024,
             MSG_DONTWAIT | MSG_TRUNC);
    if (k <= 0 || (size_t) k > GG_SCAND_POLICY_MAX + 1024) {
        free(buf);
        return;
    }
    n = (size_t) k;

    kind = buf;
    e = memchr(kind, '\0', n);
    source = e ? e + 1 : NULL;
    e = source ? memchr(source, '\0', n - (size_t) (source - buf)) : NULL;
    id = e ? e + 1 : NULL;
    e = id ? memchr(id, '\0', n - (size_t) (id - buf)) : NULL;
    if (e == NULL) {
        free(buf);
        return;
    }
    bytes = e + 1;
    len = n - (size_t) (bytes - buf);

    if (gg_scand_key(key, kind, source, id, bytes, len) == 0
        && gg_scand_find(key) == NULL)
    {
        (void) gg_scand_add(db, key, kind, source, id, bytes, len);
    }

    free(buf);
}


/*
 * A policy's bytes parsed ("store") or its file loaded ("file", its bytes
 * before and after the load the given ones), the bottle's secrets
 * compiled, kept under key: the entry, or NULL
 */

static gg_scand_entry_t *
gg_scand_add(bottle_scan_db_t *db, const unsigned char *key,
    const char *kind, const char *source, const char *id, const char *bytes,
    size_t len)
{
    int                     ok;
    char                   *again, err[512];
    size_t                  alen;
    const bottle_t         *b;
    gg_scand_entry_t       *en;
    bottle_policy_t        *p;
    bottle_scan_secrets_t  *sec;

    p = NULL;
    sec = NULL;
    again = NULL;
    en = NULL;

    if (strcmp(kind, "store") == 0) {
        ok = bottle_policy_parse(&p, bytes, len, source, err, sizeof(err))
             == 0;

    } else if (strcmp(kind, "file") == 0) {
        /* the file's bytes before and after its load: the offered ones */
        ok = gg_scand_file(&again, &alen, source) == 0 && alen == len
             && memcmp(again, bytes, len) == 0
             && bottle_policy_load(&p, source, err, sizeof(err)) == 0;
        free(again);
        again = NULL;
        ok = ok && gg_scand_file(&again, &alen, source) == 0 && alen == len
             && memcmp(again, bytes, len) == 0;

    } else {
        ok = 0;
    }

    b = ok ? bottle_policy_find_id(p, id, strlen(id)) : NULL;
    if (b == NULL
        || bottle_scan_secrets_for_git(&sec, db, b, err, sizeof(err)) != 0)
    {
        goto cleanup;
    }

    en = gg_scand_insert(key, p, sec);
    p = NULL;
    sec = NULL;

cleanup:

    if (sec) {
        bottle_scan_secrets_free(sec);
    }
    if (p) {
        bottle_policy_free(p);
    }
    free(again);
    return en;
}


static gg_scand_entry_t *
gg_scand_find(const unsigned char *key)
{
    size_t  i;

    for (i = 0; i < gg_scand_ncache; i++) {
        if (memcmp(gg_scand_cache[i].key, key, GG_SCAND_KEY_LEN) == 0) {
            return &gg_scand_cache[i];
        }
    }
    return NULL;
}


static gg_scand_entry_t *
gg_scand_insert(const unsigned char *key, bottle_policy_t *p,
    bottle_scan_secrets_t *sec)
{
    gg_scand_entry_t  *en;

    if (gg_scand_ncache < GG_SCAND_CACHE_MAX) {
        en = &gg_scand_cache[gg_scand_ncache++];

    } else {
        en = &gg_scand_cache[gg_scand_evict];
        gg_scand_evict = (gg_scand_evict + 1) % GG_SCAND_CACHE_MAX;
        bottle_scan_secrets_free(en->sec);
        bottle_policy_free(en->policy);
    }

    memcpy(en->key, key, GG_SCAND_KEY_LEN);
    en->policy = p;
    en->sec = sec;
    return en;
}


static int
gg_scand_key(unsigned char *key, const char *kind, const char *source,
    const char *id, const char *bytes, size_t len)
{
    int          ok;
    unsigned     n;
    EVP_MD_CTX  *md;

    md = EVP_MD_CTX_new();
    if (md == NULL) {
        return -1;
    }
    ok = EVP_DigestInit_ex(md, gg_scand_sha256 != NULL
                                   ? gg_scand_sha256 : EVP_sha256(), NULL)
         && EVP_DigestUpdate(md, kind, strlen(kind) + 1)
         && EVP_DigestUpdate(md, source, strlen(source) + 1)
         && EVP_DigestUpdate(md, id, strlen(id) + 1)
         && EVP_DigestUpdate(md, bytes, len)
         && EVP_DigestFinal_ex(md, key, &n)
         && n == GG_SCAND_KEY_LEN;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}


/* a regular file's bytes, at most GG_SCAND_POLICY_MAX */

static int
gg_scand_file(char **out, size_t *len, const char *path)
{
    int          fd;
    char        *buf;
    ssize_t      n;
    struct stat  st;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
        || st.st_size > GG_SCAND_POLICY_MAX)
    {
        close(fd);
        return -1;
    }
    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return -1;
    }
    n = read(fd, buf, (size_t) st.st_size + 1);
    close(fd);
    if (n != st.st_size) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = (size_t) n;
    return 0;
}
