
/*
 * The record of a request (bottle_record.h): scrubbing, and the two JSON
 * forms built from one bottle_record_t, the full log's lines and the
 * firehose's OCSF HTTP Activity record (docs/full-log.md,
 * docs/firehose.md).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "bottle_decide.h"
#include "bottle_record.h"


static const struct {
    const char  *name;
    int          id;
} bottle_ocsf_methods[] = {
    { "CONNECT", 1 }, { "DELETE", 2 }, { "GET", 3 }, { "HEAD", 4 },
    { "OPTIONS", 5 }, { "POST", 6 }, { "PUT", 7 }, { "TRACE", 8 },
    { NULL, 0 }
};


static void
record_mask_one(unsigned char *buf, size_t len, const char *s, size_t slen,
    int cut, size_t *n)
{
    size_t          k, tail;
    unsigned char  *p, *end;

    if (slen == 0 || len == 0) {
        return;
    }

    p = buf;
    end = buf + len;

    while ((size_t) (end - p) >= slen) {
        p = memchr(p, (unsigned char) s[0], end - p - slen + 1);
        if (p == NULL) {
            break;
        }

        if (memcmp(p, s, slen) != 0) {
            p++;
            continue;
        }

        memset(p, '*', slen);
        p += slen;
        (*n)++;
    }

    if (!cut) {
        return;
    }

    /* the longest tail of buf that begins the secret */

    tail = (len < slen) ? len : slen - 1;

    for (k = tail; k > 0; k--) {
        if (memcmp(buf + len - k, s, k) == 0) {
            memset(buf + len - k, '*', k);
            (*n)++;
            return;
        }
    }
}


size_t
bottle_record_scrub(const bottle_t *b, unsigned char *buf, size_t len,
    int cut)
{
    size_t  i, n;

    n = 0;

    if (b == NULL) {
        return 0;
    }

    record_mask_one(buf, len, b->canary.data, b->canary.len, cut, &n);

    for (i = 0; i < b->negress_tokens; i++) {
        record_mask_one(buf, len, b->egress_tokens[i].value.data,
                        b->egress_tokens[i].value.len, cut, &n);
    }

    for (i = 0; i < b->nheld_secrets; i++) {
        record_mask_one(buf, len, b->held_secrets[i].value.data,
                        b->held_secrets[i].value.len, cut, &n);
    }

    return n;
}


int
bottle_record_credential(const bottle_route_t *route, const char *name,
    size_t len)
{
    static const char  *creds[] = {
        "authorization", "proxy-authorization", "cookie", "set-cookie",
        NULL
    };

    const char      **c;
    bottle_route_t    r;

    for (c = creds; *c; c++) {
        if (strlen(*c) == len && strncasecmp(*c, name, len) == 0) {
            return 1;
        }
    }

    if (route != NULL && route->auth_header.len == len && len
        && strncasecmp(route->auth_header.data, name, len) == 0)
    {
        return 1;
    }

    /*
     * Every header the gateway strips as a credential (Private-Token,
     * X-Api-Key, ...), also on a preserve_auth route, where they go
     * upstream but are no less credentials for a record.
     */

    if (route) {
        r = *route;
    } else {
        memset(&r, 0, sizeof(r));
    }

    r.preserve_auth = 0;

    return bottle_decide_strips(&r, name, len);
}


/*
 * The length of buf's valid UTF-8 prefix; with cut, a sequence the cut
 * split at the end does not count against it.  *whole: all of buf is
 * valid (but for that split tail).
 */

static size_t
record_utf8(const unsigned char *buf, size_t len, int cut, int *whole)
{
    size_t    i, k, need;
    unsigned  c;

    *whole = 1;

    for (i = 0; i < len; i += need) {
        c = buf[i];

        if (c < 0x80) {
            need = 1;
            continue;
        }

        if (c >= 0xc2 && c <= 0xdf) {
            need = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 4;
        } else {
            *whole = 0;
            return i;
        }

        if (i + need > len) {
            *whole = cut;
            return i;
        }

        for (k = 1; k < need; k++) {
            if ((buf[i + k] & 0xc0) != 0x80) {
                *whole = 0;
                return i;
            }
        }

        /* overlong, surrogates, beyond U+10FFFF */
        if ((c == 0xe0 && buf[i + 1] < 0xa0)
            || (c == 0xed && buf[i + 1] > 0x9f)
            || (c == 0xf0 && buf[i + 1] < 0x90)
            || (c == 0xf4 && buf[i + 1] > 0x8f))
        {
            *whole = 0;
            return i;
        }
    }

    return len;
}


