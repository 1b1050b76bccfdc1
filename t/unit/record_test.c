/*
 * Unit tests for the request records (lib/bottle_record.c): scrubbing,
 * credential headers, the full log's lines and the firehose's OCSF record.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "tap.h"
#include "bottle_record.h"


#define S(s)  { (s), sizeof(s) - 1 }


static bottle_secret_t  tokens[] = { { S("API"), S("secret-api-value-1") } };
static bottle_secret_t  held[] = { { S("H"), S("held-value-22") } };


static void
make_bottle(bottle_t *b, bottle_route_t *route)
{
    memset(b, 0, sizeof(*b));
    memset(route, 0, sizeof(*route));

    b->id.data = "alice";
    b->id.len = 5;
    b->canary.data = "CANARY-123456";
    b->canary.len = 13;
    b->egress_tokens = tokens;
    b->negress_tokens = 1;
    b->held_secrets = held;
    b->nheld_secrets = 1;

    route->auth_header.data = "x-custom-key";
    route->auth_header.len = 12;
}


static char *
scrub(const bottle_t *b, const char *s, int cut)
{
    char  *copy = strdup(s);

    bottle_record_scrub(b, (unsigned char *) copy, strlen(copy), cut);
    return copy;
}


static void
test_scrub(void)
{
    char      *s;
    bottle_t   b;
    bottle_route_t  route;

    make_bottle(&b, &route);

    s = scrub(&b, "a CANARY-123456 b secret-api-value-1 c held-value-22", 0);
    is_str(s, "a ************* b ****************** c *************",
           "canary, egress token, held secret masked");
    free(s);

    s = scrub(&b, "secret-api-value-1secret-api-value-1", 0);
    is_str(s, "************************************", "back to back");
    free(s);

    s = scrub(&b, "xx secret-api-val", 1);
    is_str(s, "xx **************", "cut: a tail that begins a secret");
    free(s);

    s = scrub(&b, "xx secret-api-val", 0);
    is_str(s, "xx secret-api-val", "not cut: a tail is left");
    free(s);

    s = scrub(&b, "secret-api-value-", 1);
    is_str(s, "*****************", "cut: all of it begins a secret");
    free(s);

    s = scrub(NULL, "CANARY-123456", 0);
    is_str(s, "CANARY-123456", "no bottle: nothing to mask");
    free(s);

    ok(bottle_record_credential(NULL, "Authorization", 13)
       && bottle_record_credential(NULL, "PROXY-authorization", 19)
       && bottle_record_credential(NULL, "cookie", 6)
       && bottle_record_credential(NULL, "Set-Cookie", 10),
       "credential headers, any case");
    ok(!bottle_record_credential(NULL, "X-Custom-Key", 12)
       && bottle_record_credential(&route, "X-Custom-Key", 12),
       "the route's auth header");
    ok(bottle_record_credential(NULL, "Private-Token", 13)
       && bottle_record_credential(NULL, "x-api-key", 9),
       "the headers the gateway strips as credentials");
    route.preserve_auth = 1;
    ok(bottle_record_credential(&route, "Private-Token", 13),
       "also on a preserve_auth route");
    route.preserve_auth = 0;
    ok(!bottle_record_credential(NULL, "X-Note", 6), "others are not");
}


static json_t *
parse(char *s)
{
    json_t        *j;
    json_error_t   e;

    j = json_loads(s, 0, &e);
    free(s);
    return j;
}


static const char *
header_of(json_t *headers, const char *name)
{
    size_t   i;
    json_t  *h;

    json_array_foreach(headers, i, h) {
        if (strcmp(json_string_value(json_object_get(h, "name")), name) == 0) {
            return json_string_value(json_object_get(h, "value"));
        }
    }

    return NULL;
}


static void
test_records(void)
{
    char                    *out;
    size_t                   len;
    json_t                  *j, *u;
    bottle_t                 b;
    bottle_route_t           route;
    bottle_record_t          rec;
    bottle_record_header_t   h[4];

    static const unsigned char  bin[] = { 0xff, 0xfe, 0x00, 0x01 };

    make_bottle(&b, &route);
    memset(&rec, 0, sizeof(rec));

    h[0] = (bottle_record_header_t) { "Authorization", 13, "Bearer x", 8 };
    h[1] = (bottle_record_header_t) { "Cookie", 6, "s=1", 3 };
    h[2] = (bottle_record_header_t) { "X-Note", 6, "has CANARY-123456", 17 };
    h[3] = (bottle_record_header_t) { "X-Bad", 5, "a\xff" "b", 3 };

    rec.start_ms = 1796133361250;
    rec.end_ms = 1796133361262;
    rec.bottle = &b;
    rec.route = &route;
    rec.method = (bottle_str_t) S("PATCH");
    rec.scheme = (bottle_str_t) S("https");
    rec.host = (bottle_str_t) S("api.example.com");
    rec.port = 443;
    rec.path = (bottle_str_t) S("/p/secret-api-value-1");
    rec.query = (bottle_str_t) S("k=held-value-22");
    rec.src_ip = (bottle_str_t) S("10.0.0.7");
    rec.dst_addr = (bottle_str_t) S("[::1]:443");
    rec.headers = h;
    rec.nheaders = 4;
    rec.body.data = bin;
    rec.body.len = 4;
    rec.body.size = 100;
    rec.body.seen = 1;
    rec.allowed = 0;
    rec.rule = (bottle_str_t) S("canary");
    rec.status = 403;

    ok(bottle_record_full(&out, &len, &rec, 0) == 0, "full: request line");
    ok(strchr(out, '\n') == NULL, "full: one line");
    j = parse(out);
    ok(j != NULL, "full: JSON");
    is_str(json_string_value(json_object_get(j, "time")),
           "2026-12-01T13:56:01.250Z", "full: time");
    is_str(json_string_value(json_object_get(j, "path")),
           "/p/******************", "full: path masked");
    is_str(json_string_value(json_object_get(j, "query")),
           "k=*************", "full: query masked");
    is_str(header_of(json_object_get(j, "headers"), "Authorization"),
           "[scrubbed]", "full: credential [scrubbed]");
    is_str(header_of(json_object_get(j, "headers"), "X-Note"),
           "has *************", "full: a header value masked");
    is_str(header_of(json_object_get(j, "headers"), "X-Bad"),
           "a?b", "full: invalid UTF-8 as ?");
    is_str(json_string_value(json_object_get(j, "body_base64")), "//4AAQ==",
           "full: a binary body in base64");
    ok(json_is_true(json_object_get(j, "body_truncated")),
       "full: truncated, size over what is kept");
    ok(json_is_null(json_object_get(j, "body_sha256")),
       "full: no hash: null");
    is_str(json_string_value(json_object_get(j, "verdict")), "refused",
           "full: verdict");
    json_decref(j);

    ok(bottle_record_ocsf(&out, &len, &rec, 0) == 0, "ocsf: full");
    j = parse(out);
    is_int(json_integer_value(json_object_get(j, "class_uid")), 4002,
           "ocsf: class 4002");
    is_int(json_integer_value(json_object_get(j, "activity_id")), 99,
           "ocsf: PATCH is other");
    is_int(json_integer_value(json_object_get(j, "type_uid")), 400299,
           "ocsf: type_uid");
    is_str(json_string_value(json_object_get(j, "disposition")), "Blocked",
           "ocsf: refused is blocked");
    is_str(json_string_value(json_object_get(
               json_object_get(j, "dst_endpoint"), "ip")), "::1",
           "ocsf: dst ip out of [::1]:443");
    ok(header_of(json_object_get(json_object_get(j, "http_request"),
                                 "http_headers"), "Authorization") == NULL
       && header_of(json_object_get(json_object_get(j, "http_request"),
                                    "http_headers"), "Cookie") == NULL,
       "ocsf: credentials dropped");
    u = json_object_get(j, "unmapped");
    is_str(json_string_value(json_object_get(u, "bottle")), "alice",
           "ocsf: unmapped.bottle");
    ok(json_object_get(u, "body_size") != NULL, "ocsf full: the body");
    json_decref(j);

    ok(bottle_record_ocsf(&out, &len, &rec, 1) == 0, "ocsf: metadata");
    ok(strstr(out, "/p/") == NULL && strstr(out, "X-Note") == NULL
       && strstr(out, "body") == NULL && strstr(out, "PATCH") == NULL,
       "ocsf metadata: no path, headers, body or method");
    j = parse(out);
    is_str(json_string_value(json_object_get(json_object_get(j, "unmapped"),
                                             "firehose")), "metadata",
           "ocsf metadata: the level");
    json_decref(j);

    is_int(bottle_record_ocsf_activity("GET", 3), 3, "GET is 3");
    is_int(bottle_record_ocsf_activity("CONNECT", 7), 1, "CONNECT is 1");
    is_int(bottle_record_ocsf_activity("GETX", 4), 99, "GETX is other");
}


/*
 * What the writer escapes, and where: quotes, backslashes and controls in
 * a header and in a body come back as they were; a long text body (the
 * word-at-a-time path) with a secret and escapes spread through it; the
 * batch holds the same bytes, one record after another.
 */

