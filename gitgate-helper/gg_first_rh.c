/*
 * The first clone's transport (gg_first_int.h): the forge's smart HTTP,
 * protocol v2 (each request a POST, each answer ending with a 0002
 * response-end as git's stateless-connect gives it), through libcurl in
 * this process; and the small helpers gg_first.c shares with it.
 */

#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gg_gate.h"
#include "gg_pkt.h"
#include "gg_first_int.h"


static int gg_ls_refs_send(gg_rh_t *rh, int peel, char *err, size_t errlen);
static int gg_ls_refs_next(gg_rh_t *rh, const char **oid,
    const char **peeled, const char **name, size_t *nlen, char *err,
    size_t errlen);


/* an ls-refs of the forge's heads and tags over rh, peeled tags too with
 * peel: 0, or -1 and err */

static int
gg_ls_refs_send(gg_rh_t *rh, int peel, char *err, size_t errlen)
{
    int  rc;

    static const char  with_peel[] = "0014command=ls-refs\n" "0001"
                                     "0009peel\n"
                                     "001bref-prefix refs/heads/\n"
                                     "001aref-prefix refs/tags/\n" "0000";
    static const char  without[] = "0014command=ls-refs\n" "0001"
                                   "001bref-prefix refs/heads/\n"
                                   "001aref-prefix refs/tags/\n" "0000";

    rc = peel ? gg_rh_send(rh, with_peel, sizeof(with_peel) - 1)
              : gg_rh_send(rh, without, sizeof(without) - 1);

    if (rc != 0) {
        snprintf(err, errlen, "failure 'ls-refs': the forge's transport "
                 "went away");
    }

    return rc;
}


/*
 * The answer's next line the gate would serve that names an object: 1
 * and its oid, peeled (or NULL) and name, valid until the next call; 0 at
 * the answer's end; -1 and err
 */

static int
gg_ls_refs_next(gg_rh_t *rh, const char **oid, const char **peeled,
    const char **name, size_t *nlen, char *err, size_t errlen)
{
    int          type, keep;
    size_t       dlen, rawlen;
    const char  *d, *raw, *e;

    for ( ;; ) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            snprintf(err, errlen, "failure 'ls-refs': the forge's answer "
                     "is cut short or malformed");
            return -1;
        }

        if (type == GG_PKT_END) {
            return 0;
        }

        if (type != GG_PKT_DATA) {
            continue;
        }

        keep = gg_ls_refs_line(d, dlen, oid, peeled);
        if (keep < 0) {
            snprintf(err, errlen, "failure 'ls-refs': a malformed line "
                     "from the forge");
            return -1;
        }

        if (keep == 0 || *oid == NULL) {
            continue;
        }

        /* "<oid> <name>[ <attribute>...][\n]" */
        *name = d + GG_PKT_OID_HEX + 1;
        *nlen = dlen - GG_PKT_OID_HEX - 1;
        e = memchr(*name, ' ', *nlen);
        if (e == NULL) {
            e = memchr(*name, '\n', *nlen);
        }
        if (e) {
            *nlen = (size_t) (e - *name);
        }

        return 1;
    }
}


/* the forge's heads and tags (tips and peeled tags), sorted */

int
gg_allowed(gg_rh_t *rh, char **oids, size_t *n, char *err, size_t errlen)
{
    int          rc;
    char        *p;
    size_t       size, nlen;
    const char  *oid, *peeled, *name;

    *oids = NULL;
    *n = 0;
    size = 0;

    if (gg_ls_refs_send(rh, 1, err, errlen) != 0) {
        return -1;
    }

    while ((rc = gg_ls_refs_next(rh, &oid, &peeled, &name, &nlen, err,
                                 errlen)) == 1)
    {
        if (*n + 2 > 2 * GG_FIRST_REFS_MAX) {
            snprintf(err, errlen, "failure 'ls-refs': too many refs from "
                     "the forge");
            return -1;
        }

        if (*n + 2 > size) {
            size = size * 2 + 64;
            p = realloc(*oids, size * GG_PKT_OID_HEX);
            if (p == NULL) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            *oids = p;
        }

        memcpy(*oids + (*n)++ * GG_PKT_OID_HEX, oid, GG_PKT_OID_HEX);
        if (peeled) {
            memcpy(*oids + (*n)++ * GG_PKT_OID_HEX, peeled, GG_PKT_OID_HEX);
        }
    }

    if (rc < 0) {
        return -1;
    }

    if (*n) {
        qsort(*oids, *n, GG_PKT_OID_HEX, gg_first_oid_cmp);
    }

    return 0;
}


