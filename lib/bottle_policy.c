/*
 * The bottle policy model: JSON parsing and validation (schema in
 * docs/policy.md), the compiled immutable form, and the lookups the
 * gateway makes per request.
 *
 * Parsing is strict: an unknown field, a wrong type or a bad value is an
 * error naming the file, the bottle and the field path, because a typo in
 * a security policy that is silently ignored widens what an agent may do.
 * Secret values (identity tokens, egress tokens, held secrets, canaries)
 * never appear in an error message.
 */

#define _POSIX_C_SOURCE  200809L

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "bottle_policy.h"


#define BOTTLE_ARENA_BLOCK   16384
#define BOTTLE_ARENA_ALIGN   16
#define BOTTLE_HOST_MAX      253
#define BOTTLE_LABEL_MAX     63
#define BOTTLE_ID_MAX        128
#define BOTTLE_NAME_MAX      128
#define BOTTLE_TOKEN_MIN     16
#define BOTTLE_CANARY_MIN    8
#define BOTTLE_FILE_MAX      (64 * 1024 * 1024)
#define BOTTLE_QUOTE_LEN     80
#define BOTTLE_RESERVED_HOST "_egress.local"


typedef struct bottle_block_s  bottle_block_t;

struct bottle_block_s {
    bottle_block_t     *next;
    size_t              size;       /* usable bytes after the header */
    size_t              used;
};


struct bottle_policy_s {
    bottle_block_t     *blocks;     /* the arena: everything below */
    bottle_t           *bottles;
    size_t              nbottles;
    size_t             *token_slots;    /* bottle index + 1, 0 if empty */
    size_t              token_mask;
};


typedef struct {
    json_t             *root;       /* new reference, owned */
    const char         *source;
} bottle_doc_t;


/* parse state: where we are, for error messages */
typedef struct {
    bottle_policy_t    *policy;
    const char         *source;
    char                who[BOTTLE_ID_MAX + 16];
    char                path[256];
    size_t              pathlen;
    char               *err;
    size_t              errlen;
} bottle_ctx_t;


enum {
    BOTTLE_J_STRING = 0,
    BOTTLE_J_BOOL,
    BOTTLE_J_INT,
    BOTTLE_J_ARRAY,
    BOTTLE_J_OBJECT
};


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


/* headers an injected credential must never be written into */
static const char *const  bottle_auth_forbidden[] = {
    "host", "cookie", "proxy-authorization", "content-length",
    "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection", "expect", NULL
};


static const char *const  bottle_fields[] = {
    "id", "slug", "token", "token_sha256", "source_ips", "canary",
    "egress_tokens", "held_secrets", "audit", "repos", "routes", NULL
};

static const char *const  bottle_route_fields[] = {
    "host", "port", "ports", "passthrough", "internal", "methods", "allow",
    "auth", "preserve_auth", "dlp", "git", "log", "websocket",
    "agent_provider", NULL
};

/* fields that only make sense on a route whose traffic is inspected */
static const char *const  bottle_inspect_fields[] = {
    "methods", "allow", "auth", "preserve_auth", "dlp", "git", NULL
};

static const char *const  bottle_allow_fields[] = {
    "path", "methods", "headers", NULL
};

static const char *const  bottle_auth_fields[] = {
    "type", "name", "value", NULL
};

static const char *const  bottle_dlp_fields[] = {
    "outbound", "inbound", "on_match", NULL
};

static const char *const  bottle_audit_fields[] = {
    "delivery", "firehose", NULL
};

static const char *const  bottle_git_fields[] = { "fetch", NULL };

/* enum values, in BOTTLE_* order */
static const char *const  bottle_auth_types[] = {
    "none", "bearer", "token", "header", NULL
};

static const char *const  bottle_on_match_names[] = {
    "default", "redact", "supervise", "block", NULL
};

static const char *const  bottle_delivery_names[] = {
    "best_effort", "required", NULL
};

static const char *const  bottle_firehose_names[] = {
    "off", "metadata", "full", NULL
};

static const char *const  bottle_log_names[] = { "blocked", "full", NULL };

/* detector names, bit i is BOTTLE_DLP (1 << i) */
static const char *const  bottle_dlp_names[] = {
    "token_patterns", "known_secrets", "entropy",
    "naive_injection_detection", NULL
};

#define BOTTLE_DLP_OUTBOUND_ALL                                              \
    (BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_KNOWN_SECRETS | BOTTLE_DLP_ENTROPY)
#define BOTTLE_DLP_INBOUND_ALL  BOTTLE_DLP_NAIVE_INJECTION


/* arena */

