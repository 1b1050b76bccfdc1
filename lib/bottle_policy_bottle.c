/*
 * Parsing one bottle: id and slug, identity token, source addresses,
 * canary, egress tokens and held secrets, audit, repo grants, and its
 * routes with the host table that finds them.
 */

#include <stdio.h>
#include <string.h>

#include "bottle_policy_int.h"
#include "bottle_util.h"


static const char *const  bottle_fields[] = {
    "id", "slug", "token", "token_sha256", "source_ips", "canary",
    "egress_tokens", "held_secrets", "audit", "repos", "git_gate", "routes",
    "parent", "children", NULL
};

/* what git-gate's actions do without asking: creating repos, nothing else
 * yet (a key nothing acts on is refused, not ignored) */
static const char *const  bottle_git_gate_fields[] = {
    "actions", "trailer_required", NULL
};

static const char *const  bottle_git_gate_actions_fields[] = {
    "create", NULL
};

static const char *const  bottle_children_fields[] = {
    "max", "agents", NULL
};

static const char *const  bottle_audit_fields[] = {
    "delivery", "firehose", NULL
};

/* enum values, in BOTTLE_* order */
static const char *const  bottle_delivery_names[] = {
    "best_effort", "required", NULL
};

static const char *const  bottle_firehose_names[] = {
    "off", "metadata", "full", NULL
};


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
        hi = bottle_hexval((unsigned char) s[2 * i]);
        lo = bottle_hexval((unsigned char) s[2 * i + 1]);

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

    b->token_given = 1;

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


/* children.agents: names as ids are, unique, BOTTLE_CHILD_AGENTS_MAX */

static int
bottle_parse_child_agents(bottle_ctx_t *ctx, json_t *c, bottle_t *b)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, j, n, len;
    json_t      *a, *v;
    const char  *s;

    if (bottle_get(&a, ctx, c, "agents", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (a == NULL) {
        return 0;
    }

    bottle_path_key(ctx, "agents");
    n = json_array_size(a);

    if (n > BOTTLE_CHILD_AGENTS_MAX) {
        return bottle_fail(ctx, "%zu agents, over the limit of %d", n,
                           BOTTLE_CHILD_AGENTS_MAX);
    }

    if (n == 0) {
        return bottle_fail(ctx, "[] names no agent: omit the field");
    }

    b->child_agents = bottle_alloc_array(ctx->policy, n,
                                         sizeof(bottle_str_t));
    if (b->child_agents == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        v = json_array_get(a, i);
        s = json_string_value(v);
        len = json_string_length(v);

        if (s == NULL || !bottle_id_ok(s, len)) {
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "must be an agent's name, 1-%d "
                               "characters of A-Z a-z 0-9 . _ : @ -",
                               BOTTLE_ID_MAX);
        }

        for (j = 0; j < i; j++) {
            if (b->child_agents[j].len == len
                && memcmp(b->child_agents[j].data, s, len) == 0)
            {
                bottle_path_index(ctx, i);
                return bottle_fail(ctx, "%s: duplicate",
                                   bottle_quote(q, sizeof(q), s, len));
            }
        }

        if (bottle_str_set(&b->child_agents[i], ctx, s, len, 0) != 0) {
            return -1;
        }
    }

    b->nchild_agents = n;

    return 0;
}


/*
 * "parent": the id of the bottle this one is a child of; "children":
 * {"max": N}, how many children launch-bottle may ask for.  Depth 1: a
 * child has no children of its own.
 */