/*
 * The forge's branches and tags as `git ls-remote --heads --tags` prints
 * them ("<oid>\t<ref>\n", no peeled lines), into out (NUL-terminated; a
 * full out is cut short there: the caller then takes it as changed), over
 * a connection of its own: 0, or -1 and err
 */

int
gg_forge_refs(gg_ctx_t *ctx, char *out, size_t size, char *err,
    size_t errlen)
{
    int          rc;
    size_t       len, nlen;
    gg_rh_t     *rh;
    const char  *oid, *peeled, *name;

    rh = malloc(sizeof(*rh));
    if (rh == NULL || size == 0) {
        free(rh);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (gg_rh_open(ctx, rh, err, errlen) != 0) {
        free(rh);
        return -1;
    }

    len = 0;
    out[0] = '\0';

    rc = gg_ls_refs_send(rh, 0, err, errlen);

    while (rc == 0
           && (rc = gg_ls_refs_next(rh, &oid, &peeled, &name, &nlen, err,
                                    errlen)) == 1)
    {
        rc = 0;

        /* branches and tags, as ls-remote lists them: not HEAD */
        if (nlen < 5 || memcmp(name, "refs/", 5) != 0) {
            continue;
        }

        if (size - len <= GG_PKT_OID_HEX + nlen + 2) {
            len = size - 1;             /* full: taken as changed */
            continue;
        }

        memcpy(out + len, oid, GG_PKT_OID_HEX);
        out[len + GG_PKT_OID_HEX] = '\t';
        memcpy(out + len + GG_PKT_OID_HEX + 1, name, nlen);
        len += GG_PKT_OID_HEX + 1 + nlen;
        out[len++] = '\n';
        out[len] = '\0';
    }

    gg_rh_close(rh);
    free(rh);
    return rc;
}


int
gg_first_oid_cmp(const void *a, const void *b)
{
    return memcmp(a, b, GG_PKT_OID_HEX);
}


/*
 * libcurl, loaded when the forge is first asked (dlopen): most of the
 * gate's requests never ask it (a copy inside its freshness window), and
 * libcurl with the libraries it needs is two thirds of this program's
 * start-up (18 of 24 ms of CPU here), paid by every request otherwise.
 */

static struct {
    int          state;         /* 0 not tried, 1 loaded, -1 failed */
    CURLcode   (*global_init)(long flags);
    CURL      *(*easy_init)(void);
    CURLcode   (*easy_setopt)(CURL *h, CURLoption o, ...);
    CURLcode   (*easy_getinfo)(CURL *h, CURLINFO i, ...);
    CURLcode   (*easy_pause)(CURL *h, int bitmask);
    void       (*easy_cleanup)(CURL *h);
    CURLM     *(*multi_init)(void);
    CURLMcode  (*multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode  (*multi_remove_handle)(CURLM *m, CURL *h);
    CURLMcode  (*multi_perform)(CURLM *m, int *running);
    CURLMsg   *(*multi_info_read)(CURLM *m, int *left);
    CURLMcode  (*multi_poll)(CURLM *m, struct curl_waitfd *fds,
                             unsigned n, int ms, int *ret);
    CURLMcode  (*multi_cleanup)(CURLM *m);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void       (*slist_free_all)(struct curl_slist *l);
} gg_curl;


static int
gg_curl_load(void)
{
    void  *lib;

    if (gg_curl.state) {
        return gg_curl.state > 0 ? 0 : -1;
    }

    gg_curl.state = -1;

    lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        return -1;
    }

#define gg_curl_sym(field, name)                                              \
    *(void **) &gg_curl.field = dlsym(lib, name);                             \
    if (gg_curl.field == NULL) {                                              \
        return -1;                                                            \
    }

    gg_curl_sym(global_init, "curl_global_init");
    gg_curl_sym(easy_init, "curl_easy_init");
    gg_curl_sym(easy_setopt, "curl_easy_setopt");
    gg_curl_sym(easy_getinfo, "curl_easy_getinfo");
    gg_curl_sym(easy_pause, "curl_easy_pause");
    gg_curl_sym(easy_cleanup, "curl_easy_cleanup");
    gg_curl_sym(multi_init, "curl_multi_init");
    gg_curl_sym(multi_add_handle, "curl_multi_add_handle");
    gg_curl_sym(multi_remove_handle, "curl_multi_remove_handle");
    gg_curl_sym(multi_perform, "curl_multi_perform");
    gg_curl_sym(multi_info_read, "curl_multi_info_read");
    gg_curl_sym(multi_poll, "curl_multi_poll");
    gg_curl_sym(multi_cleanup, "curl_multi_cleanup");
    gg_curl_sym(slist_append, "curl_slist_append");
    gg_curl_sym(slist_free_all, "curl_slist_free_all");

#undef gg_curl_sym

    if (gg_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return -1;
    }

    gg_curl.state = 1;
    return 0;
}


static int gg_rh_request(gg_rh_t *rh, const char *path, const char *body,
    size_t len, const char *type);
static size_t gg_rh_write(char *p, size_t size, size_t n, void *data);


/*
 * The forge's smart HTTP, protocol v2, with libcurl in this process: the
 * capability advertisement (GET info/refs), then gg_rh_send()'s POSTs to
 * git-upload-pack on the same connection.  The token goes as Basic
 * credentials with the first request (no 401 round trip), redirects are
 * not followed (they would take the token elsewhere), no proxy from the
 * environment; GIT_SSL_CAINFO and GIT_SSL_CAPATH are honoured as git's
 * own transport honours them.
 */

int
gg_rh_open(gg_ctx_t *ctx, gg_rh_t *rh, char *err, size_t errlen)
{
    int                 type, v2;
    size_t              dlen, rawlen;
    const char         *d, *raw, *ca;
    struct curl_slist  *l;

    memset(rh, 0, sizeof(*rh));
    rh->url = ctx->url;

    if (strncmp(ctx->url, "https://", 8) != 0
        && strncmp(ctx->url, "http://", 7) != 0)
    {
        snprintf(err, errlen, "failure '%s': not an http(s) forge", ctx->name);
        return -1;
    }

    if (gg_curl_load() != 0) {
        snprintf(err, errlen, "failure '%s': cannot load libcurl "
                 "(libcurl.so.4)", ctx->name);
        return -1;
    }

    rh->h = gg_curl.easy_init();
    rh->m = gg_curl.multi_init();
    rh->req = malloc(strlen(ctx->url) + 64);
    /* the POSTs' headers: the GET's and a content type after them */
    l = gg_curl.slist_append(NULL, "Git-Protocol: version=2");
    rh->hdr = l;
    l = l ? gg_curl.slist_append(l, "Accept-Encoding: identity") : NULL;
    l = l ? gg_curl.slist_append(l, "Expect:") : NULL;
    rh->post = l ? gg_curl.slist_append(NULL, "Content-Type: "
                                     "application/x-git-upload-pack-request")
                 : NULL;

    if (rh->h == NULL || rh->m == NULL || rh->req == NULL || rh->post == NULL)
    {
        snprintf(err, errlen, "out of memory");
        gg_rh_close(rh);
        return -1;
    }

    rh->post->next = rh->hdr;

    if (gg_curl.easy_setopt(rh->h, CURLOPT_PROTOCOLS_STR, "http,https")
           != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_NOPROXY, "*") != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_USERAGENT, "git/ngx-bottle")
           != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_CONNECTTIMEOUT, 10L) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_LOW_SPEED_TIME, 60L) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_BUFFERSIZE, (long) GG_FIRST_READ)
           != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_WRITEFUNCTION, gg_rh_write)
           != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_WRITEDATA, rh) != CURLE_OK)
    {
        snprintf(err, errlen, "failure '%s': cannot set up libcurl",
                 ctx->name);
        gg_rh_close(rh);
        return -1;
    }

    if (ctx->forge.token[0]
        && (gg_curl.easy_setopt(rh->h, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC)
               != CURLE_OK
            || gg_curl.easy_setopt(rh->h, CURLOPT_USERNAME, "x-access-token")
               != CURLE_OK
            || gg_curl.easy_setopt(rh->h, CURLOPT_PASSWORD, ctx->forge.token)
               != CURLE_OK))
    {
        snprintf(err, errlen, "failure '%s': cannot set up libcurl",
                 ctx->name);
        gg_rh_close(rh);
        return -1;
    }

    ca = getenv("GIT_SSL_CAINFO");
    if (ca && ca[0]) {
        gg_curl.easy_setopt(rh->h, CURLOPT_CAINFO, ca);
    }
    ca = getenv("GIT_SSL_CAPATH");
    if (ca && ca[0]) {
        gg_curl.easy_setopt(rh->h, CURLOPT_CAPATH, ca);
    }

    if (gg_rh_request(rh, "/info/refs?service=git-upload-pack", NULL, 0,
                      "application/x-git-upload-pack-advertisement") != 0)
    {
        goto failed;
    }

    /* "# service=..." and its flush (a v0 habit some forges keep), then
     * "version 2" and the capabilities, up to their flush */
    v2 = 0;
    for ( ;; ) {
        if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) != 0) {
            goto failed;
        }
        if (type == GG_PKT_FLUSH) {
            if (v2) {
                break;
            }
            continue;
        }
        if (type != GG_PKT_DATA) {
            goto failed;
        }
        if (!v2 && dlen >= 9 && memcmp(d, "version 2", 9) == 0
            && (dlen == 9 || (dlen == 10 && d[9] == '\n')))
        {
            v2 = 1;
        } else if (!v2 && (dlen < 10 || memcmp(d, "# service=", 10) != 0)) {
            goto failed;
        }
    }

    /* the advertisement's body is whole: its 0002 next */
    if (gg_rh_pkt(rh, &type, &d, &dlen, &raw, &rawlen) == 0
        && type == GG_PKT_END)
    {
        return 0;
    }