/* every byte of buf that is not in valid UTF-8 becomes '?' */

static void
record_utf8_fix(unsigned char *buf, size_t len)
{
    int     whole;
    size_t  off, ok;

    for (off = 0; off < len; off += ok + 1) {
        ok = record_utf8(buf + off, len - off, 0, &whole);
        if (off + ok >= len) {
            break;
        }

        buf[off + ok] = '?';
    }
}


/* a copy of s, every byte of invalid UTF-8 as '?', scrubbed */

static json_t *
record_text(const bottle_t *b, const char *s, size_t len)
{
    json_t         *j;
    unsigned char  *copy;

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return NULL;
    }

    if (len) {
        memcpy(copy, s, len);
    }

    /*
     * '?' first: a secret is then masked even where replaced bytes would
     * have made one; and again after, for a secret that is not UTF-8
     * itself (the policy's are) and was masked in the middle of a
     * character.
     */

    record_utf8_fix(copy, len);
    bottle_record_scrub(b, copy, len, 0);
    record_utf8_fix(copy, len);

    j = json_stringn((const char *) copy, len);
    free(copy);

    return j;
}


static int
record_set(json_t *o, const char *key, json_t *v)
{
    if (v == NULL) {
        return -1;
    }

    return json_object_set_new(o, key, v);
}


static int
record_set_str(json_t *o, const char *key, const bottle_t *b,
    bottle_str_t *s)
{
    if (s->data == NULL) {
        return 0;
    }

    return record_set(o, key, record_text(b, s->data, s->len));
}


static json_t *
record_time(int64_t ms)
{
    char       buf[80];
    time_t     sec;
    struct tm  tm;

    sec = (time_t) (ms / 1000);

    if (gmtime_r(&sec, &tm) == NULL) {
        return NULL;
    }

    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int) (ms % 1000));

    return json_string(buf);
}


/*
 * [{"name": n, "value": v}]: credentials as "[scrubbed]" (drop 0) or left
 * out (drop 1), the rest scrubbed.
 */

static json_t *
record_headers(const bottle_record_t *rec, const bottle_record_header_t *h,
    size_t n, int drop)
{
    size_t   i;
    json_t  *a, *o;

    a = json_array();
    if (a == NULL) {
        return NULL;
    }

    for (i = 0; i < n; i++) {
        int  cred = bottle_record_credential(rec->route, h[i].name,
                                             h[i].name_len);

        if (cred && drop) {
            continue;
        }

        o = json_object();
        if (o == NULL || json_array_append_new(a, o) != 0
            || record_set(o, "name", record_text(rec->bottle, h[i].name,
                                                 h[i].name_len)) != 0
            || record_set(o, "value",
                          cred ? json_string(BOTTLE_RECORD_SCRUBBED)
                               : record_text(rec->bottle, h[i].value,
                                             h[i].value_len)) != 0)
        {
            json_decref(a);
            return NULL;
        }
    }

    return a;
}


/*
 * A body is the one large value of a record: jansson, which would build it
 * and escape it byte by byte, never sees it.  Its fields go into the
 * object, its text is escaped here into a splice, and record_dump() puts
 * it in the dumped text, last in its object.
 */

typedef struct {
    const char     *key;        /* "body", "body_base64"; NULL: none */
    char           *val;        /* a JSON string, quotes included */
    size_t          len;
} record_splice_t;


/* a JSON string of UTF-8 text: '"', '\' and controls escaped */

static char *
record_escape(const unsigned char *in, size_t len, size_t *out_len)
{
    char        *out, *p;
    size_t       i, n;
    unsigned     c;

    static const char  hex[] = "0123456789abcdef";

    /* the exact size first: a body's text is mostly left as it is */

    n = len + 2;

    for (i = 0; i < len; i++) {
        c = in[i];

        if (c == '"' || c == '\\') {
            n++;

        } else if (c < 0x20 || c == 0x7f) {
            n += 5;
        }
    }

    out = malloc(n);
    if (out == NULL) {
        return NULL;
    }

    p = out;
    *p++ = '"';

    for (i = 0; i < len; i++) {
        c = in[i];

        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char) c;

        } else if (c < 0x20 || c == 0x7f) {
            *p++ = '\\';
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];

        } else {
            *p++ = (char) c;
        }
    }

    *p++ = '"';
    *out_len = p - out;

    return out;
}


