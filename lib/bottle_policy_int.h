/*
 * Private to the policy parser (bottle_policy*.c): the policy object and
 * its arena, the parse state that error messages are built from, and the
 * JSON access and validation helpers the route, bottle and document
 * parsers share.  Not an interface: users include bottle_policy.h.
 */

#ifndef BOTTLE_POLICY_INT_H
#define BOTTLE_POLICY_INT_H

#include <stddef.h>

#include <jansson.h>

#include "bottle_policy.h"


#define BOTTLE_HOST_MAX      253
#define BOTTLE_LABEL_MAX     63
#define BOTTLE_ID_MAX        128
#define BOTTLE_NAME_MAX      128
#define BOTTLE_TOKEN_MIN     16
#define BOTTLE_CANARY_MIN    8
#define BOTTLE_FILE_MAX      (64 * 1024 * 1024)
#define BOTTLE_QUOTE_LEN     80
#define BOTTLE_RESERVED_HOST "_egress.local"
#define BOTTLE_CREATE_MAX    64     /* git_gate.actions.create entries */


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
    size_t              block_next;     /* the next arena block's size; 0:
                                           BOTTLE_ARENA_BLOCK */
};


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


/* the arena, error messages and the field path (bottle_policy_json.c) */
void *bottle_alloc_array(bottle_policy_t *p, size_t n, size_t size);
int bottle_fail(bottle_ctx_t *ctx, const char *fmt, ...);
const char *bottle_quote(char *out, size_t cap, const char *s, size_t len);
void bottle_path_append(bottle_ctx_t *ctx, const char *fmt, ...);
size_t bottle_path_key(bottle_ctx_t *ctx, const char *key);
size_t bottle_path_index(bottle_ctx_t *ctx, size_t i);
void bottle_path_pop(bottle_ctx_t *ctx, size_t saved);

/* string helpers, ASCII only (bottle_policy_json.c) */
int bottle_lower(int c);
int bottle_eq_nocase(const char *a, size_t alen, const char *b, size_t blen);
int bottle_str_set(bottle_str_t *out, bottle_ctx_t *ctx, const char *s,
    size_t len, int lower);
int bottle_has_ctl(const char *s, size_t len);
int bottle_is_visible(const char *s, size_t len);
int bottle_name_ok(const char *s, size_t len);
int bottle_id_ok(const char *s, size_t len);
int bottle_token_ok(const char *s, size_t len);
int bottle_hostname_ok(const char *s, size_t len);
size_t bottle_hash_host(const char *s, size_t len);
size_t bottle_table_size(size_t n);
int bottle_sha256(unsigned char *out, const void *data, size_t len);

/* JSON access, every json_t borrowed; method lists (bottle_policy_json.c) */
int bottle_get(json_t **out, bottle_ctx_t *ctx, json_t *obj, const char *key,
    int type, int required);
int bottle_check_fields(bottle_ctx_t *ctx, json_t *obj,
    const char *const *allowed);
int bottle_get_bool(int *out, bottle_ctx_t *ctx, json_t *obj,
    const char *key);
int bottle_enum_index(const char *const *names, const char *s, size_t len);
int bottle_get_enum(int *out, bottle_ctx_t *ctx, json_t *obj, const char *key,
    const char *const *names, int first);
int bottle_parse_methods(unsigned *out, bottle_ctx_t *ctx, json_t *obj);

/* one route of a bottle (bottle_policy_route.c) */
int bottle_parse_mcp(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r);
int bottle_parse_route(bottle_ctx_t *ctx, json_t *obj, const bottle_t *b,
    bottle_route_t *r);

/* one bottle (bottle_policy_bottle.c) */
int bottle_parse_bottle(bottle_ctx_t *ctx, json_t *obj, bottle_t *b);


#endif /* BOTTLE_POLICY_INT_H */
