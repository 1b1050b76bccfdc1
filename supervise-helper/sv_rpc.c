/*
 * JSON-RPC 2.0 and MCP's own methods (docs/supervise.md): the parse of
 * one message, the error and result envelopes, initialize's answer and
 * the tools' list with their input schemas.  No store and no HTTP here:
 * fuzz/supervise_rpc_fuzz.c runs the parser alone.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_record.h"
#include "supervise.h"


#define SV_INSTRUCTIONS                                                      \
    "This server asks the operator of your sandbox for more access. "       \
    "Every tool queues a proposal the operator answers; a call waits a "    \
    "while for the answer, else returns {\"status\":\"pending\",\"id\":...}"\
    " and check-proposal picks the answer up later. "                       \
    "git never goes out through egress, not even to an allowed host: "      \
    "repos go through git-gate, with their usual URLs and no key or token "  \
    "of yours. A repo this bottle does not have needs add-repo (and a "     \
    "forge the gateway has not connected needs forge-connect first). "      \
    "list-egress-routes shows the hosts you may reach now."


static int sv_rpc_id_ok(const json_t *id);


int
sv_rpc_parse(sv_msg_t *out, const char *body, size_t len, json_t **id_out,
    char *err, size_t errlen)
{
    json_t        *root, *v, *id;
    const char    *key;
    json_error_t   jerr;

    memset(out, 0, sizeof(*out));
    *id_out = json_null();

    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        snprintf(err, errlen, "parse error: %s", jerr.text);
        return SV_RPC_PARSE_ERROR;
    }

    if (json_is_array(root)) {
        json_decref(root);
        snprintf(err, errlen, "invalid request: batches are not supported "
                 "(MCP %s)", SV_PROTOCOL_LATEST);
        return SV_RPC_INVALID_REQUEST;
    }

    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(err, errlen, "invalid request: not an object");
        return SV_RPC_INVALID_REQUEST;
    }

    id = json_object_get(root, "id");                       /* borrowed */
    if (id && sv_rpc_id_ok(id)) {
        json_decref(*id_out);
        *id_out = json_incref(id);
    }

    v = json_object_get(root, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0) {
        snprintf(err, errlen, "invalid request: \"jsonrpc\" must be "
                 "\"2.0\"");
        goto invalid;
    }

    if (id && !sv_rpc_id_ok(id)) {
        snprintf(err, errlen, "invalid request: \"id\" must be a string or "
                 "an integer");
        goto invalid;
    }

    v = json_object_get(root, "method");

    if (v == NULL) {

        /* a response to a request of ours: we send none, so ignore it */

        if (id == NULL || (json_object_get(root, "result") == NULL
                           && json_object_get(root, "error") == NULL))
        {
            snprintf(err, errlen, "invalid request: no \"method\"");
            goto invalid;
        }

        out->kind = SV_MSG_RESPONSE;
        out->root = root;
        out->id = id;
        return 0;
    }

    if (!json_is_string(v) || json_string_length(v) == 0) {
        snprintf(err, errlen, "invalid request: \"method\" must be a "
                 "non-empty string");
        goto invalid;
    }

    out->params = json_object_get(root, "params");
    if (out->params && !json_is_object(out->params)) {
        snprintf(err, errlen, "invalid params: \"params\" must be an "
                 "object");
        json_decref(root);
        memset(out, 0, sizeof(*out));
        return SV_RPC_INVALID_PARAMS;
    }

    json_object_foreach(root, key, v) {
        if (strcmp(key, "jsonrpc") != 0 && strcmp(key, "id") != 0
            && strcmp(key, "method") != 0 && strcmp(key, "params") != 0)
        {
            snprintf(err, errlen, "invalid request: unknown member \"%.64s\"",
                     key);
            goto invalid;
        }
    }

    out->kind = id ? SV_MSG_REQUEST : SV_MSG_NOTIFICATION;
    out->root = root;
    out->id = id;
    out->method = json_string_value(json_object_get(root, "method"));

    return 0;

invalid:

    json_decref(root);
    memset(out, 0, sizeof(*out));

    return SV_RPC_INVALID_REQUEST;
}


/* MCP: a string or an integer, never null */

static int
sv_rpc_id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}


void
sv_msg_free(sv_msg_t *m)
{
    json_decref(m->root);
    memset(m, 0, sizeof(*m));
}


json_t *
sv_rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                     "result", result);
}


json_t *
sv_rpc_error(json_t *id, int code, const char *message)
{
    char    *fit;
    json_t  *m;

    /* the agent's bytes quoted in it may be cut inside a character
     * (jansson's "near '...'", a member's name): '?' in their place */

    m = json_string(message);
    if (m == NULL) {
        fit = strdup(message);
        if (fit == NULL) {
            return NULL;
        }

        bottle_record_utf8_fix((unsigned char *) fit, strlen(fit));
        m = json_string(fit);
        free(fit);

        if (m == NULL) {
            return NULL;
        }
    }

    return json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0",
                     "id", id ? id : json_null(), "error", "code", code,
                     "message", m);
}