failed:

    snprintf(err, errlen, "failure '%s': the forge does not answer "
             "protocol v2", ctx->name);
    gg_rh_close(rh);
    return -1;
}


void
gg_rh_close(gg_rh_t *rh)
{
    if (gg_curl.state <= 0) {
        free(rh->req);
        rh->req = NULL;
        return;
    }

    if (rh->added) {
        gg_curl.multi_remove_handle(rh->m, rh->h);
        rh->added = 0;
    }
    if (rh->h) {
        gg_curl.easy_cleanup(rh->h);
        rh->h = NULL;
    }
    if (rh->m) {
        gg_curl.multi_cleanup(rh->m);
        rh->m = NULL;
    }
    if (rh->post) {
        rh->post->next = NULL;      /* rh->hdr's, freed below */
    }
    gg_curl.slist_free_all(rh->post);
    gg_curl.slist_free_all(rh->hdr);
    rh->hdr = rh->post = NULL;
    free(rh->req);
    rh->req = NULL;
}


/* a request on the connection; its answer read by gg_rh_pkt() */

static int
gg_rh_request(gg_rh_t *rh, const char *path, const char *body, size_t len,
    const char *type)
{
    if (rh->added) {
        gg_curl.multi_remove_handle(rh->m, rh->h);
        rh->added = 0;
    }

    sprintf(rh->req, "%s%s", rh->url, path);

    rh->checked = rh->done = rh->ended = rh->paused = 0;
    rh->result = CURLE_OK;
    rh->type = type;
    rh->pos = rh->len = 0;

    if (gg_curl.easy_setopt(rh->h, CURLOPT_URL, rh->req) != CURLE_OK
        || gg_curl.easy_setopt(rh->h, CURLOPT_HTTPHEADER,
                            body ? rh->post : rh->hdr) != CURLE_OK)
    {
        return -1;
    }

    if (body) {
        if (gg_curl.easy_setopt(rh->h, CURLOPT_POSTFIELDSIZE, (long) len)
               != CURLE_OK
            || gg_curl.easy_setopt(rh->h, CURLOPT_COPYPOSTFIELDS, body)
               != CURLE_OK)
        {
            return -1;
        }
    } else if (gg_curl.easy_setopt(rh->h, CURLOPT_HTTPGET, 1L) != CURLE_OK) {
        return -1;
    }

    if (gg_curl.multi_add_handle(rh->m, rh->h) != CURLM_OK) {
        return -1;
    }
    rh->added = 1;

    return 0;
}