/*
 * The body's fields into o: body_size, body_truncated, body_sha256; its
 * first bytes, scrubbed, into sp as body (text) or body_base64.
 */

static int
record_body(json_t *o, const bottle_t *b, const bottle_record_body_t *body,
    record_splice_t *sp)
{
    int             whole, rc;
    char            hex[65];
    size_t          i, ok, cut, n;
    unsigned char  *copy, *enc;

    if (!body->seen) {
        return 0;
    }

    cut = body->size > body->len;
    rc = -1;
    enc = NULL;

    copy = malloc(body->len ? body->len : 1);
    if (copy == NULL) {
        return -1;
    }

    if (body->len) {
        memcpy(copy, body->data, body->len);
    }

    bottle_record_scrub(b, copy, body->len, (int) cut);

    ok = record_utf8(copy, body->len, (int) cut, &whole);

    if (whole) {
        sp->key = "body";
        sp->val = record_escape(copy, ok, &sp->len);
        if (sp->val == NULL) {
            goto cleanup;
        }

    } else {
        n = 4 * ((body->len + 2) / 3);

        enc = malloc(n + 3);
        if (enc == NULL) {
            goto cleanup;
        }

        enc[0] = '"';
        EVP_EncodeBlock(enc + 1, copy, (int) body->len);
        enc[n + 1] = '"';

        sp->key = "body_base64";
        sp->val = (char *) enc;
        sp->len = n + 2;
        enc = NULL;
    }

    if (record_set(o, "body_size", json_integer((json_int_t) body->size))
        || record_set(o, "body_truncated", json_boolean(cut)))
    {
        goto cleanup;
    }

    if (body->has_sha256) {
        for (i = 0; i < 32; i++) {
            snprintf(hex + 2 * i, 3, "%02x", body->sha256[i]);
        }

        if (record_set(o, "body_sha256", json_string(hex)) != 0) {
            goto cleanup;
        }

    } else if (record_set(o, "body_sha256", json_null()) != 0) {
        goto cleanup;
    }

    rc = 0;

cleanup:

    free(enc);
    free(copy);
    return rc;
}


/*
 * o as one line, the body spliced in as the last member of the object
 * whose closing brace is the depth-th from the end (1: o itself, 2: o's
 * last member, unmapped); o is released, and the splice.
 */

static int
record_dump(char **out, size_t *out_len, json_t *o, record_splice_t *sp,
    size_t depth)
{
    char    *s, *r;
    size_t   len, klen, at;

    s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);

    if (s == NULL) {
        free(sp->val);
        return -1;
    }

    len = strlen(s);

    if (sp->val == NULL) {
        *out = s;
        *out_len = len;
        return 0;
    }

    klen = strlen(sp->key);

    r = (len >= depth) ? malloc(len + klen + sp->len + 5) : NULL;
    if (r == NULL) {
        free(s);
        free(sp->val);
        return -1;
    }

    /* every object here has a member already: a comma before ours */

    at = len - depth;
    memcpy(r, s, at);
    r[at] = ',';
    r[at + 1] = '"';
    memcpy(r + at + 2, sp->key, klen);
    r[at + 2 + klen] = '"';
    r[at + 3 + klen] = ':';
    memcpy(r + at + 4 + klen, sp->val, sp->len);
    memcpy(r + at + 4 + klen + sp->len, s + at, depth);
    r[len + klen + sp->len + 4] = '\0';

    *out = r;
    *out_len = len + klen + sp->len + 4;

    free(s);
    free(sp->val);

    return 0;
}