int
sv_rpc_version_ok(const char *v)
{
    return strcmp(v, SV_PROTOCOL_LATEST) == 0
           || strcmp(v, SV_PROTOCOL_OLDER) == 0;
}


json_t *
sv_rpc_initialize(const json_t *params, const char **version)
{
    const char  *asked;

    /* the client's version if we speak it, else our latest (spec) */

    asked = json_string_value(json_object_get(params, "protocolVersion"));
    *version = asked && sv_rpc_version_ok(asked) ? asked
                                                 : SV_PROTOCOL_LATEST;

    return json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}, s:s}",
                     "protocolVersion", *version,
                     "capabilities", "tools",
                     "serverInfo", "name", SV_NAME, "version", SV_VERSION,
                     "instructions", SV_INSTRUCTIONS);
}


#define SV_JUSTIFICATION                                                     \
    "\"justification\": {\"type\": \"string\", \"maxLength\": 4096,"         \
    " \"description\": \"why you need it, for the operator\"}"

#define SV_GIT_NOTE                                                          \
    " git never goes out through egress, even to an allowed host: repos go"  \
    " through git-gate with their usual URLs and no key or token; a repo"    \
    " you lack needs add-repo."

static const char  sv_tools_json[] =
"["
"{\"name\": \"egress-allow\","
" \"description\": \"Ask the operator to let this bottle reach a host over"
" HTTP(S): give a route object as in the gateway's policy, or a host and"
" the methods you need (GET and HEAD when none)." SV_GIT_NOTE "\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"route\": {\"type\": \"object\", \"description\": \"a route: host,"
" port, methods, allow, ...\"},"
"  \"host\": {\"type\": \"string\"},"
"  \"methods\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
"  \"mcp\": {\"type\": \"object\", \"description\": \"with host, for a"
" tool, resource or prompt of its MCP server the gateway refused (rule"
" mcp_*_denied): {tools: [names], resources: [URIs], prompts: [names]}\"},"
"  " SV_JUSTIFICATION "},"
" \"required\": [\"justification\"]}},"
"{\"name\": \"egress-block\","
" \"description\": \"Ask the operator to remove this bottle's route to a"
" host." SV_GIT_NOTE "\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"host\": {\"type\": \"string\"}, " SV_JUSTIFICATION "},"
" \"required\": [\"host\", \"justification\"]}},"
"{\"name\": \"list-egress-routes\","
" \"description\": \"The hosts this bottle may reach now, with their ports,"
" methods and paths (never a token).\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {}}},"
"{\"name\": \"forge-connect\","
" \"description\": \"Ask the operator to connect a git forge (Gitea or"
" GitHub), given as an https URL; the operator gives the token, which"
" never reaches you.\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"url\": {\"type\": \"string\", \"description\": \"https://host[:port]/\"},"
"  " SV_JUSTIFICATION "},"
" \"required\": [\"url\", \"justification\"]}},"
"{\"name\": \"add-repo\","
" \"description\": \"Ask for a repo as a grant through git-gate:"
" <forge>/<owner>/<repo>, with :write to push. The forge must be"
" connected (forge-connect first).\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"repo\": {\"type\": \"string\"}, " SV_JUSTIFICATION "},"
" \"required\": [\"repo\", \"justification\"]}},"
"{\"name\": \"launch-bottle\","
" \"description\": \"Ask the operator to start a child bottle running an"
" agent on a prompt, with access within this bottle's. A child cannot"
" launch bottles.\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"agent\": {\"type\": \"string\"},"
"  \"prompt\": {\"type\": \"string\"},"
"  \"bottles\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
"  \"label\": {\"type\": \"string\"},"
"  " SV_JUSTIFICATION "},"
" \"required\": [\"agent\", \"prompt\", \"justification\"]}},"
"{\"name\": \"create-repo\","
" \"description\": \"Ask for a new repo <forge>/<owner>/<name> on a"
" connected forge, private unless public is true. One this bottle's"
" policy allows is created and granted with write at once; any other"
" waits for the operator.\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"repo\": {\"type\": \"string\"},"
"  \"public\": {\"type\": \"boolean\"},"
"  " SV_JUSTIFICATION "},"
" \"required\": [\"repo\", \"justification\"]}},"
"{\"name\": \"check-proposal\","
" \"description\": \"The state of one of this bottle's proposals and,"
" once answered, the operator's action and notes.\","
" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
"  \"id\": {\"type\": \"string\"}},"
" \"required\": [\"id\"]}}"
"]";


json_t *
sv_rpc_tools_list(void)
{
    json_t  *tools;

    tools = json_loads(sv_tools_json, 0, NULL);
    if (tools == NULL) {
        return NULL;
    }

    return json_pack("{s:o}", "tools", tools);
}


json_t *
sv_tool_text(int is_error, const char *fmt, ...)
{
    char     text[4096];
    size_t   i;
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);

    /* the agent's words may be cut mid-character: ASCII only */

    for (i = 0; text[i]; i++) {
        if ((unsigned char) text[i] >= 0x80
            || ((unsigned char) text[i] < 0x20 && text[i] != '\n'))
        {
            text[i] = '?';
        }
    }

    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                     "text", text, "isError", is_error);
}
