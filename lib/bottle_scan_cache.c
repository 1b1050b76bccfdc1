/*
 * The compiled rule databases kept in a directory between processes
 * (bottle_scan_db_create_cached()): a hook process that scans one push
 * would otherwise compile them each time, most of its start-up.
 *
 * A file per database: <dir>/scan-<name>-<key>.hsdb, key the SHA-256 of
 * the vectorscan version and of every pattern, flag and id compiled (a
 * rule table that changes names another file).  Its bytes: a magic, the
 * SHA-256 of the rest, then hs_serialize_database()'s.  Anything that does
 * not check (missing, short, another digest, another platform's database
 * that hs_deserialize_database() refuses) is compiled again and the file
 * written anew (a temporary file renamed over it).  The directory is
 * trusted as the program is: its owner's alone.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "bottle_scan_int.h"


#define CACHE_MAGIC     "bottle-hsdb-1\n"
#define CACHE_MAGIC_LEN (sizeof(CACHE_MAGIC) - 1)
#define CACHE_HDR       (CACHE_MAGIC_LEN + SHA256_DIGEST_LENGTH)
/* no database of the rule table comes near it */
#define CACHE_MAX       (256 * 1024 * 1024)


static void
cache_path(char *path, size_t len, const char *dir, const char *name,
    const char **pats, const unsigned *flags, const unsigned *ids, size_t n,
    unsigned mode)
{
    size_t          i;
    char            hex[2 * SHA256_DIGEST_LENGTH + 1];
    unsigned char   md[SHA256_DIGEST_LENGTH];
    EVP_MD_CTX     *c;

    memset(md, 0, sizeof(md));
    c = EVP_MD_CTX_new();
    if (c == NULL || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        path[0] = '\0';
        return;
    }
    EVP_DigestUpdate(c, hs_version(), strlen(hs_version()) + 1);
    EVP_DigestUpdate(c, &mode, sizeof(mode));
    EVP_DigestUpdate(c, &n, sizeof(n));
    for (i = 0; i < n; i++) {
        EVP_DigestUpdate(c, pats[i], strlen(pats[i]) + 1);
        EVP_DigestUpdate(c, &flags[i], sizeof(flags[i]));
        EVP_DigestUpdate(c, &ids[i], sizeof(ids[i]));
    }
    EVP_DigestFinal_ex(c, md, NULL);
    EVP_MD_CTX_free(c);

    for (i = 0; i < 16; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    snprintf(path, len, "%s/scan-%s-%s.hsdb", dir, name, hex);
}


/* the SHA-256 of the file's name (its key) and of the database's bytes:
 * a database under another key does not check */
static int
cache_digest(unsigned char *md, const char *path, const char *bytes,
    size_t len)
{
    int          ok;
    const char  *base;
    EVP_MD_CTX  *c;

    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    c = EVP_MD_CTX_new();
    ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1
         && EVP_DigestUpdate(c, base, strlen(base) + 1) == 1
         && EVP_DigestUpdate(c, bytes, len) == 1
         && EVP_DigestFinal_ex(c, md, NULL) == 1;
    EVP_MD_CTX_free(c);
    return ok ? 0 : -1;
}


static int
cache_load(hs_database_t **out, const char *path)
{
    int             fd, rc;
    char           *buf;
    size_t          got;
    ssize_t         k;
    struct stat     st;
    unsigned char   md[SHA256_DIGEST_LENGTH];

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    rc = -1;
    buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
        || st.st_size <= (off_t) CACHE_HDR || st.st_size > CACHE_MAX)
    {
        goto done;
    }
    buf = malloc((size_t) st.st_size);
    if (buf == NULL) {
        goto done;
    }
    for (got = 0; got < (size_t) st.st_size; got += (size_t) k) {
        k = read(fd, buf + got, (size_t) st.st_size - got);
        if (k <= 0) {
            goto done;
        }
    }
    if (memcmp(buf, CACHE_MAGIC, CACHE_MAGIC_LEN) != 0) {
        goto done;
    }
    if (cache_digest(md, path, buf + CACHE_HDR, got - CACHE_HDR) != 0
        || memcmp(md, buf + CACHE_MAGIC_LEN, sizeof(md)) != 0
        || hs_deserialize_database(buf + CACHE_HDR, got - CACHE_HDR, out)
           != HS_SUCCESS)
    {
        *out = NULL;
        goto done;
    }
    rc = 0;

done:

    free(buf);
    close(fd);
    return rc;
}


/* best effort: a directory that cannot take it only costs the next
 * process the compile */
static void
cache_store(const hs_database_t *db, const char *path)
{
    int             fd, ok;
    char           *bytes, tmp[4096 + 64];
    size_t          len;
    unsigned char   md[SHA256_DIGEST_LENGTH];

    if (hs_serialize_database(db, &bytes, &len) != HS_SUCCESS) {
        return;
    }
    if (cache_digest(md, path, bytes, len) != 0) {
        free(bytes);
        return;
    }
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long) getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0) {
        free(bytes);
        return;
    }
    ok = write(fd, CACHE_MAGIC, CACHE_MAGIC_LEN) == (ssize_t) CACHE_MAGIC_LEN
         && write(fd, md, sizeof(md)) == (ssize_t) sizeof(md)
         && write(fd, bytes, len) == (ssize_t) len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        (void) unlink(tmp);
    }
    free(bytes);
}


int
bottle_scan_cache_compile(hs_database_t **out, const char *dir,
    const char *name, const char **pats, const unsigned *flags,
    const unsigned *ids, size_t n, unsigned mode, hs_compile_error_t **ce)
{
    char  path[4096];

    *out = NULL;
    *ce = NULL;

    if (dir != NULL && strlen(dir) < 3000) {
        cache_path(path, sizeof(path), dir, name, pats, flags, ids, n, mode);
        if (path[0] != '\0' && cache_load(out, path) == 0) {
            return HS_SUCCESS;
        }
    }

    if (hs_compile_multi(pats, flags, ids, (unsigned) n, mode, NULL, out, ce)
        != HS_SUCCESS)
    {
        *out = NULL;
        return HS_COMPILER_ERROR;
    }

    if (dir != NULL && strlen(dir) < 3000 && path[0] != '\0') {
        cache_store(*out, path);
    }
    return HS_SUCCESS;
}