static int
bottle_parse_family(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       len, saved;
    json_t      *v, *c;
    json_int_t   n;
    const char  *s;

    b->parent.data = "";
    b->children_max = BOTTLE_CHILDREN_DEFAULT;

    if (bottle_get(&v, ctx, obj, "parent", BOTTLE_J_STRING, 0) != 0
        || bottle_get(&c, ctx, obj, "children", BOTTLE_J_OBJECT, 0) != 0)
    {
        return -1;
    }

    if (v != NULL) {
        s = json_string_value(v);
        len = json_string_length(v);

        if (!bottle_id_ok(s, len)) {
            bottle_path_key(ctx, "parent");
            return bottle_fail(ctx, "%s is not a bottle id (1-%d characters "
                               "of A-Z a-z 0-9 . _ : @ -)",
                               bottle_quote(q, sizeof(q), s, len),
                               BOTTLE_ID_MAX);
        }

        if (len == b->id.len && memcmp(s, b->id.data, len) == 0) {
            bottle_path_key(ctx, "parent");
            return bottle_fail(ctx, "a bottle cannot be its own parent");
        }

        if (c != NULL) {
            bottle_path_key(ctx, "children");
            return bottle_fail(ctx, "a child (it has a parent) cannot have "
                               "children: depth is 1");
        }

        /* a child launches nothing */
        b->children_max = 0;

        return bottle_str_set(&b->parent, ctx, s, len, 0);
    }

    if (c == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "children");

    if (bottle_check_fields(ctx, c, bottle_children_fields) != 0
        || bottle_get(&v, ctx, c, "max", BOTTLE_J_INT, 0) != 0)
    {
        return -1;
    }

    if (v != NULL) {
        n = json_integer_value(v);

        if (n < 0 || n > BOTTLE_CHILDREN_MAX) {
            bottle_path_key(ctx, "max");
            return bottle_fail(ctx, "must be 0-%d", BOTTLE_CHILDREN_MAX);
        }

        b->children_max = (unsigned) n;
    }

    if (bottle_parse_child_agents(ctx, c, b) != 0) {
        return -1;
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


/* repo grants, for git-gate: "<forge>/<owner>/<repo>[:write]" */

static int
bottle_check_repos(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    size_t   i, n;
    json_t  *v, *item;
    char     err[256];

    if (bottle_get(&v, ctx, obj, "repos", BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    n = v ? json_array_size(v) : 0;
    if (n == 0) {
        return 0;
    }

    b->repos = bottle_alloc_array(ctx->policy, n, sizeof(bottle_repo_t));
    if (b->repos == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = json_array_get(v, i);       /* borrowed */

        if (!json_is_string(item)) {
            bottle_path_key(ctx, "repos");
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "must be a string");
        }

        if (bottle_repo_parse(&b->repos[i], json_string_value(item),
                              json_string_length(item), 1, err, sizeof(err))
            != 0)
        {
            bottle_path_key(ctx, "repos");
            bottle_path_index(ctx, i);
            return bottle_fail(ctx, "%s", err);
        }
    }

    b->nrepos = n;

    return 0;
}


/*
 * git_gate.trailer_required: ["<forge>/<owner>/<repo>", ...]: grants whose
 * pushes git-gate refuses unless every new commit carries a Bottle-Id
 * trailer naming this bottle (docs/gitgate.md, "Commit trailers")
 */

static int
bottle_parse_trailer_required(bottle_ctx_t *ctx, json_t *gg, bottle_t *b)
{
    char     q[BOTTLE_QUOTE_LEN];
    char     err[256];
    size_t   i, n, saved, item_saved;
    json_t  *list, *item;

    if (bottle_get(&list, ctx, gg, "trailer_required", BOTTLE_J_ARRAY, 0)
        != 0)
    {
        return -1;
    }

    n = list ? json_array_size(list) : 0;

    if (n == 0) {
        return 0;
    }

    saved = bottle_path_key(ctx, "trailer_required");

    if (n > BOTTLE_CREATE_MAX) {
        return bottle_fail(ctx, "at most %d repos", BOTTLE_CREATE_MAX);
    }

    b->trailer_required = bottle_alloc_array(ctx->policy, n,
                                             sizeof(bottle_repo_t));
    if (b->trailer_required == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = json_array_get(list, i);     /* borrowed */
        item_saved = bottle_path_index(ctx, i);

        if (!json_is_string(item)) {
            return bottle_fail(ctx, "must be a string");
        }

        if (bottle_repo_parse(&b->trailer_required[i],
                              json_string_value(item),
                              json_string_length(item), 0, err, sizeof(err))
            != 0)
        {
            return bottle_fail(ctx, "%s: %s",
                               bottle_quote(q, sizeof(q),
                                            json_string_value(item),
                                            json_string_length(item)),
                               err);
        }

        bottle_path_pop(ctx, item_saved);
    }

    b->ntrailer_required = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


/*
 * git_gate: {"actions": {"create": ["<forge>/<owner>/<name>[:public]",
 * ...]}}: the repos supervise's create-repo makes without a card
 */

static int
bottle_parse_git_gate(bottle_ctx_t *ctx, json_t *obj, bottle_t *b)
{
    char     q[BOTTLE_QUOTE_LEN];
    char     err[256];
    size_t   i, j, n, saved, item_saved;
    json_t  *gg, *actions, *create, *item;

    if (bottle_get(&gg, ctx, obj, "git_gate", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (gg == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "git_gate");

    if (bottle_check_fields(ctx, gg, bottle_git_gate_fields) != 0
        || bottle_parse_trailer_required(ctx, gg, b) != 0
        || bottle_get(&actions, ctx, gg, "actions", BOTTLE_J_OBJECT, 0) != 0)
    {
        return -1;
    }

    if (actions == NULL) {
        bottle_path_pop(ctx, saved);
        return 0;
    }

    bottle_path_key(ctx, "actions");

    if (bottle_check_fields(ctx, actions, bottle_git_gate_actions_fields) != 0
        || bottle_get(&create, ctx, actions, "create", BOTTLE_J_ARRAY, 0)
           != 0)
    {
        return -1;
    }

    n = create ? json_array_size(create) : 0;

    if (n == 0) {
        bottle_path_pop(ctx, saved);
        return 0;
    }

    bottle_path_key(ctx, "create");

    if (n > BOTTLE_CREATE_MAX) {
        return bottle_fail(ctx, "at most %d patterns", BOTTLE_CREATE_MAX);
    }

    b->create = bottle_alloc_array(ctx->policy, n,
                                   sizeof(bottle_repo_pattern_t));
    if (b->create == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = json_array_get(create, i);   /* borrowed */
        item_saved = bottle_path_index(ctx, i);

        if (!json_is_string(item)) {
            return bottle_fail(ctx, "must be a string");
        }

        if (bottle_repo_pattern_parse(&b->create[i], json_string_value(item),
                                      json_string_length(item), err,
                                      sizeof(err))
            != 0)
        {
            return bottle_fail(ctx, "%s: %s",
                               bottle_quote(q, sizeof(q),
                                            json_string_value(item),
                                            json_string_length(item)),
                               err);
        }

        /* the same pattern twice is a mistake (an edit meant elsewhere) */

        for (j = 0; j < i; j++) {
            if (memcmp(&b->create[j], &b->create[i],
                       sizeof(bottle_repo_pattern_t)) == 0)
            {
                return bottle_fail(ctx, "%s is already "
                                   "git_gate.actions.create[%zu]",
                                   bottle_quote(q, sizeof(q),
                                                json_string_value(item),
                                                json_string_length(item)),
                                   j);
            }
        }

        bottle_path_pop(ctx, item_saved);
    }

    b->ncreate = n;
    bottle_path_pop(ctx, saved);

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


int
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
        || bottle_parse_family(ctx, obj, b) != 0
        || bottle_check_repos(ctx, obj, b) != 0
        || bottle_parse_git_gate(ctx, obj, b) != 0
        || bottle_parse_routes(ctx, obj, b) != 0
        || bottle_index_routes(ctx, b) != 0)
    {
        return -1;
    }

    return 0;
}
