/*
 * MCP gating (bottle_mcp.h, docs/mcp.md): the matcher, and the JSON-RPC
 * reader of request bodies and the refusal built from what it read.  The
 * response side (list filtering) is bottle_mcp_filter.c.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "bottle_mcp.h"


static const char *const  bottle_mcp_fields[BOTTLE_MCP_NKINDS] = {
    "tools", "resources", "prompts"
};

static const char *const  bottle_mcp_names[BOTTLE_MCP_NKINDS] = {
    "tool", "resource", "prompt"
};

/* the gated calls, by kind: the method, the param naming the target */
static const char *const  bottle_mcp_calls[BOTTLE_MCP_NKINDS] = {
    "tools/call", "resources/read", "prompts/get"
};

static const char *const  bottle_mcp_targets[BOTTLE_MCP_NKINDS] = {
    "name", "uri", "name"
};


static int bottle_mcp_read_msg(bottle_mcp_msg_t *msg, const bottle_mcp_t *m,
    json_t *v, char *err, size_t errlen);
static int bottle_mcp_list_kind(const char *method);
static char *bottle_mcp_error(json_t *id, int code, const char *message);


const char *
bottle_mcp_kind_field(int kind)
{
    return (kind >= 0 && kind < BOTTLE_MCP_NKINDS) ? bottle_mcp_fields[kind]
                                                   : "";
}


const char *
bottle_mcp_kind_name(int kind)
{
    return (kind >= 0 && kind < BOTTLE_MCP_NKINDS) ? bottle_mcp_names[kind]
                                                   : "";
}


int
bottle_mcp_kind_by_field(const char *s, size_t len)
{
    int  k;

    for (k = 0; k < BOTTLE_MCP_NKINDS; k++) {
        if (strlen(bottle_mcp_fields[k]) == len
            && memcmp(bottle_mcp_fields[k], s, len) == 0)
        {
            return k;
        }
    }

    return -1;
}


int
bottle_mcp_glob_ok(const char *s, size_t len, const char **why)
{
    size_t  i;

    if (len == 0) {
        *why = "empty";
        return -1;
    }

    if (len > BOTTLE_MCP_NAME_MAX) {
        *why = "longer than 512 bytes";
        return -1;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) {
            *why = "holds a control character";
            return -1;
        }

        if (s[i] == '*' && i + 1 < len && s[i + 1] == '*') {
            *why = "\"**\": one \"*\" matches any run already";
            return -1;
        }
    }

    return 0;
}


static int
bottle_mcp_any(const bottle_str_t *globs, size_t n, const char *name,
    size_t len)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (bottle_glob_match(globs[i].data, globs[i].len, name, len)) {
            return 1;
        }
    }

    return 0;
}


int
bottle_mcp_allowed(const bottle_mcp_t *m, int kind, const char *name,
    size_t len)
{
    const bottle_mcp_list_t  *l;

    if (m == NULL || kind < 0 || kind >= BOTTLE_MCP_NKINDS) {
        return 0;
    }

    l = &m->kinds[kind];

    if (bottle_mcp_any(l->deny, l->ndeny, name, len)) {
        return 0;
    }

    return bottle_mcp_any(l->allow, l->nallow, name, len);
}


/* the request side */

int
bottle_mcp_read(bottle_mcp_body_t *out, const bottle_mcp_t *m,
    const char *body, size_t len, char *err, size_t errlen)
{
    size_t        i, n;
    json_t       *root, *v;
    json_error_t  je;

    memset(out, 0, sizeof(bottle_mcp_body_t));

    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        snprintf(err, errlen, "the body is not JSON (parse error at "
                 "byte %d)", je.position);
        return -1;
    }

    if (json_is_array(root)) {
        out->batch = 1;
        n = json_array_size(root);

        if (n == 0 || n > BOTTLE_MCP_BATCH_MAX) {
            snprintf(err, errlen, "a batch must hold 1 to %d messages, "
                     "not %zu", BOTTLE_MCP_BATCH_MAX, n);
            json_decref(root);
            return -1;
        }

    } else {
        n = 1;
    }

    out->msgs = calloc(n, sizeof(bottle_mcp_msg_t));
    if (out->msgs == NULL) {
        snprintf(err, errlen, "out of memory");
        json_decref(root);
        return -1;
    }

    out->n = n;

    for (i = 0; i < n; i++) {
        v = out->batch ? json_array_get(root, i) : root;

        if (bottle_mcp_read_msg(&out->msgs[i], m, v, err, errlen) != 0) {
            if (out->batch) {
                size_t  l = strlen(err);

                snprintf(err + l, errlen > l ? errlen - l : 0,
                         " (batch message %zu)", i);
            }

            json_decref(root);
            bottle_mcp_body_free(out);
            return -1;
        }

        if (!out->msgs[i].allowed) {
            out->refused++;
        }
    }

    json_decref(root);

    return 0;
}


