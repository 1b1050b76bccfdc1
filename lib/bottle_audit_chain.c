/*
 * The audit journal's hash chain (bottle_audit_chain.h): the Lua every
 * appending script includes, and the C half (the event's digest, the
 * link hash a verifier recomputes, the synchronous writers' append).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "bottle_audit_chain.h"
#include "bottle_audit_chain_lua.h"
#include "bottle_store.h"


const char  bottle_audit_chain_lua[] = BOTTLE_AUDIT_CHAIN_LUA;


const char  bottle_audit_append_script[] =
    BOTTLE_AUDIT_CHAIN_LUA
    "local id = bottle_chain_append(ARGV[1], ARGV[2])\n"
    "if type(id) == 'table' and id.err then return redis.error_reply(id.err)"
    " end\n"
    "return id\n";


const char  bottle_audit_takeback_script[] =
    "local last = redis.call('XREVRANGE', '" BOTTLE_STORE_AUDIT "', '+',"
    " '-', 'COUNT', 1)\n"
    "if #last == 0 or last[1][1] ~= ARGV[1] then return 0 end\n"
    "local f, s, p = last[1][2]\n"
    "for i = 1, #f - 1, 2 do\n"
    "  if f[i] == '" BOTTLE_AUDIT_F_SEQ "' then s = f[i + 1]\n"
    "  elseif f[i] == 'prev' then p = f[i + 1] end\n"
    "end\n"
    "local head = redis.call('HGET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"
    BOTTLE_AUDIT_F_SEQ "')\n"
    "if not s or not p or head ~= s then return 0 end\n"
    "redis.call('XDEL', '" BOTTLE_STORE_AUDIT "', ARGV[1])\n"
    "redis.call('HSET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"
    BOTTLE_AUDIT_F_SEQ "', string.format('%.0f', tonumber(s) - 1), '"
    BOTTLE_AUDIT_F_HASH "', p)\n"
    "return 1\n";


void
bottle_audit_sha256_hex(char out[BOTTLE_AUDIT_HEX_LEN], const void *data,
    size_t len)
{
    size_t          i;
    unsigned char   md[SHA256_DIGEST_LENGTH];

    static const char  hex[] = "0123456789abcdef";

    SHA256(data, len, md);

    for (i = 0; i < sizeof(md); i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 0x0f];
    }

    out[2 * sizeof(md)] = '\0';
}


static int
bottle_audit_unhex(unsigned char *out, const char *hex)
{
    int     i, hi, lo;

    for (i = 0; i < 32; i++) {
        hi = hex[2 * i];
        lo = hex[2 * i + 1];

        hi = hi >= '0' && hi <= '9' ? hi - '0'
             : hi >= 'a' && hi <= 'f' ? hi - 'a' + 10 : -1;
        lo = lo >= '0' && lo <= '9' ? lo - '0'
             : lo >= 'a' && lo <= 'f' ? lo - 'a' + 10 : -1;

        if (hi < 0 || lo < 0) {
            return -1;
        }

        out[i] = (unsigned char) (hi << 4 | lo);
    }

    return hex[64] == '\0' ? 0 : -1;
}


int
bottle_audit_link(char out[BOTTLE_AUDIT_HEX_LEN], const char *prev,
    uint64_t seq, const char *digest)
{
    int             i;
    unsigned char   in[72];

    if (bottle_audit_unhex(in, prev) != 0
        || bottle_audit_unhex(in + 40, digest) != 0)
    {
        return -1;
    }

    for (i = 0; i < 8; i++) {
        in[32 + i] = (unsigned char) (seq >> (56 - 8 * i));
    }

    bottle_audit_sha256_hex(out, in, sizeof(in));

    return 0;
}


char *
bottle_audit_chain_arg(const char *json, size_t len, size_t *outlen)
{
    char  *arg;

    arg = malloc(BOTTLE_AUDIT_HEX_LEN + len + 1);
    if (arg == NULL) {
        return NULL;
    }

    bottle_audit_sha256_hex(arg, json, len);
    arg[BOTTLE_AUDIT_HEX_LEN - 1] = ':';
    memcpy(arg + BOTTLE_AUDIT_HEX_LEN, json, len);
    arg[BOTTLE_AUDIT_HEX_LEN + len] = '\0';

    if (outlen) {
        *outlen = BOTTLE_AUDIT_HEX_LEN + len;
    }

    return arg;
}


char *
bottle_audit_chained(const bottle_audit_event_t *e, size_t *len)
{
    char    *json, *arg;
    size_t   n;

    json = bottle_audit_json(e, &n);
    if (json == NULL) {
        return NULL;
    }

    arg = bottle_audit_chain_arg(json, n, len);
    free(json);

    return arg;
}


redisReply *
bottle_audit_append(redisContext *c, const char *maxlen, const char *json,
    size_t len)
{
    char        *arg;
    size_t       n, argvlen[5];
    const char  *argv[5];
    redisReply  *r;

    arg = bottle_audit_chain_arg(json, len, &n);
    if (arg == NULL) {
        return NULL;
    }

    argv[0] = "EVAL";
    argv[1] = bottle_audit_append_script;
    argv[2] = "0";
    argv[3] = maxlen;
    argv[4] = arg;

    argvlen[0] = 4;
    argvlen[1] = strlen(bottle_audit_append_script);
    argvlen[2] = 1;
    argvlen[3] = strlen(maxlen);
    argvlen[4] = n;

    r = redisCommandArgv(c, 5, argv, argvlen);
    free(arg);

    return r;
}
