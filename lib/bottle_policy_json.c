/*
 * The policy parser's shared helpers: the arena every parsed string and
 * array lives in, error messages that name the file, the bottle and the
 * field path, quoting of policy values for those messages, ASCII string
 * checks, typed access to JSON values, and request method names.
 */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bottle_policy_int.h"


#define BOTTLE_ARENA_BLOCK   16384
#define BOTTLE_ARENA_ALIGN   16


static const char *const  bottle_j_names[] = {
    "a string", "a boolean", "an integer", "an array", "an object"
};


static const struct {
    const char         *name;
    unsigned            bit;
} bottle_methods[] = {
    { "GET", BOTTLE_M_GET },
    { "HEAD", BOTTLE_M_HEAD },
    { "POST", BOTTLE_M_POST },
    { "PUT", BOTTLE_M_PUT },
    { "PATCH", BOTTLE_M_PATCH },
    { "DELETE", BOTTLE_M_DELETE },
    { "OPTIONS", BOTTLE_M_OPTIONS },
    { "TRACE", BOTTLE_M_TRACE },
    { "PROPFIND", BOTTLE_M_PROPFIND },
    { "PROPPATCH", BOTTLE_M_PROPPATCH },
    { "MKCOL", BOTTLE_M_MKCOL },
    { "COPY", BOTTLE_M_COPY },
    { "MOVE", BOTTLE_M_MOVE },
    { "LOCK", BOTTLE_M_LOCK },
    { "UNLOCK", BOTTLE_M_UNLOCK },
    { "REPORT", BOTTLE_M_REPORT }
};


/* arena */

static void *
bottle_alloc(bottle_policy_t *p, size_t size)
{
    uintptr_t        base, start;
    size_t           need, min;
    bottle_block_t  *b;

    b = p->blocks;

    if (b != NULL) {
        base = (uintptr_t) (b + 1);
        start = (base + b->used + BOTTLE_ARENA_ALIGN - 1)
                & ~(uintptr_t) (BOTTLE_ARENA_ALIGN - 1);

        if (start - base <= b->size && size <= b->size - (start - base)) {
            b->used = start - base + size;
            return (void *) start;
        }
    }

    if (size > SIZE_MAX - sizeof(bottle_block_t) - 2 * BOTTLE_ARENA_ALIGN) {
        return NULL;
    }

    /*
     * A policy of one small bottle (the store holds one per key) starts
     * with a block its size, not a whole one, then doubles.
     */

    min = p->block_next ? p->block_next : BOTTLE_ARENA_BLOCK;

    need = size + BOTTLE_ARENA_ALIGN;
    if (need < min) {
        need = min;
    }

    if (p->block_next) {
        p->block_next = (min < BOTTLE_ARENA_BLOCK / 2) ? min * 2
                                                       : BOTTLE_ARENA_BLOCK;
    }

    /* zeroed, so parsed structures start with every field off */
    b = calloc(1, sizeof(bottle_block_t) + need);
    if (b == NULL) {
        return NULL;
    }

    b->next = p->blocks;
    b->size = need;
    p->blocks = b;

    base = (uintptr_t) (b + 1);
    start = (base + BOTTLE_ARENA_ALIGN - 1)
            & ~(uintptr_t) (BOTTLE_ARENA_ALIGN - 1);
    b->used = start - base + size;

    return (void *) start;
}


void *
bottle_alloc_array(bottle_policy_t *p, size_t n, size_t size)
{
    if (n == 0 || n > SIZE_MAX / size) {
        return NULL;
    }

    return bottle_alloc(p, n * size);
}


/* error messages */

int
bottle_fail(bottle_ctx_t *ctx, const char *fmt, ...)
{
    char     msg[512];
    va_list  ap;

    if (ctx->err == NULL || ctx->errlen == 0) {
        return -1;
    }

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    snprintf(ctx->err, ctx->errlen, "%s: %s%s%s%s%s", ctx->source,
             ctx->who, ctx->who[0] ? ": " : "",
             ctx->path, ctx->pathlen ? ": " : "", msg);

    return -1;
}


/* a value from the policy, quoted, shortened and escaped for a message */

const char *
bottle_quote(char *out, size_t cap, const char *s, size_t len)
{
    size_t         i, n;
    unsigned char  c;

    n = 0;
    out[n++] = '"';

    for (i = 0; i < len && n + 10 < cap; i++) {
        c = (unsigned char) s[i];

        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            n += (size_t) snprintf(out + n, cap - n, "\\x%02x", c);

        } else {
            out[n++] = (char) c;
        }
    }

    if (i < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }

    out[n++] = '"';
    out[n] = '\0';

    return out;
}