static char *
bottle_mcp_strdup(const char *s)
{
    size_t  n;
    char   *p;

    n = strlen(s);
    p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n + 1);
    }

    return p;
}


static int
bottle_mcp_read_msg(bottle_mcp_msg_t *msg, const bottle_mcp_t *m, json_t *v,
    char *err, size_t errlen)
{
    int            kind;
    char          *canon;
    size_t         k;
    json_t        *ver, *id, *method, *params, *target, *args;
    const char    *mname;
    unsigned char  md[SHA256_DIGEST_LENGTH];

    msg->kind = -1;
    msg->list = -1;
    msg->allowed = 1;

    if (!json_is_object(v)) {
        snprintf(err, errlen, "a message must be a JSON object");
        return -1;
    }

    ver = json_object_get(v, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        snprintf(err, errlen, "\"jsonrpc\" must be \"2.0\"");
        return -1;
    }

    id = json_object_get(v, "id");
    if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
        snprintf(err, errlen, "\"id\" must be a string or an integer");
        return -1;
    }

    method = json_object_get(v, "method");

    if (method == NULL) {
        /* a response to the server's request (sampling, elicitation) */
        if (id == NULL || (json_object_get(v, "result") == NULL
                           && json_object_get(v, "error") == NULL))
        {
            snprintf(err, errlen, "a message needs \"method\", or \"id\" "
                     "and \"result\" or \"error\"");
            return -1;
        }

        return 0;
    }

    if (!json_is_string(method) || json_string_length(method) == 0
        || strlen(json_string_value(method)) != json_string_length(method))
    {
        snprintf(err, errlen, "\"method\" must be a non-empty string");
        return -1;
    }

    mname = json_string_value(method);

    msg->method = bottle_mcp_strdup(mname);
    if (msg->method == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (id) {
        msg->id = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
        if (msg->id == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }

    params = json_object_get(v, "params");
    if (params != NULL && !json_is_object(params) && !json_is_array(params)) {
        snprintf(err, errlen, "\"params\" must be an object or an array");
        return -1;
    }

    msg->list = bottle_mcp_list_kind(mname);

    for (kind = 0; kind < BOTTLE_MCP_NKINDS; kind++) {
        if (strcmp(mname, bottle_mcp_calls[kind]) == 0) {
            break;
        }
    }

    if (kind == BOTTLE_MCP_NKINDS) {
        return 0;
    }

    /* a gated call */

    msg->kind = kind;

    if (id == NULL) {
        snprintf(err, errlen, "%s must be a request (with an \"id\")", mname);
        return -1;
    }

    target = json_is_object(params)
             ? json_object_get(params, bottle_mcp_targets[kind]) : NULL;

    if (!json_is_string(target)
        || strlen(json_string_value(target)) != json_string_length(target))
    {
        snprintf(err, errlen, "%s needs params.%s, a string", mname,
                 bottle_mcp_targets[kind]);
        return -1;
    }

    msg->name = bottle_mcp_strdup(json_string_value(target));
    if (msg->name == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    args = json_object_get(params, "arguments");
    if (args != NULL && !json_is_object(args)) {
        snprintf(err, errlen, "%s: params.arguments must be an object",
                 mname);
        return -1;
    }

    /* the arguments' canonical bytes: compact, keys sorted; none: null */

    canon = json_dumps(args ? args : json_null(),
                       JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (canon == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    SHA256((const unsigned char *) canon, strlen(canon), md);
    free(canon);

    memcpy(msg->digest, "sha256:", 7);

    for (k = 0; k < SHA256_DIGEST_LENGTH; k++) {
        msg->digest[7 + 2 * k] = "0123456789abcdef"[md[k] >> 4];
        msg->digest[8 + 2 * k] = "0123456789abcdef"[md[k] & 0xf];
    }

    msg->digest[7 + 2 * SHA256_DIGEST_LENGTH] = '\0';

    msg->allowed = bottle_mcp_allowed(m, kind, msg->name, strlen(msg->name));

    return 0;
}


static int
bottle_mcp_list_kind(const char *method)
{
    if (strcmp(method, "tools/list") == 0) {
        return BOTTLE_MCP_TOOL;
    }

    if (strcmp(method, "resources/list") == 0
        || strcmp(method, "resources/templates/list") == 0)
    {
        return BOTTLE_MCP_RESOURCE;
    }

    if (strcmp(method, "prompts/list") == 0) {
        return BOTTLE_MCP_PROMPT;
    }

    return -1;
}


void
bottle_mcp_body_free(bottle_mcp_body_t *b)
{
    size_t  i;

    for (i = 0; i < b->n; i++) {
        free(b->msgs[i].id);
        free(b->msgs[i].method);
        free(b->msgs[i].name);
    }

    free(b->msgs);
    b->msgs = NULL;
    b->n = 0;
}


/* the answers */

#define BOTTLE_MCP_E_DENIED     (-32001)
#define BOTTLE_MCP_E_INVALID    (-32600)


static char *
bottle_mcp_error(json_t *id, int code, const char *message)
{
    char    *s;
    json_t  *o;

    o = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                  id ? id : json_null(), "error", "code", code,
                  "message", message);
    if (o == NULL) {
        return NULL;
    }

    s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);

    return s;
}


char *
bottle_mcp_refusal(const bottle_mcp_body_t *b, size_t *len)
{
    char                    *s, *one, msg[BOTTLE_MCP_NAME_MAX + 512];
    size_t                   i;
    json_t                  *arr, *id, *e;
    json_error_t             je;
    const bottle_mcp_msg_t  *m;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (i = 0; i < b->n; i++) {
        m = &b->msgs[i];

        if (m->id == NULL) {
            /* a notification or a response: nothing answers it */
            continue;
        }

        if (!m->allowed) {
            snprintf(msg, sizeof(msg), "the %s \"%.*s\" is not allowed for "
                     "this bottle on this server (rule: mcp_%s_denied). If "
                     "you need it, ask the operator (supervise: egress-allow "
                     "with an mcp part).", bottle_mcp_names[m->kind],
                     BOTTLE_MCP_NAME_MAX, m->name,
                     bottle_mcp_names[m->kind]);

        } else {
            snprintf(msg, sizeof(msg), "not forwarded: another message of "
                     "this batch was refused (rule: mcp_batch_refused)");
        }

        id = json_loads(m->id, JSON_DECODE_ANY, &je);
        one = bottle_mcp_error(id, m->allowed ? BOTTLE_MCP_E_INVALID
                                              : BOTTLE_MCP_E_DENIED, msg);
        json_decref(id);

        e = one ? json_loads(one, 0, &je) : NULL;
        free(one);

        if (e == NULL || json_array_append_new(arr, e) != 0) {
            json_decref(arr);
            return NULL;
        }

        if (!b->batch) {
            break;
        }
    }

    if (b->batch) {
        s = json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER);

    } else {
        e = json_array_get(arr, 0);
        s = e ? json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    }

    json_decref(arr);

    if (s) {
        *len = strlen(s);
    }

    return s;
}


char *
bottle_mcp_malformed(const char *why, size_t *len)
{
    char  *s, msg[600];

    snprintf(msg, sizeof(msg), "malformed JSON-RPC: %.500s (rule: "
             "mcp_malformed); nothing was forwarded", why);

    s = bottle_mcp_error(NULL, BOTTLE_MCP_E_INVALID, msg);
    if (s) {
        *len = strlen(s);
    }

    return s;
}