static void
test_writer(void)
{
    char                    *out, *big, *want;
    size_t                   len, i, n, first;
    bottle_record_batch_t    batch;
    json_t                  *j, *u;
    bottle_t                 b;
    bottle_route_t           route;
    bottle_record_t          rec;
    bottle_record_header_t   h[1];

    static const char  body[] = "a\"b\\c\n\x01\x7f\td\xc3\xa9";

    make_bottle(&b, &route);
    memset(&rec, 0, sizeof(rec));

    h[0] = (bottle_record_header_t) { "X-Q", 3, "say \"hi\"\\\r\x02", 11 };

    rec.bottle = &b;
    rec.route = &route;
    rec.method = (bottle_str_t) S("POST");
    rec.host = (bottle_str_t) S("h.test");
    rec.headers = h;
    rec.nheaders = 1;
    rec.body.data = (const unsigned char *) body;
    rec.body.len = sizeof(body) - 1;
    rec.body.size = sizeof(body) - 1;
    rec.body.seen = 1;
    rec.allowed = 1;
    rec.status = 200;

    ok(bottle_record_ocsf(&out, &len, &rec, 0) == 0, "writer: a record");
    ok(strlen(out) == len, "writer: NUL-terminated, its length");
    j = parse(out);
    ok(j != NULL, "writer: JSON");
    is_str(header_of(json_object_get(json_object_get(j, "http_request"),
                                     "http_headers"), "X-Q"),
           "say \"hi\"\\\r\x02", "writer: a header's escapes");
    u = json_object_get(j, "unmapped");
    is_str(json_string_value(json_object_get(u, "body")), body,
           "writer: a body's escapes");
    json_decref(j);

    /* 100 KB of text, a secret and escapes here and there, cut at 64 KiB */

    n = 100000;
    big = malloc(n + 1);
    want = malloc(n + 1);
    for (i = 0; i < n; i++) {
        big[i] = "the quick brown fox "[i % 20];
    }
    for (i = 1000; i + 40 < n; i += 7919) {
        memcpy(big + i, "\"q\"\\\tsecret-api-value-1", 23);
    }
    big[n] = '\0';
    memcpy(want, big, n + 1);
    bottle_record_scrub(&b, (unsigned char *) want, 65536, 1);
    want[65536] = '\0';

    rec.body.data = (const unsigned char *) big;
    rec.body.len = 65536;
    rec.body.size = n;

    ok(bottle_record_full(&out, &len, &rec, 0) == 0, "writer: a long body");
    j = parse(out);
    is_str(json_string_value(json_object_get(j, "body")), want,
           "writer: a long body's text, escaped and masked");
    ok(strstr(want, "secret-api") == NULL && strstr(want, "*****") != NULL,
       "writer: the secret masked in it");
    json_decref(j);

    /* a batch: room before, two records with a newline between */

    memset(&batch, 0, sizeof(bottle_record_batch_t));
    batch.len = 60;
    batch.buf = malloc(60);
    batch.cap = 60;

    ok(bottle_record_ocsf(&out, &len, &rec, 0) == 0
       && bottle_record_ocsf_append(&batch, &rec, 0, 2) == 0,
       "batch: a record appended");
    first = batch.len;
    ok(first == 60 + len && memcmp(batch.buf + 60, out, len) == 0
       && batch.cap >= batch.len + 2,
       "batch: the record's bytes after the room, and room after it");
    batch.buf[batch.len++] = '\n';
    ok(bottle_record_ocsf_append(&batch, &rec, 1, 2) == 0,
       "batch: a second record appended");
    free(out);
    ok(bottle_record_ocsf(&out, &len, &rec, 1) == 0
       && batch.len == first + 1 + len
       && memcmp(batch.buf + first + 1, out, len) == 0
       && batch.buf[first] == '\n',
       "batch: the second record's bytes after the first's newline");
    free(out);

    ok(bottle_record_ocsf_append(&batch, &rec, 0, 5000) == -1
       && batch.len == first + 1 + len,
       "batch: room over 4096 refused, and the batch as it was");
    free(batch.buf);

    free(big);
    free(want);
}