void
bottle_path_append(bottle_ctx_t *ctx, const char *fmt, ...)
{
    int      n;
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(ctx->path + ctx->pathlen, sizeof(ctx->path) - ctx->pathlen,
                  fmt, ap);
    va_end(ap);

    if (n > 0) {
        ctx->pathlen += (size_t) n;
        if (ctx->pathlen >= sizeof(ctx->path)) {
            ctx->pathlen = sizeof(ctx->path) - 1;
        }
    }
}


size_t
bottle_path_key(bottle_ctx_t *ctx, const char *key)
{
    size_t  saved;

    saved = ctx->pathlen;
    bottle_path_append(ctx, "%s%s", saved ? "." : "", key);

    return saved;
}


size_t
bottle_path_index(bottle_ctx_t *ctx, size_t i)
{
    size_t  saved;

    saved = ctx->pathlen;
    bottle_path_append(ctx, "[%zu]", i);

    return saved;
}


void
bottle_path_pop(bottle_ctx_t *ctx, size_t saved)
{
    ctx->pathlen = saved;
    ctx->path[saved] = '\0';
}


/* small string helpers; ASCII only, whatever the locale */

int
bottle_lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}


int
bottle_eq_nocase(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t  i;

    if (alen != blen) {
        return 0;
    }

    for (i = 0; i < alen; i++) {
        if (bottle_lower((unsigned char) a[i])
            != bottle_lower((unsigned char) b[i]))
        {
            return 0;
        }
    }

    return 1;
}


int
bottle_str_set(bottle_str_t *out, bottle_ctx_t *ctx, const char *s,
    size_t len, int lower)
{
    size_t  i;
    char   *p;

    p = bottle_alloc(ctx->policy, len + 1);
    if (p == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < len; i++) {
        p[i] = lower ? (char) bottle_lower((unsigned char) s[i]) : s[i];
    }

    p[len] = '\0';
    out->data = p;
    out->len = len;

    return 0;
}


int
bottle_has_ctl(const char *s, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) {
            return 1;
        }
    }

    return 0;
}


/* visible ASCII: no space, no control, no 8-bit */

int
bottle_is_visible(const char *s, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] <= 0x20 || (unsigned char) s[i] >= 0x7f) {
            return 0;
        }
    }

    return 1;
}


/* [A-Za-z_][A-Za-z0-9_]* */

int
bottle_name_ok(const char *s, size_t len)
{
    size_t  i;
    int     c;

    if (len == 0 || len > BOTTLE_NAME_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'
              || (i > 0 && c >= '0' && c <= '9')))
        {
            return 0;
        }
    }

    return 1;
}


/* ids and slugs name bottles in logs, variables and store keys */

int
bottle_id_ok(const char *s, size_t len)
{
    size_t  i;
    int     c;

    if (len == 0 || len > BOTTLE_ID_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9')
              || (c != '\0' && strchr("._:@-", c) != NULL)))
        {
            return 0;
        }
    }

    return 1;
}


/* an HTTP token (RFC 9110 tchar), as header names are */

int
bottle_token_ok(const char *s, size_t len)
{
    size_t  i;
    int     c;

    if (len == 0) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9')
              || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL)))
        {
            return 0;
        }
    }

    return 1;
}


/* labels of [A-Za-z0-9_-], 1..63, no '-' at either end, 253 in all */

int
bottle_hostname_ok(const char *s, size_t len)
{
    size_t  i, label;
    int     c;

    if (len == 0 || len > BOTTLE_HOST_MAX) {
        return 0;
    }

    label = 0;

    for (i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (label == 0 || label > BOTTLE_LABEL_MAX
                || s[i - label] == '-' || s[i - 1] == '-')
            {
                return 0;
            }

            label = 0;
            continue;
        }

        c = (unsigned char) s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        {
            return 0;
        }

        label++;
    }

    return 1;
}


size_t
bottle_hash_host(const char *s, size_t len)
{
    size_t    i;
    uint64_t  h;

    /* FNV-1a over the lowercased name */
    h = 14695981039346656037ULL;

    for (i = 0; i < len; i++) {
        h ^= (uint64_t) bottle_lower((unsigned char) s[i]);
        h *= 1099511628211ULL;
    }

    return (size_t) h;
}


size_t
bottle_table_size(size_t n)
{
    size_t  size;

    /* at most half full, so probe runs stay short */
    size = 8;
    while (size < 2 * n) {
        size <<= 1;
    }

    return size;
}


int
bottle_sha256(unsigned char *out, const void *data, size_t len)
{
    unsigned int  n;

    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != 32) {
        return -1;
    }

    return 0;
}


/* JSON access; every json_t here is a borrowed reference */

static int
bottle_j_is(json_t *v, int type)
{
    switch (type) {

    case BOTTLE_J_STRING:
        return json_is_string(v);

    case BOTTLE_J_BOOL:
        return json_is_boolean(v);

    case BOTTLE_J_INT:
        return json_is_integer(v);

    case BOTTLE_J_ARRAY:
        return json_is_array(v);

    default:
        return json_is_object(v);
    }
}


