
/*
 * The record of a request (bottle_record.h): scrubbing, and the two JSON
 * forms built from one bottle_record_t, the full log's lines and the
 * firehose's OCSF HTTP Activity record (docs/full-log.md,
 * docs/firehose.md).
 *
 * The JSON is written straight into one growing buffer, every write
 * checked against its room: a record is built once per request while a
 * consumer is attached, and a JSON library's tree of small values cost
 * more than the rest of the record (issue 17).  Member order and escapes
 * are those the records had when jansson built them (JSON_COMPACT,
 * JSON_PRESERVE_ORDER): strings as jansson escapes them, a body as
 * record_escape() does, last in its object.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bottle_decide.h"
#include "bottle_record_int.h"
#include "bottle_scan_int.h"


static const struct {
    const char  *name;
    int          id;
} bottle_ocsf_methods[] = {
    { "CONNECT", 1 }, { "DELETE", 2 }, { "GET", 3 }, { "HEAD", 4 },
    { "OPTIONS", 5 }, { "POST", 6 }, { "PUT", 7 }, { "TRACE", 8 },
    { NULL, 0 }
};


/*
 * The JSON being written: one malloc()ed buffer, head bytes left free
 * before the record (a transport's framing) and room kept for tail bytes
 * after it; every write is checked, and the first that finds no memory
 * fails the record.  scratch holds the copy of a value being scrubbed.
 */

typedef struct {
    char            *buf;
    size_t           len;
    size_t           cap;
    size_t           tail;
    unsigned char   *scratch;
    size_t           scratch_cap;
    bottle_record_scrub_t   scrub;      /* the record's bottle's, when first used */
    int              failed;
} record_out_t;


static int
record_out_init(record_out_t *o, size_t size)
{
    memset(o, 0, sizeof(record_out_t));

    o->cap = size + 1;
    o->buf = malloc(o->cap);

    return o->buf != NULL ? 0 : -1;
}


/* room for n more bytes (and the tail, and a NUL) */

static int
record_room(record_out_t *o, size_t n)
{
    char    *p;
    size_t   want, cap;

    if (o->failed) {
        return -1;
    }

    if (n > SIZE_MAX / 2 - o->len - o->tail - 1) {
        o->failed = 1;
        return -1;
    }

    want = o->len + n + o->tail + 1;

    if (want <= o->cap) {
        return 0;
    }

    cap = o->cap * 2;
    if (cap < want) {
        cap = want;
    }

    p = realloc(o->buf, cap);
    if (p == NULL) {
        o->failed = 1;
        return -1;
    }

    o->buf = p;
    o->cap = cap;

    return 0;
}


static void
record_put(record_out_t *o, const char *s, size_t n)
{
    if (record_room(o, n) == 0) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
    }
}


#define record_lit(o, s)  record_put(o, s, sizeof(s) - 1)


static unsigned char *
record_scratch(record_out_t *o, size_t n)
{
    unsigned char  *p;

    if (o->failed) {
        return NULL;
    }

    if (n > o->scratch_cap) {
        p = realloc(o->scratch, n);
        if (p == NULL) {
            o->failed = 1;
            return NULL;
        }

        o->scratch = p;
        o->scratch_cap = n;
    }

    return o->scratch;
}


/* the bottle's secrets and their forms masked in buf */

static void
record_out_scrub(record_out_t *o, const bottle_t *b, unsigned char *buf,
    size_t len, int cut)
{
    if (b == NULL) {
        return;
    }

    if (!o->scrub.built
        && (!bottle_record_scrub_needed(b, buf, len, cut)
            || bottle_record_scrub_build(&o->scrub, b) != 0))
    {
        /* no encoded form can be there (or no memory for them) */
        (void) bottle_record_scrub_literal(b, buf, len, cut);
        return;
    }

    (void) bottle_record_scrub_with(&o->scrub, buf, len, cut);
}


/* "key": after a comma unless it is the first member of its object */

static void
record_key(record_out_t *o, const char *key)
{
    size_t  n = strlen(key);

    if (record_room(o, n + 4) != 0) {
        return;
    }

    if (o->buf[o->len - 1] != '{' && o->buf[o->len - 1] != '[') {
        o->buf[o->len++] = ',';
    }

    o->buf[o->len++] = '"';
    memcpy(o->buf + o->len, key, n);
    o->len += n;
    o->buf[o->len++] = '"';
    o->buf[o->len++] = ':';
}