int
gg_rh_send(gg_rh_t *rh, const char *req, size_t len)
{
    return gg_rh_request(rh, "/git-upload-pack", req, len,
                         "application/x-git-upload-pack-result");
}


/* the answer's body into buf; the transfer paused while buf is full */

static size_t
gg_rh_write(char *p, size_t size, size_t n, void *data)
{
    long         status;
    size_t       len;
    gg_rh_t     *rh;
    const char  *type;

    rh = data;
    len = size * n;

    if (!rh->checked) {
        status = 0;
        type = NULL;
        gg_curl.easy_getinfo(rh->h, CURLINFO_RESPONSE_CODE, &status);
        gg_curl.easy_getinfo(rh->h, CURLINFO_CONTENT_TYPE, &type);
        if (status != 200 || type == NULL
            || strncmp(type, rh->type, strlen(rh->type)) != 0)
        {
            return 0;                   /* the transfer fails */
        }
        rh->checked = 1;
    }

    if (GG_FIRST_BUF - rh->len < len && rh->pos) {
        memmove(rh->buf, rh->buf + rh->pos, rh->len - rh->pos);
        rh->len -= rh->pos;
        rh->pos = 0;
    }

    if (GG_FIRST_BUF - rh->len < len) {
        rh->paused = 1;
        return CURL_WRITEFUNC_PAUSE;
    }

    memcpy(rh->buf + rh->len, p, len);
    rh->len += len;
    return len;
}


