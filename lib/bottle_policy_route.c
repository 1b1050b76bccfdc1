/*
 * Parsing one route of a bottle: host, ports, flags, allow rules,
 * credential injection (auth), DLP detectors and git.
 */

#include <string.h>

#include "bottle_policy_int.h"


/* headers an injected credential must never be written into */
static const char *const  bottle_auth_forbidden[] = {
    "host", "cookie", "proxy-authorization", "content-length",
    "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection", "expect", NULL
};


static const char *const  bottle_route_fields[] = {
    "host", "port", "ports", "passthrough", "internal", "methods", "allow",
    "auth", "preserve_auth", "dlp", "git", "log", "websocket",
    "agent_provider", "mcp", NULL
};

/* fields that only make sense on a route whose traffic is inspected */
static const char *const  bottle_inspect_fields[] = {
    "methods", "allow", "auth", "preserve_auth", "dlp", "git", "mcp", NULL
};

static const char *const  bottle_allow_fields[] = {
    "path", "methods", "headers", NULL
};

static const char *const  bottle_auth_fields[] = {
    "type", "name", "value", NULL
};

static const char *const  bottle_dlp_fields[] = {
    "outbound", "inbound", "on_match", "scrub", NULL
};

/* dlp.scrub names, bit i is BOTTLE_HELD (1 << i) */
static const char *const  bottle_held_names[] = {
    "credential", "egress_tokens", "canary", NULL
};

static const char *const  bottle_git_fields[] = { "fetch", NULL };

/* enum values, in BOTTLE_* order */
static const char *const  bottle_auth_types[] = {
    "none", "bearer", "token", "header", NULL
};

static const char *const  bottle_on_match_names[] = {
    "default", "redact", "supervise", "block", NULL
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


/* dlp.scrub: the kinds of held value scrubbed from responses */

static int
bottle_parse_scrub(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    int          bit;
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, saved, item_saved;
    json_t      *v, *item;
    unsigned     m;

    if (bottle_get(&v, ctx, obj, "scrub", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "scrub");
    m = 0;

    for (i = 0; i < json_array_size(v); i++) {
        item = json_array_get(v, i);       /* borrowed */
        item_saved = bottle_path_index(ctx, i);

        if (!json_is_string(item)) {
            return bottle_fail(ctx, "must be a string");
        }

        bottle_quote(q, sizeof(q), json_string_value(item),
                     json_string_length(item));
        bit = bottle_enum_index(bottle_held_names, json_string_value(item),
                                json_string_length(item));

        if (bit < 0) {
            return bottle_fail(ctx, "%s is not a held value kind "
                               "(credential, egress_tokens, canary)", q);
        }

        if (m & (1u << bit)) {
            return bottle_fail(ctx, "%s is listed twice", q);
        }

        m |= 1u << bit;
        bottle_path_pop(ctx, item_saved);
    }

    r->scrub = m;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_parse_dlp(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    size_t   saved;
    json_t  *v;

    r->scrub = BOTTLE_HELD_CREDENTIAL;

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
                           bottle_on_match_names, BOTTLE_ON_MATCH_REDACT) != 0
        || bottle_parse_scrub(ctx, v, r) != 0)
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


int
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
        || bottle_parse_mcp(ctx, obj, r) != 0
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