static void
record_int(record_out_t *o, const char *key, int64_t v)
{
    char      tmp[24];
    size_t    n;
    uint64_t  u;

    record_key(o, key);

    u = (v < 0) ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
    n = sizeof(tmp);

    do {
        tmp[--n] = (char) ('0' + u % 10);
        u /= 10;
    } while (u);

    if (v < 0) {
        tmp[--n] = '-';
    }

    record_put(o, tmp + n, sizeof(tmp) - n);
}


/* a JSON string of valid UTF-8, escaped as jansson escapes it */

static void
record_string(record_out_t *o, const unsigned char *s, size_t len)
{
    char      *p;
    size_t     i;
    unsigned   c;

    static const char  hex[] = "0123456789ABCDEF";

    if (len > SIZE_MAX / 8 || record_room(o, 6 * len + 2) != 0) {
        o->failed = 1;
        return;
    }

    p = o->buf + o->len;
    *p++ = '"';

    for (i = 0; i < len; i++) {
        c = s[i];

        if (c >= 0x20 && c != '"' && c != '\\') {
            *p++ = (char) c;
            continue;
        }

        *p++ = '\\';

        switch (c) {
        case '"':  *p++ = '"';  break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b';  break;
        case '\f': *p++ = 'f';  break;
        case '\n': *p++ = 'n';  break;
        case '\r': *p++ = 'r';  break;
        case '\t': *p++ = 't';  break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];
        }
    }

    *p++ = '"';
    o->len = p - o->buf;
}


#define record_lit_str(o, key, s)                                             \
    record_key(o, key); record_lit(o, "\"" s "\"")


/*
 * "key": a copy of s, every byte of invalid UTF-8 as '?', scrubbed; none
 * when s is NULL
 */

static void
record_text(record_out_t *o, const char *key, const bottle_t *b,
    const bottle_str_t *s)
{
    unsigned char  *copy;

    if (s->data == NULL) {
        return;
    }

    copy = record_scratch(o, s->len ? s->len : 1);
    if (copy == NULL) {
        return;
    }

    if (s->len) {
        memcpy(copy, s->data, s->len);
    }

    /*
     * '?' first: a secret is then masked even where replaced bytes would
     * have made one; and again after, for a secret that is not UTF-8
     * itself (the policy's are) and was masked in the middle of a
     * character.
     */

    bottle_record_utf8_fix(copy, s->len);
    record_out_scrub(o, b, copy, s->len, 0);
    bottle_record_utf8_fix(copy, s->len);

    if (key) {
        record_key(o, key);
    }

    record_string(o, copy, s->len);
}


static void
record_time(record_out_t *o, const char *key, int64_t ms)
{
    char       buf[80];
    int        n;
    time_t     sec;
    struct tm  tm;

    sec = (time_t) (ms / 1000);

    if (gmtime_r(&sec, &tm) == NULL) {
        o->failed = 1;
        return;
    }

    n = snprintf(buf, sizeof(buf), "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int) (ms % 1000));

    if (n < 0 || (size_t) n >= sizeof(buf)) {
        o->failed = 1;
        return;
    }

    record_key(o, key);
    record_put(o, buf, n);
}


/*
 * [{"name": n, "value": v}]: credentials as "[scrubbed]" (drop 0) or left
 * out (drop 1), the rest scrubbed.
 */

static void
record_headers(record_out_t *o, const char *key, const bottle_record_t *rec,
    const bottle_record_header_t *h, size_t n, int drop)
{
    int           cred;
    size_t        i;
    bottle_str_t  s;

    record_key(o, key);
    record_lit(o, "[");

    for (i = 0; i < n; i++) {
        cred = bottle_record_credential(rec->route, h[i].name,
                                        h[i].name_len);

        if (cred && drop) {
            continue;
        }

        if (o->failed) {
            return;
        }

        /* a comma before every element but the first */

        if (o->buf[o->len - 1] == '[') {
            record_lit(o, "{");
        } else {
            record_lit(o, ",{");
        }

        s.data = h[i].name;
        s.len = h[i].name_len;
        record_text(o, "name", rec->bottle, &s);

        if (cred) {
            record_lit_str(o, "value", BOTTLE_RECORD_SCRUBBED);

        } else {
            s.data = h[i].value;
            s.len = h[i].value_len;
            record_text(o, "value", rec->bottle, &s);
        }

        record_lit(o, "}");
    }

    record_lit(o, "]");
}


/* the body's fields but its text: body_size, body_truncated, body_sha256 */

static void
record_body_fields(record_out_t *o, const bottle_record_body_t *body)
{
    size_t  i;
    char    hex[67];

    static const char  digits[] = "0123456789abcdef";

    if (!body->seen) {
        return;
    }

    record_int(o, "body_size", (int64_t) body->size);
    record_key(o, "body_truncated");

    if (body->size > body->len) {
        record_lit(o, "true");
    } else {
        record_lit(o, "false");
    }

    record_key(o, "body_sha256");

    if (!body->has_sha256) {
        record_lit(o, "null");
        return;
    }

    hex[0] = '"';

    for (i = 0; i < 32; i++) {
        hex[1 + 2 * i] = digits[body->sha256[i] >> 4];
        hex[2 + 2 * i] = digits[body->sha256[i] & 0xf];
    }

    hex[65] = '"';
    record_put(o, hex, 66);
}


/*
 * 1 if one of the RECORD_BLOCK bytes at p is one record_escape() writes as
 * more than itself: SSE2 where the compiler has it (x86-64 always), else
 * a word at a time.
 */

#if defined(__SSE2__)

#define RECORD_BLOCK  16

static inline int
record_block_escapes(const unsigned char *p)
{
    __m128i  v, e;

    v = _mm_loadu_si128((const __m128i *) p);

    /* max(v, 0x1f) == 0x1f: v <= 0x1f, unsigned */
    e = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)),
                       _mm_set1_epi8(0x1f));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    e = _mm_or_si128(e, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));

    return _mm_movemask_epi8(e) != 0;
}