/* more of the answer in buf (the callers' pointers into it now stale) */

int
gg_rh_fill(gg_rh_t *rh)
{
    int        running;
    size_t     before;
    CURLMsg   *msg;

    if (rh->pos && rh->pos == rh->len) {
        rh->pos = rh->len = 0;

    } else if (rh->pos > GG_FIRST_BUF / 2) {
        memmove(rh->buf, rh->buf + rh->pos, rh->len - rh->pos);
        rh->len -= rh->pos;
        rh->pos = 0;
    }

    if (rh->len == GG_FIRST_BUF || !rh->added || rh->ended) {
        return -1;
    }

    before = rh->len;

    for ( ;; ) {
        if (rh->paused) {
            rh->paused = 0;
            gg_curl.easy_pause(rh->h, CURLPAUSE_CONT);
        }

        if (rh->len > before) {
            return 0;
        }

        if (rh->done) {
            if (rh->result != CURLE_OK || !rh->checked
                || GG_FIRST_BUF - rh->len < 4)
            {
                return -1;
            }
            memcpy(rh->buf + rh->len, "0002", 4);
            rh->len += 4;
            rh->ended = 1;
            return 0;
        }

        if (gg_curl.multi_perform(rh->m, &running) != CURLM_OK) {
            return -1;
        }

        while ((msg = gg_curl.multi_info_read(rh->m, &running)) != NULL) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == rh->h) {
                rh->done = 1;
                rh->result = msg->data.result;
            }
        }

        if (rh->len == before && !rh->done && !rh->paused
            && gg_curl.multi_poll(rh->m, NULL, 0, 1000, NULL) != CURLM_OK)
        {
            return -1;
        }
    }
}


/* the next pkt-line; its bytes valid until the next call */

int
gg_rh_pkt(gg_rh_t *rh, int *type, const char **d, size_t *dlen,
    const char **raw, size_t *rawlen)
{
    long  n;

    for ( ;; ) {
        n = gg_pkt_next(rh->buf + rh->pos, rh->len - rh->pos, type, d, dlen);
        if (n < 0) {
            return -1;
        }
        if (n > 0) {
            *raw = rh->buf + rh->pos;
            *rawlen = (size_t) n;
            rh->pos += (size_t) n;
            return 0;
        }
        if (gg_rh_fill(rh) != 0) {
            return -1;
        }
    }
}


/* a pkt-line of s[0, slen); s NULL: 0000 (slen 0) or 0001 (slen 1) */

int
gg_pkt_add(char *buf, size_t size, size_t *len, const char *s, size_t slen)
{
    if (s == NULL) {
        if (size - *len < 4) {
            return -1;
        }
        memcpy(buf + *len, slen ? "0001" : "0000", 4);
        *len += 4;
        return 0;
    }

    if (slen + 4 > GG_PKT_MAX || size - *len < slen + 5) {
        return -1;
    }

    snprintf(buf + *len, 5, "%04zx", slen + 4);
    memcpy(buf + *len + 4, s, slen);
    *len += slen + 4;
    return 0;
}


void
gg_out(gg_out_t *o, const char *p, size_t len)
{
    if (o->len + len > sizeof(o->buf)) {
        gg_out_flush(o);
    }

    if (len > sizeof(o->buf)) {
        if (!o->gone && gg_first_write(o->fd, p, len) != 0) {
            o->gone = 1;
        }
        return;
    }

    memcpy(o->buf + o->len, p, len);
    o->len += len;
}


