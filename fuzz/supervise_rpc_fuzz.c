/*
 * libFuzzer target for supervise-helper's JSON-RPC parser
 * (supervise-helper/sv_rpc.c): the agent's POST body, whole.  Beyond "no
 * crash, no sanitizer report": a parsed message is a request with a
 * method and a string or integer id, a notification with a method and no
 * id, or a response with an id; params, when present, is an object; a
 * refused one has a JSON-RPC code and a reason, and its id (echoed in the
 * error) is null, a string or an integer.  Every answer the server would
 * build from it serialises.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervise.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int          code;
    char         err[512], *in, *text;
    json_t      *id, *o, *res;
    sv_msg_t     m;
    const char  *version;

    in = malloc(size ? size : 1);
    CHECK(in != NULL);
    if (size) {
        memcpy(in, data, size);
    }

    err[0] = '\0';
    code = sv_rpc_parse(&m, in, size, &id, err, sizeof(err));

    CHECK(id != NULL);
    CHECK(json_is_null(id) || json_is_string(id) || json_is_integer(id));

    if (code != 0) {
        CHECK(code == SV_RPC_PARSE_ERROR || code == SV_RPC_INVALID_REQUEST
              || code == SV_RPC_INVALID_PARAMS);
        CHECK(err[0] != '\0');
        CHECK(m.root == NULL);

        o = sv_rpc_error(id, code, err);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        CHECK(text != NULL);
        free(text);
        json_decref(o);
        json_decref(id);
        free(in);
        return 0;
    }

    CHECK(m.root != NULL);

    switch (m.kind) {

    case SV_MSG_REQUEST:
        CHECK(m.method != NULL && m.method[0] != '\0');
        CHECK(json_is_string(m.id) || json_is_integer(m.id));
        break;

    case SV_MSG_NOTIFICATION:
        CHECK(m.method != NULL && m.id == NULL);
        break;

    case SV_MSG_RESPONSE:
        CHECK(m.method == NULL && m.id != NULL);
        break;
    }

    CHECK(m.params == NULL || json_is_object(m.params));

    if (m.kind == SV_MSG_REQUEST) {
        res = sv_rpc_initialize(m.params, &version);
        CHECK(res != NULL && sv_rpc_version_ok(version));

        o = sv_rpc_result(m.id, res);
        CHECK(o != NULL);
        text = json_dumps(o, JSON_COMPACT);
        CHECK(text != NULL);
        free(text);
        json_decref(o);
    }

    sv_msg_free(&m);
    json_decref(id);
    free(in);

    return 0;
}