#else

#define RECORD_BLOCK  8

static inline int
record_block_escapes(const unsigned char *p)
{
    uint64_t  w = record_word(p);

    return record_word_escapes(w) != 0;
}

#endif


/*
 * A body's text as a JSON string: '"', '\' and controls (and DEL) escaped
 * as \u00xx but for the first two, the rest as it is.  One pass: blocks
 * with nothing to escape are copied whole, the others byte by byte, the
 * room checked before each block for its worst case.
 */

static void
record_escape(record_out_t *o, const unsigned char *in, size_t len)
{
    char      *p;
    size_t     i, k, end;
    unsigned   c;

    static const char  hex[] = "0123456789abcdef";

    if (record_room(o, 1) != 0) {
        return;
    }

    o->buf[o->len++] = '"';

    for (i = 0; i < len; i = end) {
        end = (len - i >= RECORD_BLOCK) ? i + RECORD_BLOCK : len;

        /* the block's worst case, and the closing quote: inline, as the
           buffer was sized for the text, then by record_room() */

        if (o->cap - o->len < 6 * RECORD_BLOCK + 1 + o->tail + 1
            && record_room(o, 6 * RECORD_BLOCK + 1) != 0)
        {
            return;
        }

        p = o->buf + o->len;

        if (end - i == RECORD_BLOCK && !record_block_escapes(in + i)) {
            memcpy(p, in + i, RECORD_BLOCK);
            o->len += RECORD_BLOCK;
            continue;
        }

        for (k = i; k < end; k++) {
            c = in[k];

            if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
                *p++ = (char) c;

            } else if (c == '"' || c == '\\') {
                *p++ = '\\';
                *p++ = (char) c;

            } else {
                *p++ = '\\';
                *p++ = 'u';
                *p++ = '0';
                *p++ = '0';
                *p++ = hex[c >> 4];
                *p++ = hex[c & 0xf];
            }
        }

        o->len = p - o->buf;
    }

    if (record_room(o, 1) != 0) {
        return;
    }

    o->buf[o->len++] = '"';
}


/*
 * The body's first bytes, scrubbed, as "body" (UTF-8 text) or
 * "body_base64": the last member of its object.
 */

static void
record_body_text(record_out_t *o, const bottle_t *b,
    const bottle_record_body_t *body)
{
    int             whole;
    size_t          ok, cut, n;
    unsigned char  *copy;

    if (!body->seen) {
        return;
    }

    cut = body->size > body->len;

    copy = record_scratch(o, body->len ? body->len : 1);
    if (copy == NULL) {
        return;
    }

    if (body->len) {
        memcpy(copy, body->data, body->len);
    }

    record_out_scrub(o, b, copy, body->len, (int) cut);

    ok = bottle_record_utf8(copy, body->len, (int) cut, &whole);

    if (whole) {
        record_key(o, "body");
        record_escape(o, copy, ok);
        return;
    }

    if (body->len > INT32_MAX / 2) {
        o->failed = 1;
        return;
    }

    n = 4 * ((body->len + 2) / 3);

    record_key(o, "body_base64");

    /* EVP_EncodeBlock() ends with a NUL: the closing quote's place */

    if (record_room(o, n + 2) != 0) {
        return;
    }

    o->buf[o->len] = '"';
    EVP_EncodeBlock((unsigned char *) o->buf + o->len + 1, copy,
                    (int) body->len);
    o->buf[o->len + n + 1] = '"';
    o->len += n + 2;
}