int
bottle_record_full(char **out, size_t *out_len, const bottle_record_t *rec,
    int response)
{
    json_t           *o;
    bottle_str_t      id;
    record_splice_t   sp;
    const bottle_t  *b = rec->bottle;

    memset(&sp, 0, sizeof(sp));

    o = json_object();
    if (o == NULL) {
        return -1;
    }

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    if (record_set(o, "type", json_string(response ? "response" : "request"))
        || record_set(o, "time", record_time(response ? rec->end_ms
                                                       : rec->start_ms))
        || record_set_str(o, "request_id", NULL,
                          (bottle_str_t *) &rec->request_id)
        || record_set_str(o, "bottle", NULL, &id)
        || record_set_str(o, "host", NULL, (bottle_str_t *) &rec->host)
        || record_set(o, "port", json_integer(rec->port)))
    {
        goto failed;
    }

    if (response) {
        if (record_set(o, "status", json_integer(rec->status))
            || record_set(o, "duration_ms",
                          json_integer(rec->end_ms - rec->start_ms))
            || record_set(o, "headers",
                          record_headers(rec, rec->resp_headers,
                                         rec->nresp_headers, 0))
            || record_body(o, b, &rec->resp_body, &sp)
            || record_set(o, "length",
                          json_integer((json_int_t) rec->response_length)))
        {
            goto failed;
        }

        return record_dump(out, out_len, o, &sp, 1);
    }

    if (record_set_str(o, "method", NULL, (bottle_str_t *) &rec->method)
        || record_set_str(o, "scheme", NULL, (bottle_str_t *) &rec->scheme)
        || record_set_str(o, "path", b, (bottle_str_t *) &rec->path)
        || record_set_str(o, "query", b, (bottle_str_t *) &rec->query)
        || record_set(o, "headers",
                      record_headers(rec, rec->headers, rec->nheaders, 0))
        || record_body(o, b, &rec->body, &sp)
        || record_set(o, "verdict", json_string(rec->allowed ? "allowed"
                                                              : "refused"))
        || record_set_str(o, "rule", NULL, (bottle_str_t *) &rec->rule)
        || record_set_str(o, "reason", NULL, (bottle_str_t *) &rec->reason))
    {
        goto failed;
    }

    return record_dump(out, out_len, o, &sp, 1);

failed:

    json_decref(o);
    free(sp.val);
    return -1;
}


int
bottle_record_ocsf_activity(const char *method, size_t len)
{
    size_t  i;

    for (i = 0; bottle_ocsf_methods[i].name; i++) {
        if (strlen(bottle_ocsf_methods[i].name) == len
            && memcmp(bottle_ocsf_methods[i].name, method, len) == 0)
        {
            return bottle_ocsf_methods[i].id;
        }
    }

    return 99;
}


static json_t *
record_ocsf_request(const bottle_record_t *rec, int metadata)
{
    json_t          *req, *url;
    const bottle_t  *b = rec->bottle;

    req = json_object();
    url = json_object();

    if (req == NULL || url == NULL) {
        json_decref(req);
        json_decref(url);
        return NULL;
    }

    if (record_set(req, "url", url)
        || record_set_str(url, "hostname", NULL, (bottle_str_t *) &rec->host)
        || record_set(url, "port", json_integer(rec->port))
        || record_set_str(url, "scheme", NULL, (bottle_str_t *) &rec->scheme)
        || record_set(req, "length",
                      json_integer((json_int_t) rec->request_length)))
    {
        goto failed;
    }

    if (metadata) {
        return req;
    }

    if (record_set_str(req, "http_method", NULL,
                       (bottle_str_t *) &rec->method)
        || record_set_str(url, "path", b, (bottle_str_t *) &rec->path)
        || record_set_str(url, "query_string", b,
                          (bottle_str_t *) &rec->query)
        || record_set_str(req, "user_agent", b,
                          (bottle_str_t *) &rec->user_agent)
        || record_set(req, "http_headers",
                      record_headers(rec, rec->headers, rec->nheaders, 1)))
    {
        goto failed;
    }

    return req;

failed:

    json_decref(req);
    return NULL;
}


/* "1.2.3.4:443", "[::1]:80": dst_endpoint.ip, if dialled */

static int
record_ocsf_dst_ip(json_t *dst, const bottle_str_t *addr)
{
    size_t       len;
    const char  *p;

    if (addr->data == NULL || addr->len == 0) {
        return 0;
    }

    for (len = addr->len; len > 0 && addr->data[len - 1] != ':'; len--) {
        /* void */
    }

    if (len < 2) {
        return 0;
    }

    len--;
    p = addr->data;

    if (p[0] == '[' && p[len - 1] == ']') {
        p++;
        len -= 2;
    }

    return record_set(dst, "ip", json_stringn(p, len));
}


/* the OCSF record's fields; its shape is docs/firehose.md's */

