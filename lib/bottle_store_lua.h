/*
 * The put script's text as a macro, private to lib/: bottle_store.c
 * exports it as bottle_store_put_script, and the decide script of
 * bottle_proposal.c runs the same text as a function, so that an approved
 * egress change is written exactly as bottlectl policy put writes it.
 */

#ifndef BOTTLE_STORE_LUA_H
#define BOTTLE_STORE_LUA_H

#include "bottle_store.h"


/* ARGV and the reply: bottle_store.h, "put" */

#define BOTTLE_STORE_PUT_LUA                                                  \
    "local n = tonumber(ARGV[1])\n" \
    "local seen = {}\n" \
    "for i = 0, n - 1 do\n" \
    "  local id, digest = ARGV[2 + 3 * i], ARGV[4 + 3 * i]\n" \
    "  local owner = redis.call('HGET', '" BOTTLE_STORE_TOKENS "', digest)\n" \
    "  if owner and owner ~= id then\n" \
    "    return redis.error_reply('bottle \"' .. id .. '\": token: already '" \
    "      .. 'the identity of bottle \"' .. owner .. '\"')\n" \
    "  end\n" \
    "  if seen[digest] and seen[digest] ~= id then\n" \
    "    return redis.error_reply('bottle \"' .. id .. '\": token: already '" \
    "      .. 'the identity of bottle \"' .. seen[digest] .. '\"')\n" \
    "  end\n" \
    "  seen[digest] = id\n" \
    "end\n" \
    "local out = {}\n" \
    "for i = 0, n - 1 do\n" \
    "  local id, json, digest = ARGV[2 + 3 * i], ARGV[3 + 3 * i]," \
    " ARGV[4 + 3 * i]\n" \
    "  local key = '" BOTTLE_STORE_POLICY_PREFIX "' .. id\n" \
    "  local old = redis.call('HGET', key, '" BOTTLE_STORE_F_TOKEN "')\n" \
    "  if old and old ~= digest then\n" \
    "    redis.call('HDEL', '" BOTTLE_STORE_TOKENS "', old)\n" \
    "  end\n" \
    "  local v = redis.call('INCR', '" BOTTLE_STORE_VERSION "')\n" \
    "  redis.call('HSET', key, '" BOTTLE_STORE_F_JSON "', json, '" \
    BOTTLE_STORE_F_VERSION "', v, '" BOTTLE_STORE_F_TOKEN "', digest)\n" \
    "  redis.call('HSET', '" BOTTLE_STORE_BOTTLES "', id, v)\n" \
    "  redis.call('HSET', '" BOTTLE_STORE_TOKENS "', digest, id)\n" \
    "  redis.call('PUBLISH', '" BOTTLE_STORE_CHANGES "', id .. ' ' .. v)\n" \
    "  out[#out + 1] = v\n" \
    "end\n" \
    "return out\n"


#endif /* BOTTLE_STORE_LUA_H */