/* the longest run of '*' in s */

static size_t
stars(const char *s)
{
    size_t  run, best;

    for (run = 0, best = 0; *s; s++) {
        run = (*s == '*') ? run + 1 : 0;
        best = (run > best) ? run : best;
    }

    return best;
}


/*
 * Encoded forms: a secret's base64 (both alphabets, the three alignments)
 * and percent-encodings are masked too, in a header and in a long body;
 * base64 that is not of a secret, and a value too short for base64 forms,
 * are left.
 */

static void
test_encoded(void)
{
    int             k, url, all_ok;
    char           *s, buf[256], enc[128];
    size_t          i, n, fixed;
    bottle_t        b;
    bottle_route_t  route;
    unsigned char   raw[64];

    static bottle_secret_t  tok[] = { { S("T"), S("tok/en+value=123") } };

    make_bottle(&b, &route);
    b.egress_tokens = tok;

    /* base64 of (k filler bytes, the secret, a tail), std and url */

    all_ok = 1;

    for (url = 0; url < 2; url++) {
        for (k = 0; k < 3; k++) {
            n = 0;
            memcpy(raw, "\x01\x02", (size_t) k);
            n += k;
            memcpy(raw + n, "tok/en+value=123", 16);
            n += 16;
            memcpy(raw + n, "!!", 2);
            n += 2;

            EVP_EncodeBlock((unsigned char *) enc, raw, (int) n);

            if (url) {
                for (i = 0; enc[i]; i++) {
                    enc[i] = (enc[i] == '+') ? '-'
                             : (enc[i] == '/') ? '_' : enc[i];
                }
            }

            snprintf(buf, sizeof(buf), "x=%s y", enc);
            s = scrub(&b, buf, 0);

            /* the characters the secret alone fixes: 16 * 8 / 6 - 2 */
            fixed = stars(s);
            if (fixed < 16 * 8 / 6 - 2) {
                fprintf(stderr, "# base64 url %d alignment %d: %s\n", url, k,
                        s);
                all_ok = 0;
            }

            free(s);
        }
    }

    ok(all_ok, "base64 of a secret masked: both alphabets, three alignments");

    s = scrub(&b, "a=%74%6F%6B%2F%65%6E%2B%76%61%6C%75%65%3D%31%32%33&b", 0);
    is_str(s, "a=************************************************&b",
           "percent-encoded, every byte, upper case");
    free(s);

    s = scrub(&b, "%74%6f%6b%2f%65%6e%2b%76%61%6c%75%65%3d%31%32%33", 0);
    is_int(stars(s), 48, "percent-encoded, lower case");
    free(s);

    s = scrub(&b, "q=tok%2Fen%2Bvalue%3D123&r=1", 0);
    is_str(s, "q=**********************&r=1",
           "percent-encoded as a URL component");
    free(s);

    s = scrub(&b, "q=tok%2fen%2bvalue%3d123", 0);
    is_int(stars(s), 22, "as a URL component, lower case");
    free(s);

    s = scrub(&b, "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ= dG9rL2Vu", 0);
    is_str(s, "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ= dG9rL2Vu",
           "base64 of something else, or too little of a secret: left");
    free(s);

    /* held-value-22: 13 bytes, base64 forms; CANARY-123456 too */

    EVP_EncodeBlock((unsigned char *) enc, (const unsigned char *)
                    "held-value-22", 13);
    snprintf(buf, sizeof(buf), "{\"k\":\"%s\"}", enc);
    s = scrub(&b, buf, 0);
    ok(stars(s) >= 13 * 8 / 6 - 1, "a held secret's base64 masked");
    free(s);

    /* a long body: the run search (blocks), a form at the cut */

    {
        char    *body, *tail;
        size_t   len = 70000;

        body = malloc(len + 1);
        for (i = 0; i < len; i++) {
            body[i] = "lorem ipsum dolor "[i % 18];
        }
        body[len] = '\0';

        EVP_EncodeBlock((unsigned char *) enc,
                        (const unsigned char *) "tok/en+value=123", 16);
        memcpy(body + 30000, enc, strlen(enc));
        memcpy(body + 50001, "tok%2Fen%2Bvalue%3D123", 22);

        bottle_record_scrub(&b, (unsigned char *) body, len, 0);
        ok(strstr(body, "dG9rL2Vu") == NULL
           && strstr(body, "tok%2F") == NULL, "a long body: both masked");

        /* the cut leaves the first 10 characters of the base64 */
        memcpy(body + len - 10, enc, 10);
        bottle_record_scrub(&b, (unsigned char *) body, len, 1);
        tail = body + len - 10;
        is_str(tail, "**********", "a long body: a form the cut splits");

        /* fewer than four: a word that merely begins one is left */
        memcpy(body + len - 3, " dG", 3);
        bottle_record_scrub(&b, (unsigned char *) body, len, 1);
        is_str(body + len - 3, " dG", "a long body: three characters left");

        free(body);
    }

    /* hex, %25XX (percent-encoded twice), JSON \u00XX: what the DLP decodes */

    s = scrub(&b, "p=746f6b2f656e2b76616c75653d313233&q", 0);
    is_str(s, "p=********************************&q", "hex, lower case");
    free(s);

    s = scrub(&b, "/746F6B2F656E2B76616C75653D313233/", 0);
    is_int(stars(s), 32, "hex, upper case");
    free(s);

    s = scrub(&b, "%2574%256F%256B%252F%2565%256E%252B%2576%2561%256C%2575"
              "%2565%253D%2531%2532%2533", 0);
    is_int(stars(s), 80, "percent-encoded twice");
    free(s);

    s = scrub(&b, "{\"k\":\"\\u0074\\u006f\\u006b\\u002f\\u0065\\u006e"
              "\\u002b\\u0076\\u0061\\u006c\\u0075\\u0065\\u003d"
              "\\u0031\\u0032\\u0033\"}", 0);
    is_str(s, "{\"k\":\"************************************************"
           "************************************************\"}",
           "JSON \\u00XX escapes, lower case");
    free(s);

    s = scrub(&b, "\\u0074\\u006F\\u006B\\u002F\\u0065\\u006E\\u002B"
              "\\u0076\\u0061\\u006C\\u0075\\u0065\\u003D\\u0031"
              "\\u0032\\u0033", 0);
    is_int(stars(s), 96, "JSON \\u00XX escapes, upper case");
    free(s);

    /* hex of a value of 4 bytes or more only: shorter is any hex text */
    {
        static bottle_secret_t  shorts[] = {
            { S("S3"), S("abc") }, { S("S4"), S("wxyz") }
        };

        bottle_t  b2 = b;

        b2.egress_tokens = shorts;
        b2.negress_tokens = 2;

        s = scrub(&b2, "id 616263 and 7778797a", 0);
        is_str(s, "id 616263 and ********",
               "hex: of a value of 4 bytes or more only");
        free(s);
    }

    s = scrub(&b, "deadbeef 746f6b2f656e2b76 \\u0074\\u006f", 0);
    is_str(s, "deadbeef 746f6b2f656e2b76 \\u0074\\u006f",
           "hex or escapes of a part of a secret: left");
    free(s);
}


/* the digest every record names: "sha256:" and 16 hex digits */

static void
test_digest(void)
{
    char           out[BOTTLE_RECORD_DIGEST_SIZE];
    unsigned char  md[32];
    size_t         i;

    for (i = 0; i < 32; i++) {
        md[i] = (unsigned char) (0xa0 + i);
    }

    is_str(bottle_record_digest(out, md), "sha256:a0a1a2a3a4a5a6a7",
           "short digest: sha256: and 16 hex digits");
    is_int(strlen(out), BOTTLE_RECORD_DIGEST_SIZE - 1, "short digest: size");
}


int
main(void)
{
    test_digest();
    test_scrub();
    test_records();
    test_writer();
    test_encoded();

    return done_testing();
}