static void *
bottle_alloc(bottle_policy_t *p, size_t size)
{
    uintptr_t        base, start;
    size_t           need;
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

    need = size + BOTTLE_ARENA_ALIGN;
    if (need < BOTTLE_ARENA_BLOCK) {
        need = BOTTLE_ARENA_BLOCK;
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


static void *
bottle_alloc_array(bottle_policy_t *p, size_t n, size_t size)
{
    if (n == 0 || n > SIZE_MAX / size) {
        return NULL;
    }

    return bottle_alloc(p, n * size);
}


/* error messages */

static int
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

static const char *
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


static void
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


static size_t
bottle_path_key(bottle_ctx_t *ctx, const char *key)
{
    size_t  saved;

    saved = ctx->pathlen;
    bottle_path_append(ctx, "%s%s", saved ? "." : "", key);

    return saved;
}


static size_t
bottle_path_index(bottle_ctx_t *ctx, size_t i)
{
    size_t  saved;

    saved = ctx->pathlen;
    bottle_path_append(ctx, "[%zu]", i);

    return saved;
}


static void
bottle_path_pop(bottle_ctx_t *ctx, size_t saved)
{
    ctx->pathlen = saved;
    ctx->path[saved] = '\0';
}


/* small string helpers; ASCII only, whatever the locale */

static int
bottle_lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}


static int
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


static int
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


static int
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

static int
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

static int
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

static int
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

static int
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

static int
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


static size_t
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


static size_t
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


static int
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

static int
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


static int
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


static int
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


static int
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

static int
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


static int
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


/* routes */

static int
bottle_set_ip_host(bottle_ctx_t *ctx, bottle_route_t *r, const bottle_ip_t *ip)
{
    char    buf[BOTTLE_IP_STRLEN];
    size_t  n;

    n = bottle_ip_format(buf, sizeof(buf), ip);
    if (n == 0) {
        return bottle_fail(ctx, "cannot format address");
    }

    r->host_is_ip = 1;
    r->ip = *ip;

    /* naming the address is explicit permission to dial it */
    r->internal = 1;

    return bottle_str_set(&r->host, ctx, buf, n, 0);
}


static int
bottle_parse_host(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       len, saved;
    json_t      *v;
    const char  *s;
    bottle_ip_t  ip;

    if (bottle_get(&v, ctx, obj, "host", BOTTLE_J_STRING, 1) != 0) {
        return -1;
    }

    saved = bottle_path_key(ctx, "host");
    s = json_string_value(v);
    len = json_string_length(v);
    bottle_quote(q, sizeof(q), s, len);

    if (len > 0 && s[0] == '[') {
        if (len < 2 || s[len - 1] != ']'
            || bottle_ip_parse(&ip, s + 1, len - 2) != 0
            || ip.family != AF_INET6)
        {
            return bottle_fail(ctx, "%s is not a bracketed IPv6 address", q);
        }

    } else if (memchr(s, ':', len) != NULL) {
        if (bottle_ip_parse(&ip, s, len) != 0) {
            return bottle_fail(ctx, "%s is not an IPv6 address "
                               "(zone ids are not allowed)", q);
        }

    } else if (bottle_ip_looks_numeric(s, len)) {
        /* a client would read it as an address: never as a name */
        if (bottle_ip_parse(&ip, s, len) != 0) {
            return bottle_fail(ctx, "%s looks like an IPv4 address "
                               "but is not one", q);
        }

    } else {
        if (len > 0 && s[len - 1] == '.') {
            len--;
        }

        if (!bottle_hostname_ok(s, len)) {
            return bottle_fail(ctx, "%s is not a valid host name", q);
        }

        if (bottle_eq_nocase(s, len, BOTTLE_RESERVED_HOST,
                             sizeof(BOTTLE_RESERVED_HOST) - 1))
        {
            return bottle_fail(ctx, "%s is reserved for the gateway", q);
        }

        if (bottle_str_set(&r->host, ctx, s, len, 1) != 0) {
            return -1;
        }

        bottle_path_pop(ctx, saved);
        return 0;
    }

    if (bottle_set_ip_host(ctx, r, &ip) != 0) {
        return -1;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_port_value(unsigned short *out, bottle_ctx_t *ctx, json_t *v)
{
    json_int_t  n;

    if (!json_is_integer(v)) {
        return bottle_fail(ctx, "must be an integer");
    }

    n = json_integer_value(v);
    if (n < 1 || n > 65535) {
        return bottle_fail(ctx, "%lld is not a port (1-65535)", (long long) n);
    }

    *out = (unsigned short) n;

    return 0;
}


static int
bottle_parse_ports(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    size_t   i, j, n, saved, item;
    json_t  *port, *ports;

    port = json_object_get(obj, "port");       /* borrowed */
    if (bottle_get(&ports, ctx, obj, "ports", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (port == NULL && ports == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, port ? "port" : "ports");

    if (port != NULL && ports != NULL) {
        return bottle_fail(ctx, "give port or ports, not both");
    }

    n = port ? 1 : json_array_size(ports);
    if (n == 0) {
        return bottle_fail(ctx, "must not be empty");
    }

    r->ports = bottle_alloc_array(ctx->policy, n, sizeof(unsigned short));
    if (r->ports == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = port ? ctx->pathlen : bottle_path_index(ctx, i);

        if (bottle_port_value(&r->ports[i], ctx,
                              port ? port : json_array_get(ports, i)) != 0)
        {
            return -1;
        }

        for (j = 0; j < i; j++) {
            if (r->ports[j] == r->ports[i]) {
                return bottle_fail(ctx, "%u is listed twice",
                                   (unsigned) r->ports[i]);
            }
        }

        bottle_path_pop(ctx, item);
    }

    r->nports = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_flags(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    int  passthrough, internal, preserve_auth, websocket, agent_provider;

    passthrough = 0;
    internal = r->internal;
    preserve_auth = 0;
    websocket = 0;
    agent_provider = 0;

    if (bottle_get_bool(&passthrough, ctx, obj, "passthrough") != 0
        || bottle_get_bool(&internal, ctx, obj, "internal") != 0
        || bottle_get_bool(&preserve_auth, ctx, obj, "preserve_auth") != 0
        || bottle_get_bool(&websocket, ctx, obj, "websocket") != 0
        || bottle_get_bool(&agent_provider, ctx, obj, "agent_provider") != 0)
    {
        return -1;
    }

    /* an IP-literal host keeps its implicit permission */
    r->internal = (internal || r->host_is_ip) ? 1 : 0;
    r->passthrough = passthrough ? 1 : 0;
    r->preserve_auth = preserve_auth ? 1 : 0;
    r->websocket = websocket ? 1 : 0;
    r->agent_provider = agent_provider ? 1 : 0;

    return 0;
}


/* a passthrough route is a tunnel: nothing that needs to see inside it */

static int
bottle_check_passthrough(bottle_ctx_t *ctx, json_t *obj,
    const bottle_route_t *r)
{
    size_t  i;

    if (!r->passthrough) {
        return 0;
    }

    for (i = 0; bottle_inspect_fields[i] != NULL; i++) {
        if (json_object_get(obj, bottle_inspect_fields[i]) != NULL) {
            bottle_path_key(ctx, bottle_inspect_fields[i]);
            return bottle_fail(ctx, "not allowed with passthrough: "
                               "it needs the traffic inspected");
        }
    }

    return 0;
}


static int
bottle_parse_path_glob(bottle_ctx_t *ctx, json_t *obj, bottle_allow_t *a)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       len;
    json_t      *v;
    const char  *s;

    if (bottle_get(&v, ctx, obj, "path", BOTTLE_J_STRING, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (len == 0 || (s[0] != '/' && s[0] != '*') || !bottle_is_visible(s, len))
    {
        bottle_path_key(ctx, "path");
        return bottle_fail(ctx, "%s must start with \"/\" or \"*\" and hold "
                           "no spaces or control characters",
                           bottle_quote(q, sizeof(q), s, len));
    }

    return bottle_str_set(&a->path, ctx, s, len, 0);
}


static int
bottle_parse_header_filters(bottle_ctx_t *ctx, json_t *obj, bottle_allow_t *a)
{
    char                     q[BOTTLE_QUOTE_LEN];
    void                    *it;
    size_t                   saved;
    json_t                  *v, *val;
    const char              *name;
    bottle_header_filter_t  *h;

    if (bottle_get(&v, ctx, obj, "headers", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "headers");

    a->headers = bottle_alloc_array(ctx->policy, json_object_size(v),
                                    sizeof(bottle_header_filter_t));
    if (a->headers == NULL) {
        return bottle_fail(ctx, json_object_size(v) ? "out of memory"
                                                    : "must not be empty");
    }

    for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        name = json_object_iter_key(it);   /* borrowed */
        val = json_object_iter_value(it);  /* borrowed */
        h = &a->headers[a->nheaders];

        bottle_quote(q, sizeof(q), name, strlen(name));

        if (!bottle_token_ok(name, strlen(name))) {
            return bottle_fail(ctx, "%s is not a valid header name", q);
        }

        if (!json_is_string(val)
            || bottle_has_ctl(json_string_value(val), json_string_length(val)))
        {
            return bottle_fail(ctx, "%s: value must be a string without "
                               "control characters", q);
        }

        if (bottle_str_set(&h->name, ctx, name, strlen(name), 1) != 0
            || bottle_str_set(&h->value, ctx, json_string_value(val),
                              json_string_length(val), 0) != 0)
        {
            return -1;
        }

        a->nheaders++;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_allow_entry(bottle_ctx_t *ctx, json_t *obj, bottle_allow_t *a)
{
    if (!json_is_object(obj)) {
        return bottle_fail(ctx, "must be an object");
    }

    if (bottle_check_fields(ctx, obj, bottle_allow_fields) != 0) {
        return -1;
    }

    if (json_object_size(obj) == 0) {
        return bottle_fail(ctx, "needs at least one of "
                           "\"path\", \"methods\", \"headers\"");
    }

    a->path.data = "";

    if (bottle_parse_path_glob(ctx, obj, a) != 0
        || bottle_parse_methods(&a->methods, ctx, obj) != 0
        || bottle_parse_header_filters(ctx, obj, a) != 0)
    {
        return -1;
    }

    return 0;
}


static int
bottle_parse_allow(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    size_t   i, n, saved, item;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, "allow", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "allow");

    n = json_array_size(v);
    if (n == 0) {
        return bottle_fail(ctx, "must not be empty (omit it to allow "
                           "every path)");
    }

    r->allow = bottle_alloc_array(ctx->policy, n, sizeof(bottle_allow_t));
    if (r->allow == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = bottle_path_index(ctx, i);

        if (bottle_parse_allow_entry(ctx, json_array_get(v, i), &r->allow[i])
            != 0)
        {
            return -1;
        }

        bottle_path_pop(ctx, item);
    }

    r->nallow = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_auth_name(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, len, saved;
    json_t      *v;
    const char  *s;

    if (r->auth_type != BOTTLE_AUTH_HEADER) {
        if (json_object_get(obj, "name") != NULL) {
            bottle_path_key(ctx, "name");
            return bottle_fail(ctx, "only allowed with type \"header\"");
        }

        return bottle_str_set(&r->auth_header, ctx, "authorization",
                              sizeof("authorization") - 1, 0);
    }

    if (bottle_get(&v, ctx, obj, "name", BOTTLE_J_STRING, 1) != 0) {
        return -1;
    }

    s = json_string_value(v);
    len = json_string_length(v);
    bottle_quote(q, sizeof(q), s, len);
    saved = bottle_path_key(ctx, "name");

    if (!bottle_token_ok(s, len)) {
        return bottle_fail(ctx, "%s is not a valid header name", q);
    }

    for (i = 0; bottle_auth_forbidden[i] != NULL; i++) {
        if (bottle_eq_nocase(s, len, bottle_auth_forbidden[i],
                             strlen(bottle_auth_forbidden[i])))
        {
            return bottle_fail(ctx, "%s may not carry credentials", q);
        }
    }

    if (bottle_str_set(&r->auth_header, ctx, s, len, 1) != 0) {
        return -1;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_auth_value(bottle_ctx_t *ctx, json_t *obj, const bottle_t *b,
    bottle_route_t *r)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, len, saved;
    json_t      *v;
    const char  *s;

    if (bottle_get(&v, ctx, obj, "value", BOTTLE_J_STRING, 1) != 0) {
        return -1;
    }

    s = json_string_value(v);
    len = json_string_length(v);
    saved = bottle_path_key(ctx, "value");

    if (len < 7 || memcmp(s, "secret:", 7) != 0) {
        return bottle_fail(ctx, "must be \"secret:NAME\" naming one of "
                           "egress_tokens");
    }

    s += 7;
    len -= 7;

    if (len >= 3 && s[0] == '$' && s[1] == '{' && s[len - 1] == '}') {
        s += 2;
        len -= 3;
    }

    bottle_quote(q, sizeof(q), s, len);

    if (!bottle_name_ok(s, len)) {
        return bottle_fail(ctx, "%s is not a valid secret name", q);
    }

    for (i = 0; i < b->negress_tokens; i++) {
        if (b->egress_tokens[i].name.len == len
            && memcmp(b->egress_tokens[i].name.data, s, len) == 0)
        {
            r->auth_secret = b->egress_tokens[i].name;
            r->auth_value = b->egress_tokens[i].value;
            bottle_path_pop(ctx, saved);
            return 0;
        }
    }

    return bottle_fail(ctx, "secret %s is not in egress_tokens", q);
}


static int
bottle_parse_auth(bottle_ctx_t *ctx, json_t *obj, const bottle_t *b,
    bottle_route_t *r)
{
    int      type;
    size_t   saved;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, "auth", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "auth");

    if (bottle_check_fields(ctx, v, bottle_auth_fields) != 0) {
        return -1;
    }

    if (json_object_get(v, "type") == NULL) {
        bottle_path_key(ctx, "type");
        return bottle_fail(ctx, "required");
    }

    type = BOTTLE_AUTH_NONE;
    if (bottle_get_enum(&type, ctx, v, "type", bottle_auth_types, 1) != 0) {
        return -1;
    }

    r->auth_type = type;

    if (bottle_parse_auth_name(ctx, v, r) != 0
        || bottle_parse_auth_value(ctx, v, b, r) != 0)
    {
        return -1;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


/* *out: detector bits listed under key, which must all be in "valid" */

static int
bottle_parse_detectors(unsigned *out, int *set, bottle_ctx_t *ctx,
    json_t *obj, const char *key, unsigned valid)
{
    int          bit;
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, saved, item_saved;
    json_t      *v, *item;
    unsigned     m;

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, key);
    m = 0;

    for (i = 0; i < json_array_size(v); i++) {
        item = json_array_get(v, i);       /* borrowed */
        item_saved = bottle_path_index(ctx, i);

        if (!json_is_string(item)) {
            return bottle_fail(ctx, "must be a string");
        }

        bottle_quote(q, sizeof(q), json_string_value(item),
                     json_string_length(item));
        bit = bottle_enum_index(bottle_dlp_names, json_string_value(item),
                                json_string_length(item));

        if (bit < 0) {
            return bottle_fail(ctx, "%s is not a known detector", q);
        }

        if (((1u << bit) & valid) == 0) {
            return bottle_fail(ctx, "%s is an %s detector", q,
                               (valid & BOTTLE_DLP_INBOUND_ALL) ? "outbound"
                                                                : "inbound");
        }

        m |= 1u << bit;
        bottle_path_pop(ctx, item_saved);
    }

    *out = m;
    *set = 1;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_dlp(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    size_t   saved;
    json_t  *v;

    v = json_object_get(obj, "dlp");       /* borrowed */
    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "dlp");

    if (json_is_false(v)) {
        r->dlp_off = 1;
        bottle_path_pop(ctx, saved);
        return 0;
    }

    if (json_is_true(v)) {
        return bottle_fail(ctx, "true is not allowed: omit dlp for the "
                           "defaults, or list detectors");
    }

    if (!json_is_object(v)) {
        return bottle_fail(ctx, "must be false or an object");
    }

    if (bottle_check_fields(ctx, v, bottle_dlp_fields) != 0
        || bottle_parse_detectors(&r->dlp_outbound, &r->dlp_outbound_set, ctx,
                                  v, "outbound", BOTTLE_DLP_OUTBOUND_ALL) != 0
        || bottle_parse_detectors(&r->dlp_inbound, &r->dlp_inbound_set, ctx,
                                  v, "inbound", BOTTLE_DLP_INBOUND_ALL) != 0
        || bottle_get_enum(&r->on_match, ctx, v, "on_match",
                           bottle_on_match_names, BOTTLE_ON_MATCH_REDACT) != 0)
    {
        return -1;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_git(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    int      fetch;
    size_t   saved;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, "git", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "git");
    fetch = 0;

    if (bottle_check_fields(ctx, v, bottle_git_fields) != 0
        || bottle_get_bool(&fetch, ctx, v, "fetch") != 0)
    {
        return -1;
    }

    r->git_fetch = fetch ? 1 : 0;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_route(bottle_ctx_t *ctx, json_t *obj, const bottle_t *b,
    bottle_route_t *r)
{
    int  log;

    if (!json_is_object(obj)) {
        return bottle_fail(ctx, "must be an object");
    }

    log = 0;

    if (bottle_check_fields(ctx, obj, bottle_route_fields) != 0
        || bottle_parse_host(ctx, obj, r) != 0
        || bottle_parse_ports(ctx, obj, r) != 0
        || bottle_parse_flags(ctx, obj, r) != 0
        || bottle_check_passthrough(ctx, obj, r) != 0
        || bottle_parse_methods(&r->methods, ctx, obj) != 0
        || bottle_parse_allow(ctx, obj, r) != 0
        || bottle_parse_auth(ctx, obj, b, r) != 0
        || bottle_parse_dlp(ctx, obj, r) != 0
        || bottle_parse_git(ctx, obj, r) != 0
        || bottle_get_enum(&log, ctx, obj, "log", bottle_log_names, 0) != 0)
    {
        return -1;
    }

    r->log_full = (log == 1);

    /* strings are never NULL */
    if (r->auth_type == BOTTLE_AUTH_NONE) {
        r->auth_header.data = "";
        r->auth_secret.data = "";
        r->auth_value.data = "";
    }

    /* provider traffic carries its own key: scrub rather than hold it */
    if (r->on_match == BOTTLE_ON_MATCH_DEFAULT) {
        r->on_match = r->agent_provider ? BOTTLE_ON_MATCH_REDACT
                                        : BOTTLE_ON_MATCH_SUPERVISE;
    }

    return 0;
}


/* bottles */

static int
bottle_parse_id(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       len;
    json_t      *v;
    const char  *s;

    if (bottle_get(&v, ctx, obj, "id", BOTTLE_J_STRING, 1) != 0) {
        return -1;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (!bottle_id_ok(s, len)) {
        bottle_path_key(ctx, "id");
        return bottle_fail(ctx, "%s must be 1-%d characters of "
                           "A-Z a-z 0-9 . _ : @ -",
                           bottle_quote(q, sizeof(q), s, len), BOTTLE_ID_MAX);
    }

    if (bottle_str_set(&b->id, ctx, s, len, 0) != 0) {
        return -1;
    }

    /* from here on errors name the bottle rather than its position */
    snprintf(ctx->who, sizeof(ctx->who), "bottle \"%s\"", b->id.data);

    return 0;
}


static int
bottle_parse_slug(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       len;
    json_t      *v;
    const char  *s;

    if (bottle_get(&v, ctx, obj, "slug", BOTTLE_J_STRING, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        b->slug = b->id;
        return 0;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (!bottle_id_ok(s, len)) {
        bottle_path_key(ctx, "slug");
        return bottle_fail(ctx, "%s must be 1-%d characters of "
                           "A-Z a-z 0-9 . _ : @ -",
                           bottle_quote(q, sizeof(q), s, len), BOTTLE_ID_MAX);
    }

    return bottle_str_set(&b->slug, ctx, s, len, 0);
}


static int
bottle_parse_hex_digest(bottle_ctx_t *ctx, json_t *v, bottle_t *b)
{
    int          hi, lo;
    size_t       i;
    const char  *s;

    s = json_string_value(v);

    if (json_string_length(v) != 64) {
        return bottle_fail(ctx, "must be 64 hex digits");
    }

    for (i = 0; i < 32; i++) {
        hi = bottle_lower((unsigned char) s[2 * i]);
        lo = bottle_lower((unsigned char) s[2 * i + 1]);

        hi = (hi >= '0' && hi <= '9') ? hi - '0'
             : (hi >= 'a' && hi <= 'f') ? hi - 'a' + 10 : -1;
        lo = (lo >= '0' && lo <= '9') ? lo - '0'
             : (lo >= 'a' && lo <= 'f') ? lo - 'a' + 10 : -1;

        if (hi < 0 || lo < 0) {
            return bottle_fail(ctx, "must be 64 hex digits");
        }

        b->token_sha256[i] = (unsigned char) (hi << 4 | lo);
    }

    return 0;
}


/* the token itself is never echoed: messages describe it, never quote it */

static int
bottle_parse_token(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    size_t   saved;
    json_t  *token, *digest;

    if (bottle_get(&token, ctx, obj, "token", BOTTLE_J_STRING, 0) != 0
        || bottle_get(&digest, ctx, obj, "token_sha256", BOTTLE_J_STRING, 0)
           != 0)
    {
        return -1;
    }

    saved = bottle_path_key(ctx, digest ? "token_sha256" : "token");

    if (token != NULL && digest != NULL) {
        return bottle_fail(ctx, "give token or token_sha256, not both");
    }

    if (token == NULL && digest == NULL) {
        return bottle_fail(ctx, "required (or token_sha256)");
    }

    if (digest != NULL) {
        if (bottle_parse_hex_digest(ctx, digest, b) != 0) {
            return -1;
        }

        bottle_path_pop(ctx, saved);
        return 0;
    }

    if (json_string_length(token) < BOTTLE_TOKEN_MIN) {
        return bottle_fail(ctx, "must be at least %d characters",
                           BOTTLE_TOKEN_MIN);
    }

    if (!bottle_is_visible(json_string_value(token), json_string_length(token)))
    {
        return bottle_fail(ctx, "must be printable ASCII without spaces");
    }

    if (bottle_sha256(b->token_sha256, json_string_value(token),
                      json_string_length(token)) != 0)
    {
        return bottle_fail(ctx, "cannot hash");
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_sources(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    char     q[BOTTLE_QUOTE_LEN];
    size_t   i, n, saved, item_saved;
    json_t  *v, *item;

    if (bottle_get(&v, ctx, obj, "source_ips", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "source_ips");

    /* [] reads as "nowhere" but would mean "anywhere": make it explicit */
    n = json_array_size(v);
    if (n == 0) {
        return bottle_fail(ctx, "must not be empty (omit it to allow any "
                           "source)");
    }

    b->sources = bottle_alloc_array(ctx->policy, n, sizeof(bottle_net_t));
    if (b->sources == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = json_array_get(v, i);       /* borrowed */
        item_saved = bottle_path_index(ctx, i);

        if (!json_is_string(item)) {
            return bottle_fail(ctx, "must be a string");
        }

        if (bottle_net_parse(&b->sources[i], json_string_value(item),
                             json_string_length(item)) != 0)
        {
            return bottle_fail(ctx, "%s is not an address or CIDR network "
                               "(with host bits zero)",
                               bottle_quote(q, sizeof(q),
                                            json_string_value(item),
                                            json_string_length(item)));
        }

        bottle_path_pop(ctx, item_saved);
    }

    b->nsources = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_canary(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    size_t       len;
    json_t      *v;
    const char  *s;

    b->canary.data = "";

    if (bottle_get(&v, ctx, obj, "canary", BOTTLE_J_STRING, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (len < BOTTLE_CANARY_MIN || bottle_has_ctl(s, len)) {
        bottle_path_key(ctx, "canary");
        return bottle_fail(ctx, "must be at least %d characters, without "
                           "control characters", BOTTLE_CANARY_MIN);
    }

    return bottle_str_set(&b->canary, ctx, s, len, 0);
}


/*
 * NAME -> value.  Egress tokens are written into request headers, so they
 * may hold no control characters; held secrets (keys for git-gate) may.
 */

static int
bottle_parse_secrets(bottle_secret_t **out, size_t *nout, bottle_ctx_t *ctx,
    json_t *obj, const char *key, int header_safe)
{
    char              q[BOTTLE_QUOTE_LEN];
    void             *it;
    size_t            n, saved, item;
    json_t           *v, *val;
    const char       *name;
    bottle_secret_t  *s;

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL || json_object_size(v) == 0) {
        return 0;
    }

    saved = bottle_path_key(ctx, key);

    s = bottle_alloc_array(ctx->policy, json_object_size(v),
                           sizeof(bottle_secret_t));
    if (s == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    n = 0;

    for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        name = json_object_iter_key(it);   /* borrowed */
        val = json_object_iter_value(it);  /* borrowed */

        if (!bottle_name_ok(name, strlen(name))) {
            return bottle_fail(ctx, "%s is not a valid name "
                               "([A-Za-z_][A-Za-z0-9_]*)",
                               bottle_quote(q, sizeof(q), name, strlen(name)));
        }

        item = bottle_path_key(ctx, name);

        if (!json_is_string(val) || json_string_length(val) == 0
            || (header_safe && bottle_has_ctl(json_string_value(val),
                                              json_string_length(val))))
        {
            return bottle_fail(ctx, header_safe
                               ? "must be a non-empty string without "
                                 "control characters"
                               : "must be a non-empty string");
        }

        if (bottle_str_set(&s[n].name, ctx, name, strlen(name), 0) != 0
            || bottle_str_set(&s[n].value, ctx, json_string_value(val),
                              json_string_length(val), 0) != 0)
        {
            return -1;
        }

        n++;
        bottle_path_pop(ctx, item);
    }

    *out = s;
    *nout = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_audit(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    int      delivery;
    size_t   saved;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, "audit", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "audit");
    delivery = 0;

    if (bottle_check_fields(ctx, v, bottle_audit_fields) != 0
        || bottle_get_enum(&delivery, ctx, v, "delivery",
                           bottle_delivery_names, 0) != 0
        || bottle_get_enum(&b->firehose, ctx, v, "firehose",
                           bottle_firehose_names, 0) != 0)
    {
        return -1;
    }

    b->audit_required = (delivery == 1);
    bottle_path_pop(ctx, saved);

    return 0;
}


/* repo grants belong to git-gate; here they are only type-checked */

static int
bottle_check_repos(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    size_t   i;
    json_t  *v, *item;

    if (bottle_get(&v, ctx, obj, "repos", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    for (i = 0; v != NULL && i < json_array_size(v); i++) {
        item = json_array_get(v, i);       /* borrowed */

        if (!json_is_string(item) || json_string_length(item) == 0
            || bottle_has_ctl(json_string_value(item),
                              json_string_length(item)))
        {
            bottle_path_key(ctx, "repos");
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "must be a non-empty string");
        }
    }

    b->nrepos = v ? json_array_size(v) : 0;

    return 0;
}


static int
bottle_parse_routes(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    size_t   i, n, saved, item;
    json_t  *v;

    if (bottle_get(&v, ctx, obj, "routes", BOTTLE_J_ARRAY, 1) != 0) {
        return -1;
    }

    n = json_array_size(v);
    if (n == 0) {
        return 0;
    }

    b->routes = bottle_alloc_array(ctx->policy, n, sizeof(bottle_route_t));
    if (b->routes == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    saved = bottle_path_key(ctx, "routes");

    for (i = 0; i < n; i++) {
        item = bottle_path_index(ctx, i);

        if (bottle_parse_route(ctx, json_array_get(v, i), b, &b->routes[i])
            != 0)
        {
            return -1;
        }

        bottle_path_pop(ctx, item);
    }

    b->nroutes = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


/* the host table; a host listed twice would make one route unreachable */

static int
bottle_index_routes(bottle_ctx_t *ctx, bottle_t *b)
{
    char             q[BOTTLE_QUOTE_LEN];
    size_t           i, h, size;
    bottle_route_t  *r, *other;

    size = bottle_table_size(b->nroutes);

    b->host_slots = bottle_alloc_array(ctx->policy, size, sizeof(size_t));
    if (b->host_slots == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    b->host_mask = size - 1;

    for (i = 0; i < b->nroutes; i++) {
        r = &b->routes[i];
        h = bottle_hash_host(r->host.data, r->host.len) & b->host_mask;

        for ( /* void */ ; b->host_slots[h]; h = (h + 1) & b->host_mask) {
            other = &b->routes[b->host_slots[h] - 1];

            if (other->host.len == r->host.len
                && memcmp(other->host.data, r->host.data, r->host.len) == 0)
            {
                bottle_path_append(ctx, "routes[%zu].host", i);
                return bottle_fail(ctx, "%s is already routes[%zu]",
                                   bottle_quote(q, sizeof(q), r->host.data,
                                                r->host.len),
                                   b->host_slots[h] - 1);
            }
        }

        b->host_slots[h] = i + 1;
    }

    return 0;
}


static int
bottle_parse_bottle(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    if (!json_is_object(obj)) {
        return bottle_fail(ctx, "must be an object");
    }

    if (bottle_str_set(&b->source, ctx, ctx->source, strlen(ctx->source), 0)
        != 0
        || bottle_parse_id(ctx, obj, b) != 0
        || bottle_check_fields(ctx, obj, bottle_fields) != 0
        || bottle_parse_slug(ctx, obj, b) != 0
        || bottle_parse_token(ctx, obj, b) != 0
        || bottle_parse_sources(ctx, obj, b) != 0
        || bottle_parse_canary(ctx, obj, b) != 0
        || bottle_parse_secrets(&b->egress_tokens, &b->negress_tokens, ctx,
                                obj, "egress_tokens", 1) != 0
        || bottle_parse_secrets(&b->held_secrets, &b->nheld_secrets, ctx,
                                obj, "held_secrets", 0) != 0
        || bottle_parse_audit(ctx, obj, b) != 0
        || bottle_check_repos(ctx, obj, b) != 0
        || bottle_parse_routes(ctx, obj, b) != 0
        || bottle_index_routes(ctx, b) != 0)
    {
        return -1;
    }

    return 0;
}


/* documents: {"bottles": [...]} or one bottle */

static int
bottle_doc_bottles(json_t **out, bottle_ctx_t *ctx, json_t *root)
{
    char         q[BOTTLE_QUOTE_LEN];
    void        *it;
    json_t      *v;
    const char  *key;

    *out = NULL;

    if (!json_is_object(root)) {
        return bottle_fail(ctx, "must be an object");
    }

    v = json_object_get(root, "bottles");      /* borrowed */
    if (v == NULL) {
        return 0;
    }

    if (json_object_size(root) != 1) {
        for (it = json_object_iter(root); it;
             it = json_object_iter_next(root, it))
        {
            key = json_object_iter_key(it);    /* borrowed */
            if (strcmp(key, "bottles") != 0) {
                return bottle_fail(ctx, "unknown field %s next to "
                                   "\"bottles\"",
                                   bottle_quote(q, sizeof(q), key,
                                                strlen(key)));
            }
        }
    }

    if (!json_is_array(v)) {
        bottle_path_key(ctx, "bottles");
        return bottle_fail(ctx, "must be an array");
    }

    *out = v;

    return 0;
}


static void
bottle_ctx_reset(bottle_ctx_t *ctx, const char *source)
{
    ctx->source = source;
    ctx->who[0] = '\0';
    ctx->path[0] = '\0';
    ctx->pathlen = 0;
}


static int
bottle_count_bottles(size_t *out, bottle_ctx_t *ctx, bottle_doc_t *docs,
    size_t ndocs)
{
    size_t   i, n;
    json_t  *list;

    n = 0;

    for (i = 0; i < ndocs; i++) {
        bottle_ctx_reset(ctx, docs[i].source);

        if (bottle_doc_bottles(&list, ctx, docs[i].root) != 0) {
            return -1;
        }

        n += list ? json_array_size(list) : 1;
    }

    *out = n;

    return 0;
}


static int
bottle_parse_docs(bottle_ctx_t *ctx, bottle_doc_t *docs, size_t ndocs)
{
    size_t            i, j, n;
    json_t           *list;
    bottle_policy_t  *p;

    p = ctx->policy;
    n = 0;

    for (i = 0; i < ndocs; i++) {
        bottle_ctx_reset(ctx, docs[i].source);

        if (bottle_doc_bottles(&list, ctx, docs[i].root) != 0) {
            return -1;
        }

        if (list == NULL) {
            snprintf(ctx->who, sizeof(ctx->who), "bottle");
            if (bottle_parse_bottle(ctx, docs[i].root, &p->bottles[n++]) != 0)
            {
                return -1;
            }

            continue;
        }

        for (j = 0; j < json_array_size(list); j++) {
            bottle_ctx_reset(ctx, docs[i].source);
            snprintf(ctx->who, sizeof(ctx->who), "bottles[%zu]", j);

            if (bottle_parse_bottle(ctx, json_array_get(list, j),
                                    &p->bottles[n++]) != 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


static int
bottle_cmp_id(const void *a, const void *b)
{
    const bottle_t  *x, *y;
    int              rc;

    x = *(const bottle_t *const *) a;
    y = *(const bottle_t *const *) b;

    rc = strcmp(x->id.data, y->id.data);
    if (rc != 0) {
        return rc;
    }

    /* ties in policy order, so the later duplicate is reported */
    return (x > y) - (x < y);
}


static int
bottle_check_ids(bottle_ctx_t *ctx)
{
    int                rc;
    size_t             i;
    const bottle_t   **sorted, *dup, *first;
    bottle_policy_t   *p;

    p = ctx->policy;

    if (p->nbottles < 2) {
        return 0;
    }

    sorted = malloc(p->nbottles * sizeof(bottle_t *));
    if (sorted == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < p->nbottles; i++) {
        sorted[i] = &p->bottles[i];
    }

    qsort(sorted, p->nbottles, sizeof(bottle_t *), bottle_cmp_id);

    rc = 0;

    for (i = 1; i < p->nbottles; i++) {
        if (strcmp(sorted[i - 1]->id.data, sorted[i]->id.data) == 0) {
            first = sorted[i - 1];
            dup = sorted[i];

            bottle_ctx_reset(ctx, dup->source.data);
            snprintf(ctx->who, sizeof(ctx->who), "bottle \"%s\"",
                     dup->id.data);
            bottle_path_key(ctx, "id");
            rc = bottle_fail(ctx, "duplicate: also defined in %s",
                             first->source.data);
            goto cleanup;
        }
    }

cleanup:

    free(sorted);

    return rc;
}


/* token digests -> bottles; the same token twice could not be told apart */

static int
bottle_index_tokens(bottle_ctx_t *ctx)
{
    size_t            i, h, size;
    bottle_t         *b, *other;
    bottle_policy_t  *p;

    p = ctx->policy;
    size = bottle_table_size(p->nbottles);

    p->token_slots = bottle_alloc_array(p, size, sizeof(size_t));
    if (p->token_slots == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    p->token_mask = size - 1;

    for (i = 0; i < p->nbottles; i++) {
        b = &p->bottles[i];
        memcpy(&h, b->token_sha256, sizeof(h));

        for (h &= p->token_mask; p->token_slots[h];
             h = (h + 1) & p->token_mask)
        {
            other = &p->bottles[p->token_slots[h] - 1];

            if (memcmp(other->token_sha256, b->token_sha256, 32) == 0) {
                bottle_ctx_reset(ctx, b->source.data);
                snprintf(ctx->who, sizeof(ctx->who), "bottle \"%s\"",
                         b->id.data);
                bottle_path_key(ctx, "token");
                return bottle_fail(ctx, "same token as bottle \"%s\" in %s",
                                   other->id.data, other->source.data);
            }
        }

        p->token_slots[h] = i + 1;
    }

    return 0;
}


static int
bottle_policy_build(bottle_policy_t **out, bottle_doc_t *docs, size_t ndocs,
    char *err, size_t errlen)
{
    size_t            n;
    bottle_ctx_t      ctx;
    bottle_policy_t  *p;

    memset(&ctx, 0, sizeof(ctx));
    ctx.err = err;
    ctx.errlen = errlen;
    ctx.source = ndocs ? docs[0].source : "policy";

    p = calloc(1, sizeof(bottle_policy_t));
    if (p == NULL) {
        return bottle_fail(&ctx, "out of memory");
    }

    ctx.policy = p;

    if (bottle_count_bottles(&n, &ctx, docs, ndocs) != 0) {
        goto failed;
    }

    if (n > 0) {
        p->bottles = bottle_alloc_array(p, n, sizeof(bottle_t));
        if (p->bottles == NULL) {
            bottle_fail(&ctx, "out of memory");
            goto failed;
        }
    }

    p->nbottles = n;

    if (bottle_parse_docs(&ctx, docs, ndocs) != 0
        || bottle_check_ids(&ctx) != 0
        || bottle_index_tokens(&ctx) != 0)
    {
        goto failed;
    }

    *out = p;

    return 0;

failed:

    bottle_policy_free(p);

    return -1;
}


/* a JSON syntax error; jansson's "near '...'" could quote a secret */

static int
bottle_json_error(char *err, size_t errlen, const char *source,
    const json_error_t *jerr)
{
    char  text[JSON_ERROR_TEXT_LENGTH], *near;

    memcpy(text, jerr->text, sizeof(text));
    text[sizeof(text) - 1] = '\0';

    near = strstr(text, " near ");
    if (near != NULL) {
        *near = '\0';
    }

    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s: line %d column %d: invalid JSON: %s",
                 source, jerr->line, jerr->column, text);
    }

    return -1;
}


static int
bottle_doc_load(bottle_doc_t *out, const char *json, size_t len,
    const char *source, char *err, size_t errlen)
{
    json_error_t  jerr;

    /* new reference, released by the caller */
    out->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    out->source = source;

    if (out->root == NULL) {
        return bottle_json_error(err, errlen, source, &jerr);
    }

    return 0;
}


int
bottle_policy_parse(bottle_policy_t **out, const char *json, size_t len,
    const char *source_name, char *err, size_t errlen)
{
    int           rc;
    bottle_doc_t  doc;

    *out = NULL;

    if (source_name == NULL) {
        source_name = "policy";
    }

    if (bottle_doc_load(&doc, json, len, source_name, err, errlen) != 0) {
        return -1;
    }

    rc = bottle_policy_build(out, &doc, 1, err, errlen);

    json_decref(doc.root);

    return rc;
}


/* files and directories */

static int
bottle_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }

    return -1;
}


static int
bottle_read_file(char **out, size_t *outlen, const char *path, char *err,
    size_t errlen)
{
    int     rc;
    char   *buf, *nbuf;
    FILE   *f;
    size_t  len, cap, n;

    f = fopen(path, "rb");
    if (f == NULL) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", path,
                           strerror(errno));
    }

    rc = -1;
    buf = NULL;
    len = 0;
    cap = 0;

    for ( ;; ) {
        if (len == cap) {
            if (cap >= BOTTLE_FILE_MAX) {
                bottle_errf(err, errlen, "%s: larger than %d bytes", path,
                            BOTTLE_FILE_MAX);
                goto cleanup;
            }

            cap = cap ? cap * 2 : 65536;
            nbuf = realloc(buf, cap);
            if (nbuf == NULL) {
                bottle_errf(err, errlen, "%s: out of memory", path);
                goto cleanup;
            }

            buf = nbuf;
        }

        n = fread(buf + len, 1, cap - len, f);
        len += n;

        if (n == 0) {
            break;
        }
    }

    if (ferror(f)) {
        bottle_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }

    *out = buf;
    *outlen = len;
    buf = NULL;
    rc = 0;

cleanup:

    free(buf);
    fclose(f);

    return rc;
}


static int
bottle_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}


static int
bottle_is_json_name(const char *name)
{
    size_t  len;

    /* dot files are editor and rsync temporaries, never policy */
    len = strlen(name);

    return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") == 0;
}


/* *out: malloc'd sorted paths of dir's *.json files */

static int
bottle_list_dir(char ***out, size_t *nout, const char *dir, char *err,
    size_t errlen)
{
    int             rc;
    DIR            *d;
    char          **files, **nfiles, *path;
    size_t          n, cap, len;
    const char     *sep;
    struct dirent  *de;

    d = opendir(dir);
    if (d == NULL) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", dir,
                           strerror(errno));
    }

    rc = -1;
    files = NULL;
    n = 0;
    cap = 0;
    len = strlen(dir);
    sep = (len > 0 && dir[len - 1] == '/') ? "" : "/";

    while ((de = readdir(d)) != NULL) {
        if (!bottle_is_json_name(de->d_name)) {
            continue;
        }

        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            nfiles = realloc(files, cap * sizeof(char *));
            if (nfiles == NULL) {
                goto oom;
            }

            files = nfiles;
        }

        path = malloc(len + strlen(sep) + strlen(de->d_name) + 1);
        if (path == NULL) {
            goto oom;
        }

        sprintf(path, "%s%s%s", dir, sep, de->d_name);
        files[n++] = path;
    }

    if (n == 0) {
        bottle_errf(err, errlen, "%s: no *.json files", dir);
        goto cleanup;
    }

    qsort(files, n, sizeof(char *), bottle_cmp_str);

    *out = files;
    *nout = n;
    files = NULL;
    rc = 0;
    goto cleanup;

oom:

    bottle_errf(err, errlen, "%s: out of memory", dir);

cleanup:

    while (files != NULL && n > 0) {
        free(files[--n]);
    }

    free(files);
    closedir(d);

    return rc;
}


static int
bottle_list_path(char ***out, size_t *nout, const char *path, char *err,
    size_t errlen)
{
    struct stat  st;

    if (stat(path, &st) != 0) {
        return bottle_errf(err, errlen, "%s: cannot open: %s", path,
                           strerror(errno));
    }

    if (S_ISDIR(st.st_mode)) {
        return bottle_list_dir(out, nout, path, err, errlen);
    }

    *out = malloc(sizeof(char *));
    if (*out == NULL || ((*out)[0] = strdup(path)) == NULL) {
        free(*out);
        return bottle_errf(err, errlen, "%s: out of memory", path);
    }

    *nout = 1;

    return 0;
}


int
bottle_policy_load(bottle_policy_t **out, const char *path, char *err,
    size_t errlen)
{
    int            rc;
    char         **files, *json;
    size_t         i, nfiles, ndocs, len;
    bottle_doc_t  *docs;

    *out = NULL;
    rc = -1;
    files = NULL;
    docs = NULL;
    json = NULL;
    len = 0;
    ndocs = 0;
    nfiles = 0;

    if (bottle_list_path(&files, &nfiles, path, err, errlen) != 0) {
        return -1;
    }

    docs = calloc(nfiles, sizeof(bottle_doc_t));
    if (docs == NULL) {
        bottle_errf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }

    for (i = 0; i < nfiles; i++) {
        if (bottle_read_file(&json, &len, files[i], err, errlen) != 0) {
            goto cleanup;
        }

        rc = bottle_doc_load(&docs[i], json, len, files[i], err, errlen);
        free(json);

        if (rc != 0) {
            goto cleanup;
        }

        ndocs++;
    }

    rc = bottle_policy_build(out, docs, ndocs, err, errlen);

cleanup:

    for (i = 0; i < ndocs; i++) {
        json_decref(docs[i].root);
    }

    for (i = 0; i < nfiles; i++) {
        free(files[i]);
    }

    free(docs);
    free(files);

    return rc;
}


int
bottle_policy_unsupported(const bottle_policy_t *p, char *err, size_t errlen)
{
    size_t           i, k;
    char             route[64];
    const char      *field, *why;
    const bottle_t  *b;

    for (i = 0; i < bottle_policy_count(p); i++) {
        b = bottle_policy_at(p, i);
        field = NULL;
        why = "git-gate is not built yet";

        if (b->audit_required) {
            field = "audit.delivery: \"required\"";
            why = "there is no audit journal to wait for";

        } else if (b->firehose != BOTTLE_FIREHOSE_OFF) {
            field = "audit.firehose";
            why = "there is no firehose";

        } else if (b->nheld_secrets) {
            field = "held_secrets";

        } else if (b->nrepos) {
            field = "repos";
        }

        for (k = 0; field == NULL && k < b->nroutes; k++) {
            if (b->routes[k].log_full) {
                snprintf(route, sizeof(route), "routes[%zu].log: \"full\"", k);
                field = route;
                why = "there is no full log";
            }
        }

        if (field) {
            snprintf(err, errlen, "%s: bottle \"%s\": %s is not supported "
                     "yet: %s", b->source.data, b->id.data, field, why);
            return -1;
        }
    }

    return 0;
}


void
bottle_policy_free(bottle_policy_t *p)
{
    bottle_block_t  *b, *next;

    if (p == NULL) {
        return;
    }

    /* the arena holds egress tokens and held secrets */
    for (b = p->blocks; b != NULL; b = next) {
        next = b->next;
        OPENSSL_cleanse(b, sizeof(bottle_block_t) + b->size);
        free(b);
    }

    free(p);
}


/* lookups: read-only, safe from any thread or process sharing the policy */

size_t
bottle_policy_count(const bottle_policy_t *p)
{
    return p ? p->nbottles : 0;
}


const bottle_t *
bottle_policy_at(const bottle_policy_t *p, size_t i)
{
    return (p != NULL && i < p->nbottles) ? &p->bottles[i] : NULL;
}


const bottle_t *
bottle_policy_find_token(const bottle_policy_t *p, const unsigned char *token,
    size_t len)
{
    size_t           h;
    unsigned char    digest[32];
    const bottle_t  *b;

    if (p == NULL || p->token_slots == NULL || token == NULL || len == 0) {
        return NULL;
    }

    if (bottle_sha256(digest, token, len) != 0) {
        return NULL;
    }

    /* the digest is uniform already: its first bytes are the hash */
    memcpy(&h, digest, sizeof(h));

    for (h &= p->token_mask; p->token_slots[h]; h = (h + 1) & p->token_mask) {
        b = &p->bottles[p->token_slots[h] - 1];

        if (CRYPTO_memcmp(b->token_sha256, digest, 32) == 0) {
            return b;
        }
    }

    return NULL;
}


/*
 * By id: how the http side finds again the bottle a CONNECT resolved, once
 * per tunnel.  Ids are unique; a linear scan over the bottles of one gateway
 * is cheaper than the TLS handshake it accompanies.
 */

const bottle_t *
bottle_policy_find_id(const bottle_policy_t *p, const char *id, size_t len)
{
    size_t  i;

    if (p == NULL || id == NULL) {
        return NULL;
    }

    for (i = 0; i < p->nbottles; i++) {
        if (p->bottles[i].id.len == len
            && memcmp(p->bottles[i].id.data, id, len) == 0)
        {
            return &p->bottles[i];
        }
    }

    return NULL;
}


int
bottle_source_allowed(const bottle_t *b, const bottle_ip_t *src)
{
    size_t  i;

    if (b->nsources == 0) {
        return 1;
    }

    for (i = 0; i < b->nsources; i++) {
        if (bottle_net_contains(&b->sources[i], src)) {
            return 1;
        }
    }

    return 0;
}


static const bottle_route_t *
bottle_lookup_host(const bottle_t *b, const char *host, size_t len)
{
    size_t                 h;
    const bottle_route_t  *r;

    h = bottle_hash_host(host, len) & b->host_mask;

    for ( /* void */ ; b->host_slots[h]; h = (h + 1) & b->host_mask) {
        r = &b->routes[b->host_slots[h] - 1];

        if (bottle_eq_nocase(r->host.data, r->host.len, host, len)) {
            return r;
        }
    }

    return NULL;
}


const bottle_route_t *
bottle_find_route(const bottle_t *b, const char *host, size_t len)
{
    char         buf[BOTTLE_IP_STRLEN];
    size_t       n;
    bottle_ip_t  ip;

    if (b == NULL || b->host_slots == NULL || host == NULL || len == 0) {
        return NULL;
    }

    /* a name a client would read as an address is only ever an address */
    if (host[0] == '[') {
        if (len < 2 || host[len - 1] != ']'
            || bottle_ip_parse(&ip, host + 1, len - 2) != 0
            || ip.family != AF_INET6)
        {
            return NULL;
        }

    } else if (memchr(host, ':', len) != NULL
               || bottle_ip_looks_numeric(host, len))
    {
        if (bottle_ip_parse(&ip, host, len) != 0) {
            return NULL;
        }

    } else {
        if (host[len - 1] == '.') {
            len--;
        }

        if (len == 0 || len > BOTTLE_HOST_MAX) {
            return NULL;
        }

        return bottle_lookup_host(b, host, len);
    }

    n = bottle_ip_format(buf, sizeof(buf), &ip);

    return n ? bottle_lookup_host(b, buf, n) : NULL;
}


int
bottle_route_port_ok(const bottle_route_t *r, unsigned port, int is_connect)
{
    size_t  i;

    if (r->nports == 0) {
        return port == (is_connect ? 443u : 80u);
    }

    for (i = 0; i < r->nports; i++) {
        if (r->ports[i] == port) {
            return 1;
        }
    }

    return 0;
}


int
bottle_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
    size_t  p, i, star, mark;

    /*
     * On a mismatch, let the last '*' swallow one more character and retry
     * from there; earlier stars never need revisiting, so no recursion.
     */
    p = 0;
    i = 0;
    star = (size_t) -1;
    mark = 0;

    while (i < slen) {
        if (p < plen && pat[p] == '*') {
            star = p++;
            mark = i;

        } else if (p < plen && pat[p] == s[i]) {
            p++;
            i++;

        } else if (star != (size_t) -1) {
            p = star + 1;
            i = ++mark;

        } else {
            return 0;
        }
    }

    while (p < plen && pat[p] == '*') {
        p++;
    }

    return p == plen;
}