static int
record_ocsf_fill(json_t *o, const bottle_record_t *rec, int metadata,
    record_splice_t *sp)
{
    int              activity;
    json_t          *meta, *product, *resp, *dst, *src, *unm;
    bottle_str_t     id;
    const bottle_t  *b = rec->bottle;

    activity = bottle_record_ocsf_activity(rec->method.data, rec->method.len);

    meta = json_object();
    product = json_object();
    resp = json_object();
    dst = json_object();
    src = json_object();
    unm = json_object();

    if (meta == NULL || product == NULL || resp == NULL || dst == NULL
        || src == NULL || unm == NULL)
    {
        json_decref(meta);
        json_decref(product);
        json_decref(resp);
        json_decref(dst);
        json_decref(src);
        json_decref(unm);
        return -1;
    }

    json_object_set_new(o, "metadata", meta);
    json_object_set_new(meta, "product", product);
    json_object_set_new(o, "http_response", resp);
    json_object_set_new(o, "dst_endpoint", dst);
    json_object_set_new(o, "src_endpoint", src);

    if (record_set(o, "class_uid", json_integer(BOTTLE_OCSF_CLASS))
        || record_set(o, "category_uid", json_integer(BOTTLE_OCSF_CATEGORY))
        || record_set(o, "activity_id", json_integer(activity))
        || record_set(o, "type_uid",
                      json_integer(BOTTLE_OCSF_CLASS * 100 + activity))
        || record_set(o, "time", json_integer(rec->start_ms))
        || record_set(o, "start_time", json_integer(rec->start_ms))
        || record_set(o, "end_time", json_integer(rec->end_ms))
        || record_set(o, "duration",
                      json_integer(rec->end_ms - rec->start_ms))
        || record_set(o, "severity_id", json_integer(rec->allowed ? 1 : 3))
        || record_set(o, "action_id", json_integer(rec->allowed ? 1 : 2))
        || record_set(o, "action", json_string(rec->allowed ? "Allowed"
                                                             : "Denied"))
        || record_set(o, "disposition_id", json_integer(rec->allowed ? 1 : 2))
        || record_set(o, "disposition",
                      json_string(rec->allowed ? "Allowed" : "Blocked"))
        || record_set(o, "status_id",
                      json_integer(rec->allowed && rec->status < 400 ? 1 : 2))
        || record_set(o, "status",
                      json_string(rec->allowed && rec->status < 400
                                  ? "Success" : "Failure"))
        || record_set(meta, "version", json_string(BOTTLE_OCSF_VERSION))
        || record_set(product, "name", json_string("ngx_bottle"))
        || record_set(product, "vendor_name", json_string("bot-bottle"))
        || record_set(resp, "code", json_integer(rec->status))
        || record_set(resp, "length",
                      json_integer((json_int_t) rec->response_length))
        || record_set_str(dst, "hostname", NULL, (bottle_str_t *) &rec->host)
        || record_set(dst, "port", json_integer(rec->port))
        || record_set_str(src, "ip", NULL, (bottle_str_t *) &rec->src_ip)
        || record_set(src, "port", json_integer(rec->src_port))
        || record_set(o, "http_request", record_ocsf_request(rec, metadata)))
    {
        json_decref(unm);
        return -1;
    }

    json_object_set_new(o, "unmapped", unm);

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    if (record_set_str(unm, "bottle", NULL, &id)
        || record_set_str(unm, "rule", NULL, (bottle_str_t *) &rec->rule)
        || record_set_str(unm, "request_id", NULL,
                          (bottle_str_t *) &rec->request_id)
        || record_ocsf_dst_ip(dst, &rec->dst_addr))
    {
        return -1;
    }

    if (metadata) {
        return record_set(unm, "firehose", json_string("metadata"));
    }

    if (record_set_str(unm, "reason", NULL, (bottle_str_t *) &rec->reason)
        || record_set(unm, "firehose", json_string("full"))
        || record_body(unm, b, &rec->body, sp))
    {
        return -1;
    }

    return 0;
}


int
bottle_record_ocsf(char **out, size_t *out_len, const bottle_record_t *rec,
    int metadata)
{
    json_t           *o;
    record_splice_t   sp;

    memset(&sp, 0, sizeof(sp));

    o = json_object();
    if (o == NULL) {
        return -1;
    }

    if (record_ocsf_fill(o, rec, metadata, &sp) != 0) {
        json_decref(o);
        free(sp.val);
        return -1;
    }

    /* the body goes last in unmapped, the record's last member */

    return record_dump(out, out_len, o, &sp, 2);
}
