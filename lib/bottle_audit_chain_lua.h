/*
 * The Lua every script that appends to the audit journal includes
 * (bottle_audit_chain.h): SHA-256 with Redis's `bit` library, 32-bit
 * operations on Lua numbers (doubles), sums wrapped by bit.tobit.  The
 * chain hashes 72 bytes per event (two blocks); the event's digest is the
 * writer's, computed outside Redis, except for policy.changed, whose
 * version is known only inside the put's script (a few hundred bytes,
 * once per bottle a put changes).  Defines
 *   bottle_sha256(s): the SHA-256 of a string, 64 lowercase hex digits
 *   bottle_chain_append(max, arg): arg a chained argument; the head
 *     moved and the entry XADDed, or neither (never throws: the id, or
 *     the error table as redis.pcall returns it); then, best effort, the
 *     stream trimmed to max ("" or nil: not trimmed) and the checkpoint
 *     of what was trimmed kept.
 */

#ifndef BOTTLE_AUDIT_CHAIN_LUA_H
#define BOTTLE_AUDIT_CHAIN_LUA_H

#include "bottle_audit_chain.h"
#include "bottle_store.h"


#define BOTTLE_AUDIT_CHAIN_LUA                                                \
    "local bottle_sha256\n"                                                   \
    "do\n"                                                                    \
    "  local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot\n" \
    "  local ror, rshift, lshift = bit.ror, bit.rshift, bit.lshift\n"         \
    "  local tobit, tohex = bit.tobit, bit.tohex\n"                           \
    "  local K = {\n"                                                         \
    "    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,\n"       \
    "    0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,\n"       \
    "    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,\n"       \
    "    0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,\n"       \
    "    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152,\n"       \
    "    0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,\n"       \
    "    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,\n"       \
    "    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,\n"       \
    "    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,\n"       \
    "    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,\n"       \
    "    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,\n"       \
    "    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,\n"       \
    "    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2 }\n"                  \
    "  bottle_sha256 = function(m)\n"                                         \
    "    local n = #m\n"                                                      \
    "    local t = {}\n"                                                      \
    "    for i = 7, 0, -1 do\n"                                               \
    "      t[#t + 1] = string.char(math.floor(n * 8 / 2 ^ (8 * i)) % 256)\n"  \
    "    end\n"                                                               \
    "    m = m .. '\\128' .. string.rep('\\0', (55 - n) % 64)"                \
    " .. table.concat(t)\n"                                                   \
    "    local H = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,\n"       \
    "      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }\n"                \
    "    local w = {}\n"                                                      \
    "    for p = 1, #m, 64 do\n"                                              \
    "      for j = 0, 15 do\n"                                                \
    "        local a, b, c, d = string.byte(m, p + 4 * j, p + 4 * j + 3)\n"   \
    "        w[j] = bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)\n"     \
    "      end\n"                                                             \
    "      for j = 16, 63 do\n"                                               \
    "        local x, y = w[j - 15], w[j - 2]\n"                              \
    "        w[j] = tobit(w[j - 16] + bxor(ror(x, 7), ror(x, 18),"            \
    " rshift(x, 3))\n"                                                        \
    "          + w[j - 7] + bxor(ror(y, 17), ror(y, 19), rshift(y, 10)))\n"   \
    "      end\n"                                                             \
    "      local a, b, c, d, e, f, g, h = H[1], H[2], H[3], H[4], H[5],"      \
    " H[6], H[7], H[8]\n"                                                     \
    "      for j = 0, 63 do\n"                                                \
    "        local t1 = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25))\n"        \
    "          + bxor(band(e, f), band(bnot(e), g)) + K[j + 1] + w[j]\n"      \
    "        local t2 = bxor(ror(a, 2), ror(a, 13), ror(a, 22))\n"            \
    "          + bxor(band(a, b), band(a, c), band(b, c))\n"                  \
    "        h, g, f, e = g, f, e, tobit(d + t1)\n"                           \
    "        d, c, b, a = c, b, a, tobit(t1 + t2)\n"                          \
    "      end\n"                                                             \
    "      H[1], H[2], H[3], H[4] = tobit(H[1] + a), tobit(H[2] + b),"        \
    " tobit(H[3] + c), tobit(H[4] + d)\n"                                     \
    "      H[5], H[6], H[7], H[8] = tobit(H[5] + e), tobit(H[6] + f),"        \
    " tobit(H[7] + g), tobit(H[8] + h)\n"                                     \
    "    end\n"                                                               \
    "    for i = 1, 8 do H[i] = tohex(H[i], 8) end\n"                         \
    "    return table.concat(H)\n"                                            \
    "  end\n"                                                                 \
    "end\n"                                                                   \
    "local function bottle_unhex(s)\n"                                        \
    "  return (string.gsub(s, '..', function(x)\n"                            \
    "    return string.char(tonumber(x, 16)) end))\n"                         \
    "end\n"                                                                   \
    "local function bottle_chain_append(max, arg)\n"                          \
    "  if type(arg) ~= 'string' or #arg < 66"                                 \
    " or string.sub(arg, 65, 65) ~= ':'\n"                                    \
    "     or string.find(string.sub(arg, 1, 64), '[^0-9a-f]') then\n"         \
    "    return {err = 'CHAIN the event is not a chained argument'}\n"        \
    "  end\n"                                                                 \
    "  local c = redis.call('HMGET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"       \
    BOTTLE_AUDIT_F_SEQ "', '" BOTTLE_AUDIT_F_HASH "')\n"                      \
    "  local seq = (tonumber(c[1]) or 0) + 1\n"                               \
    "  local prev = c[2] or string.rep('0', 64)\n"                            \
    "  local s, be = string.format('%.0f', seq), {}\n"                        \
    "  for i = 7, 0, -1 do\n"                                                 \
    "    be[#be + 1] = string.char(math.floor(seq / 2 ^ (8 * i)) % 256)\n"    \
    "  end\n"                                                                 \
    "  local h = bottle_sha256(bottle_unhex(prev) .. table.concat(be)"        \
    " .. bottle_unhex(string.sub(arg, 1, 64)))\n"                             \
    "  local ok = redis.pcall('HSET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"      \
    BOTTLE_AUDIT_F_SEQ "', s, '" BOTTLE_AUDIT_F_HASH "', h)\n"                \
    "  if type(ok) == 'table' and ok.err then return ok end\n"                \
    "  local id = redis.pcall('XADD', '" BOTTLE_STORE_AUDIT "', '*',"         \
    " 'event', string.sub(arg, 66), '" BOTTLE_AUDIT_F_SEQ "', s, 'prev',"     \
    " prev, '" BOTTLE_AUDIT_F_HASH "', h)\n"                                  \
    "  if type(id) == 'table' and id.err then\n"                              \
    "    redis.pcall('HSET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"               \
    BOTTLE_AUDIT_F_SEQ "', c[1] or '0', '" BOTTLE_AUDIT_F_HASH "', prev)\n"   \
    "    return id\n"                                                         \
    "  end\n"                                                                 \
    "  max = tonumber(max)\n"                                                 \
    "  local n = max and max > 0 and redis.pcall('XLEN', '"                   \
    BOTTLE_STORE_AUDIT "')\n"                                                 \
    "  if type(n) == 'number' and n > max + " BOTTLE_AUDIT_TRIM_SLACK_S       \
    " then\n"                                                                 \
    "    local old = redis.pcall('XRANGE', '" BOTTLE_STORE_AUDIT "', '-',"    \
    " '+', 'COUNT', n - max)\n"                                               \
    "    local f, ts, th = type(old) == 'table' and old[#old]"                \
    " and old[#old][2] or {}\n"                                               \
    "    for i = 1, #f - 1, 2 do\n"                                           \
    "      if f[i] == '" BOTTLE_AUDIT_F_SEQ "' then ts = f[i + 1]\n"          \
    "      elseif f[i] == '" BOTTLE_AUDIT_F_HASH "' then th = f[i + 1] end\n" \
    "    end\n"                                                               \
    "    if ts and th then\n"                                                 \
    "      ok = redis.pcall('HSET', '" BOTTLE_STORE_AUDIT_CHAIN "', '"        \
    BOTTLE_AUDIT_F_TRIMMED_SEQ "', ts, '" BOTTLE_AUDIT_F_TRIMMED_HASH         \
    "', th)\n"                                                                \
    "      if not (type(ok) == 'table' and ok.err) then\n"                    \
    "        redis.pcall('XTRIM', '" BOTTLE_STORE_AUDIT "', 'MAXLEN', max)\n" \
    "      end\n"                                                             \
    "    end\n"                                                               \
    "  end\n"                                                                 \
    "  return id\n"                                                           \
    "end\n"


#endif /* BOTTLE_AUDIT_CHAIN_LUA_H */