/* *out: borrowed obj[key] if present and of the type, else NULL */

int
bottle_get(json_t **out, bottle_ctx_t *ctx, json_t *obj, const char *key,
    int type, int required)
{
    json_t  *v;

    v = json_object_get(obj, key);     /* borrowed */
    *out = NULL;

    if (v == NULL) {
        if (!required) {
            return 0;
        }

        bottle_path_key(ctx, key);
        return bottle_fail(ctx, "required");
    }

    if (!bottle_j_is(v, type)) {
        bottle_path_key(ctx, key);
        return bottle_fail(ctx, "must be %s", bottle_j_names[type]);
    }

    *out = v;

    return 0;
}


int
bottle_check_fields(bottle_ctx_t *ctx, json_t *obj,
    const char *const *allowed)
{
    char         q[BOTTLE_QUOTE_LEN];
    void        *it;
    size_t       i;
    const char  *key;

    for (it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
        key = json_object_iter_key(it);    /* borrowed */

        for (i = 0; allowed[i] != NULL; i++) {
            if (strcmp(key, allowed[i]) == 0) {
                break;
            }
        }

        if (allowed[i] == NULL) {
            return bottle_fail(ctx, "unknown field %s",
                               bottle_quote(q, sizeof(q), key, strlen(key)));
        }
    }

    return 0;
}


int
bottle_get_bool(int *out, bottle_ctx_t *ctx, json_t *obj, const char *key)
{
    json_t  *v;

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_BOOL, 0) != 0) {
        return -1;
    }

    if (v != NULL) {
        *out = json_is_true(v);
    }

    return 0;
}


int
bottle_enum_index(const char *const *names, const char *s, size_t len)
{
    int  i;

    for (i = 0; names[i] != NULL; i++) {
        if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) {
            return i;
        }
    }

    return -1;
}


/* *out: index of the string in names[first..]; unchanged if absent */

int
bottle_get_enum(int *out, bottle_ctx_t *ctx, json_t *obj, const char *key,
    const char *const *names, int first)
{
    int      i;
    char     q[BOTTLE_QUOTE_LEN], list[160];
    size_t   n;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_STRING, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    i = bottle_enum_index(names, json_string_value(v), json_string_length(v));

    if (i >= first) {
        *out = i;
        return 0;
    }

    n = 0;
    list[0] = '\0';

    for (i = first; names[i] != NULL && n < sizeof(list); i++) {
        n += (size_t) snprintf(list + n, sizeof(list) - n, "%s\"%s\"",
                               i > first ? ", " : "", names[i]);
    }

    bottle_path_key(ctx, key);

    return bottle_fail(ctx, "%s is not one of %s",
                       bottle_quote(q, sizeof(q), json_string_value(v),
                                    json_string_length(v)),
                       list);
}


/* methods */

unsigned
bottle_method_bit(const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < sizeof(bottle_methods) / sizeof(bottle_methods[0]); i++) {
        if (strlen(bottle_methods[i].name) == len
            && memcmp(bottle_methods[i].name, name, len) == 0)
        {
            return bottle_methods[i].bit;
        }
    }

    return 0;
}


/* policy side: method names are accepted in any case */

static unsigned
bottle_method_bit_nocase(const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < sizeof(bottle_methods) / sizeof(bottle_methods[0]); i++) {
        if (bottle_eq_nocase(bottle_methods[i].name,
                             strlen(bottle_methods[i].name), name, len))
        {
            return bottle_methods[i].bit;
        }
    }

    return 0;
}


int
bottle_parse_methods(unsigned *out, bottle_ctx_t *ctx, json_t *obj)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, n, len, saved;
    json_t      *v, *item;
    unsigned     m, bit;
    const char  *s;

    if (bottle_get(&v, ctx, obj, "methods", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "methods");

    n = json_array_size(v);
    if (n == 0) {
        return bottle_fail(ctx, "must not be empty (omit it for read-only)");
    }

    m = 0;

    for (i = 0; i < n; i++) {
        item = json_array_get(v, i);       /* borrowed */
        if (!json_is_string(item)) {
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "must be a string");
        }

        s = json_string_value(item);
        len = json_string_length(item);

        if (len == 1 && s[0] == '*') {
            if (n != 1) {
                return bottle_fail(ctx, "\"*\" must be the only entry");
            }

            m = BOTTLE_M_ANY;
            continue;
        }

        bit = bottle_method_bit_nocase(s, len);
        if (bit == 0) {
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "%s is not a known method",
                               bottle_quote(q, sizeof(q), s, len));
        }

        m |= bit;
    }

    *out = m;
    bottle_path_pop(ctx, saved);

    return 0;
}