void
gg_out_flush(gg_out_t *o)
{
    if (o->len && !o->gone && gg_first_write(o->fd, o->buf, o->len) != 0) {
        o->gone = 1;
    }
    o->len = 0;
}


int
gg_first_write(int fd, const char *p, size_t len)
{
    ssize_t  w;

    while (len) {
        w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        len -= (size_t) w;
    }

    return 0;
}


/* the objects of the refs an ls-refs answer listed: gitgate-first.refs */

void
gg_seen_add(gg_seen_t *c, const char *oid)
{
    char  *p;

    if (oid == NULL || c->failed) {
        return;
    }

    if (c->n == c->size) {
        c->size = c->size * 2 + 64;
        p = realloc(c->oids, c->size * GG_PKT_OID_HEX);
        if (p == NULL) {
            c->failed = 1;
            return;
        }
        c->oids = p;
    }

    memcpy(c->oids + c->n++ * GG_PKT_OID_HEX, oid, GG_PKT_OID_HEX);
}


void
gg_seen_write(const gg_ctx_t *ctx, gg_seen_t *c)
{
    int   fd;
    char  path[GG_PATH_LEN + 32], tmp[GG_PATH_LEN + 64];

    if (c->failed || c->n == 0) {
        return;
    }

    qsort(c->oids, c->n, GG_PKT_OID_HEX, gg_first_oid_cmp);

    snprintf(path, sizeof(path), "%s/gitgate-first.refs", ctx->repo_dir);
    snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long) getpid());

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) {
        return;
    }

    if (gg_first_write(fd, c->oids, c->n * GG_PKT_OID_HEX) != 0
        || rename(tmp, path) != 0)
    {
        unlink(tmp);
    }

    close(fd);
}


int
gg_seen_read(const gg_ctx_t *ctx, char **oids, size_t *n)
{
    int          fd;
    char         path[GG_PATH_LEN + 32];
    size_t       i;
    time_t       now;
    ssize_t      r;
    struct stat  st;

    *oids = NULL;
    *n = 0;

    snprintf(path, sizeof(path), "%s/gitgate-first.refs", ctx->repo_dir);

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }

    now = time(NULL);

    if (fstat(fd, &st) != 0 || st.st_size <= 0
        || st.st_size % GG_PKT_OID_HEX != 0
        || st.st_size > 2 * GG_FIRST_REFS_MAX * GG_PKT_OID_HEX
        || st.st_mtime > now || now - st.st_mtime > GG_FIRST_CACHE_AGE)
    {
        close(fd);
        return -1;
    }

    *oids = malloc((size_t) st.st_size);
    if (*oids == NULL) {
        close(fd);
        return -1;
    }

    for (i = 0; i < (size_t) st.st_size; i += (size_t) r) {
        r = read(fd, *oids + i, (size_t) st.st_size - i);
        if (r <= 0) {
            close(fd);
            free(*oids);
            *oids = NULL;
            return -1;
        }
    }

    close(fd);

    /* sorted hex ids: anything else, and it is not used */
    for (i = 0; i < (size_t) st.st_size; i += GG_PKT_OID_HEX) {
        if (!gg_pkt_oid(*oids + i, GG_PKT_OID_HEX)
            || (i && memcmp(*oids + i - GG_PKT_OID_HEX, *oids + i,
                            GG_PKT_OID_HEX) > 0))
        {
            free(*oids);
            *oids = NULL;
            return -1;
        }
    }

    *n = (size_t) st.st_size / GG_PKT_OID_HEX;
    return 0;
}


int
gg_wants_in(const gg_v2_request_t *r, const char *oids, size_t n)
{
    size_t  i;

    for (i = 0; i < r->nwants; i++) {
        if (n == 0 || bsearch(r->wants[i], oids, n, GG_PKT_OID_HEX,
                              gg_first_oid_cmp) == NULL)
        {
            return 0;
        }
    }

    return 1;
}


/* the whole of file from into to (a pipe) */

int
gg_first_copy(int from, int to)
{
    char     *buf;
    ssize_t   r;

    if (lseek(from, 0, SEEK_SET) != 0) {
        return -1;
    }

    buf = malloc(GG_FIRST_PIPE);
    if (buf == NULL) {
        return -1;
    }

    for ( ;; ) {
        r = read(from, buf, GG_FIRST_PIPE);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0 || gg_first_write(to, buf, (size_t) r) != 0) {
            break;
        }
    }

    free(buf);
    return r == 0 ? 0 : -1;
}