/* the record's text, NUL-terminated; or -1, and nothing is kept */

static int
record_done(record_out_t *o, char **out, size_t *out_len)
{
    free(o->scratch);
    bottle_record_scrub_free(&o->scrub);

    if (o->failed) {
        free(o->buf);
        return -1;
    }

    o->buf[o->len] = '\0';

    *out = o->buf;
    *out_len = o->len;

    return 0;
}


int
bottle_record_full(char **out, size_t *out_len, const bottle_record_t *rec,
    int response)
{
    size_t                       size;
    bottle_str_t                 id;
    record_out_t                 o;
    const bottle_record_body_t  *body;
    const bottle_t  *b = rec->bottle;

    size = 2048;
    body = response ? &rec->resp_body : &rec->body;

    if (body->seen && body->len < SIZE_MAX / 2) {
        size += body->len + body->len / 8;
    }

    if (record_out_init(&o, size) != 0) {
        return -1;
    }

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    record_lit(&o, "{");

    if (response) {
        record_lit_str(&o, "type", "response");
    } else {
        record_lit_str(&o, "type", "request");
    }

    record_time(&o, "time", response ? rec->end_ms : rec->start_ms);
    record_text(&o, "request_id", NULL, &rec->request_id);
    record_text(&o, "bottle", NULL, &id);
    record_text(&o, "host", NULL, &rec->host);
    record_int(&o, "port", rec->port);

    if (response) {
        record_int(&o, "status", rec->status);
        record_int(&o, "duration_ms", rec->end_ms - rec->start_ms);
        record_headers(&o, "headers", rec, rec->resp_headers,
                       rec->nresp_headers, 0);
        record_body_fields(&o, &rec->resp_body);
        record_int(&o, "length", (int64_t) rec->response_length);
        record_body_text(&o, b, &rec->resp_body);

    } else {
        record_text(&o, "method", NULL, &rec->method);
        record_text(&o, "scheme", NULL, &rec->scheme);
        record_text(&o, "path", b, &rec->path);
        record_text(&o, "query", b, &rec->query);
        record_headers(&o, "headers", rec, rec->headers, rec->nheaders, 0);
        record_body_fields(&o, &rec->body);

        if (rec->allowed) {
            record_lit_str(&o, "verdict", "allowed");
        } else {
            record_lit_str(&o, "verdict", "refused");
        }

        record_text(&o, "rule", NULL, &rec->rule);
        record_text(&o, "reason", NULL, &rec->reason);
        record_body_text(&o, b, &rec->body);
    }

    record_lit(&o, "}");

    return record_done(&o, out, out_len);
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


/* "1.2.3.4:443", "[::1]:80": dst_endpoint.ip, if dialled */

static void
record_ocsf_dst_ip(record_out_t *o, const bottle_str_t *addr)
{
    size_t        len;
    bottle_str_t  ip;

    if (addr->data == NULL || addr->len == 0) {
        return;
    }

    for (len = addr->len; len > 0 && addr->data[len - 1] != ':'; len--) {
        /* void */
    }

    if (len < 2) {
        return;
    }

    len--;
    ip.data = addr->data;

    if (ip.data[0] == '[' && ip.data[len - 1] == ']') {
        ip.data++;
        len -= 2;
    }

    ip.len = len;

    record_text(o, "ip", NULL, &ip);
}


/* the OCSF record; its shape is docs/firehose.md's */

static void
record_ocsf_write(record_out_t *o, const bottle_record_t *rec, int metadata)
{
    int              activity, success;
    bottle_str_t     id;
    const bottle_t  *b = rec->bottle;

    activity = bottle_record_ocsf_activity(rec->method.data, rec->method.len);
    success = rec->allowed && rec->status < 400;

    record_lit(o, "{\"metadata\":{\"product\":{\"name\":\"ngx_bottle\","
               "\"vendor_name\":\"bot-bottle\"},\"version\":\""
               BOTTLE_OCSF_VERSION "\"},\"http_response\":{");
    record_int(o, "code", rec->status);
    record_int(o, "length", (int64_t) rec->response_length);

    record_lit(o, "},\"dst_endpoint\":{");
    record_text(o, "hostname", NULL, &rec->host);
    record_int(o, "port", rec->port);
    record_ocsf_dst_ip(o, &rec->dst_addr);

    record_lit(o, "},\"src_endpoint\":{");
    record_text(o, "ip", NULL, &rec->src_ip);
    record_int(o, "port", rec->src_port);
    record_lit(o, "}");

    record_int(o, "class_uid", BOTTLE_OCSF_CLASS);
    record_int(o, "category_uid", BOTTLE_OCSF_CATEGORY);
    record_int(o, "activity_id", activity);
    record_int(o, "type_uid", BOTTLE_OCSF_CLASS * 100 + activity);
    record_int(o, "time", rec->start_ms);
    record_int(o, "start_time", rec->start_ms);
    record_int(o, "end_time", rec->end_ms);
    record_int(o, "duration", rec->end_ms - rec->start_ms);
    record_int(o, "severity_id", rec->allowed ? 1 : 3);
    record_int(o, "action_id", rec->allowed ? 1 : 2);

    if (rec->allowed) {
        record_lit(o, ",\"action\":\"Allowed\",\"disposition_id\":1,"
                   "\"disposition\":\"Allowed\"");
    } else {
        record_lit(o, ",\"action\":\"Denied\",\"disposition_id\":2,"
                   "\"disposition\":\"Blocked\"");
    }

    if (success) {
        record_lit(o, ",\"status_id\":1,\"status\":\"Success\"");
    } else {
        record_lit(o, ",\"status_id\":2,\"status\":\"Failure\"");
    }

    record_lit(o, ",\"http_request\":{\"url\":{");
    record_text(o, "hostname", NULL, &rec->host);
    record_int(o, "port", rec->port);
    record_text(o, "scheme", NULL, &rec->scheme);

    if (!metadata) {
        record_text(o, "path", b, &rec->path);
        record_text(o, "query_string", b, &rec->query);
    }

    record_lit(o, "}");
    record_int(o, "length", (int64_t) rec->request_length);

    if (!metadata) {
        record_text(o, "http_method", NULL, &rec->method);
        record_text(o, "user_agent", b, &rec->user_agent);
        record_headers(o, "http_headers", rec, rec->headers, rec->nheaders,
                       1);
    }

    record_lit(o, "},\"unmapped\":{");

    id.data = b ? b->id.data : NULL;
    id.len = b ? b->id.len : 0;

    record_text(o, "bottle", NULL, &id);
    record_text(o, "rule", NULL, &rec->rule);
    record_text(o, "request_id", NULL, &rec->request_id);

    if (metadata) {
        record_lit_str(o, "firehose", "metadata");

    } else {
        record_text(o, "reason", NULL, &rec->reason);
        record_lit_str(o, "firehose", "full");
        record_body_fields(o, &rec->body);
        record_body_text(o, b, &rec->body);
    }

    record_lit(o, "}}");
}


int
bottle_record_ocsf(char **out, size_t *out_len, const bottle_record_t *rec,
    int metadata)
{
    bottle_record_batch_t  b;

    memset(&b, 0, sizeof(bottle_record_batch_t));

    /* room for the NUL */

    if (bottle_record_ocsf_append(&b, rec, metadata, 1) != 0) {
        free(b.buf);
        return -1;
    }

    b.buf[b.len] = '\0';

    *out = b.buf;
    *out_len = b.len;

    return 0;
}


int
bottle_record_ocsf_append(bottle_record_batch_t *b,
    const bottle_record_t *rec, int metadata, size_t room)
{
    size_t        size;
    record_out_t  o;

    if (room > 4096) {
        return -1;
    }

    /* a text body is about its own size: most records need no realloc() */

    size = 2048;

    if (!metadata && rec->body.seen && rec->body.len < SIZE_MAX / 2) {
        size += rec->body.len + rec->body.len / 8;
    }

    memset(&o, 0, sizeof(record_out_t));
    o.buf = b->buf;
    o.len = b->len;
    o.cap = b->cap;
    o.tail = room;

    if (record_room(&o, size) == 0) {
        record_ocsf_write(&o, rec, metadata);
    }

    free(o.scratch);
    bottle_record_scrub_free(&o.scrub);

    /* the buffer is the caller's whatever happened: it may have moved */

    b->buf = o.buf;
    b->cap = o.cap;

    if (o.failed) {
        return -1;
    }

    b->len = o.len;

    return 0;
}
