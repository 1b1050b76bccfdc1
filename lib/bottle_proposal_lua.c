/*
 * The scripts of proposals and decisions (bottle_proposal.h): Redis runs
 * each atomically, so two operators answering at once are two scripts
 * run one after the other, and the second finds the first's decision.
 */

#include "bottle_audit.h"
#include "bottle_audit_chain_lua.h"
#include "bottle_proposal.h"
#include "bottle_store.h"
#include "bottle_store_lua.h"


/*
 * required(bottle): the bottle's stored audit.delivery is "required".
 * journal(bottle, max, event): the chained append (event a chained
 * argument, bottle_audit_chain.h); "" when written (or no event), the
 * error when not but the bottle does not require it, nil and the error
 * when it does.
 */

#define BOTTLE_PROPOSAL_JOURNAL_LUA                                           \
    BOTTLE_AUDIT_CHAIN_LUA                                                    \
    "local function required(b)\n"                                            \
    "  local j = redis.call('HGET', '" BOTTLE_STORE_POLICY_PREFIX "' .. b,"   \
    " '" BOTTLE_STORE_F_JSON "')\n"                                           \
    "  if not j then return false end\n"                                      \
    "  local ok, o = pcall(cjson.decode, j)\n"                                \
    "  return ok and type(o) == 'table' and type(o.audit) == 'table'\n"      \
    "    and o.audit.delivery == 'required'\n"                                \
    "end\n"                                                                   \
    "local function journal(b, max, ev)\n"                                    \
    "  if ev == '' then return '' end\n"                                      \
    "  local r = bottle_chain_append(max, ev)\n"                              \
    "  if type(r) == 'table' and r.err then\n"                                \
    "    if required(b) then return nil, r.err end\n"                         \
    "    return r.err\n"                                                      \
    "  end\n"                                                                 \
    "  return ''\n"                                                           \
    "end\n"


const char  bottle_proposal_propose_script[] =
    BOTTLE_PROPOSAL_JOURNAL_LUA
    "local id, bottle, kind, created = ARGV[1], ARGV[2], ARGV[3], ARGV[4]\n"
    "if redis.call('HEXISTS', '" BOTTLE_STORE_BOTTLES "', bottle) == 0 then\n"
    "  return redis.error_reply('NOBOTTLE no bottle \"' .. bottle .. '\"')\n"
    "end\n"
    /* one of the same already (ARGV[10], ARGV[11]): nothing queued, in
     * the same script as the queueing, so two producers racing with the
     * same value queue one proposal */
    "if ARGV[10] and ARGV[10] ~= '' then\n"
    "  local ok, m = pcall(cjson.decode, ARGV[10])\n"
    "  if not ok or type(m) ~= 'table' then\n"
    "    return redis.error_reply('INVALID the match is not an object')\n"
    "  end\n"
    "  local want = {}\n"
    "  for st in string.gmatch(ARGV[11] or '', '[^,]+') do want[st] = true"
    " end\n"
    "  for _, p in ipairs(redis.call('ZREVRANGE', '" BOTTLE_PROPOSALS_OF "' .."
    " bottle, 0, -1)) do\n"
    "    local h = redis.call('HMGET', '" BOTTLE_PROPOSAL_PREFIX "' .. p, '"
    BOTTLE_PROPOSAL_F_STATE "', '" BOTTLE_PROPOSAL_F_KIND "', '"
    BOTTLE_PROPOSAL_F_JSON "')\n"
    "    if h[1] and want[h[1]] and h[2] == kind then\n"
    "      local pok, o = pcall(cjson.decode, h[3] or '')\n"
    "      local a = pok and type(o) == 'table' and o.args or nil\n"
    "      local same = type(a) == 'table'\n"
    "      if same then\n"
    "        for k, v in pairs(m) do\n"
    "          if a[k] ~= v then same = false break end\n"
    "        end\n"
    "      end\n"
    "      if same then return {p, '', h[1]} end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local key = '" BOTTLE_PROPOSAL_PREFIX "' .. id\n"
    "if redis.call('EXISTS', key) == 1 then\n"
    "  return redis.error_reply('EXISTS proposal \"' .. id .. '\" exists')\n"
    "end\n"
    /* the bounds, counted where the proposal is queued: racing calls
     * run one after the other and the later one sees the earlier one */
    "local pmax, kmax = tonumber(ARGV[8] or ''), tonumber(ARGV[9] or '')\n"
    "if pmax or kmax then\n"
    "  local pending, ofkind = 0, 0\n"
    "  for _, p in ipairs(redis.call('ZRANGE', '" BOTTLE_PROPOSALS_OF "' .."
    " bottle, 0, -1)) do\n"
    "    local h = redis.call('HMGET', '" BOTTLE_PROPOSAL_PREFIX "' .. p, '"
    BOTTLE_PROPOSAL_F_STATE "', '" BOTTLE_PROPOSAL_F_KIND "')\n"
    "    if h[1] == 'pending' then pending = pending + 1 end\n"
    "    if h[2] == kind and (h[1] == 'pending' or h[1] == 'approved') then\n"
    "      ofkind = ofkind + 1\n"
    "    end\n"
    "  end\n"
    "  if pmax and pending >= pmax then\n"
    "    return redis.error_reply('LIMIT pending ' .. pending)\n"
    "  end\n"
    "  if kmax and ofkind >= kmax then\n"
    "    return redis.error_reply('LIMIT kind ' .. ofkind)\n"
    "  end\n"
    "end\n"
    "local jerr, why = journal(bottle, ARGV[6], ARGV[7])\n"
    "if not jerr then\n"
    "  return redis.error_reply('JOURNAL ' .. why)\n"
    "end\n"
    "redis.call('HSET', key, '" BOTTLE_PROPOSAL_F_JSON "', ARGV[5], '"
    BOTTLE_PROPOSAL_F_STATE "', 'pending', '" BOTTLE_PROPOSAL_F_BOTTLE
    "', bottle, '" BOTTLE_PROPOSAL_F_KIND "', kind, '"
    BOTTLE_PROPOSAL_F_CREATED "', created)\n"
    "redis.call('ZADD', '" BOTTLE_PROPOSALS_PENDING "', created, id)\n"
    "redis.call('ZADD', '" BOTTLE_PROPOSALS_ALL "', created, id)\n"
    "redis.call('ZADD', '" BOTTLE_PROPOSALS_OF "' .. bottle, created, id)\n"
    "redis.call('PUBLISH', '" BOTTLE_PROPOSALS_CHANNEL "',"
    " id .. ' ' .. bottle .. ' ' .. kind)\n"
    "return {id, jerr}\n";


const char  bottle_proposal_decide_script[] =
    BOTTLE_PROPOSAL_JOURNAL_LUA
    "local function bottle_put(ARGV)\n"
    BOTTLE_STORE_PUT_LUA
    "end\n"
    "local id, apply = ARGV[1], ARGV[6] ~= ''\n"
    "local key = '" BOTTLE_PROPOSAL_PREFIX "' .. id\n"
    "local h = redis.call('HMGET', key, '" BOTTLE_PROPOSAL_F_STATE "', '"
    BOTTLE_PROPOSAL_F_DECISION "', '" BOTTLE_PROPOSAL_F_BOTTLE "', '"
    BOTTLE_PROPOSAL_F_KIND "', '" BOTTLE_PROPOSAL_F_JSON "')\n"
    "if not h[1] then\n"
    "  return redis.error_reply('NOPROPOSAL no proposal \"' .. id .. '\"')\n"
    "end\n"
    "if h[1] ~= 'pending' then\n"
    "  return {0, h[2] or ''}\n"
    "end\n"
    "local bottle = h[3]\n"
    "if apply then\n"
    "  if ARGV[7] ~= bottle then\n"
    "    return redis.error_reply('NOPROPOSAL proposal \"' .. id .. '\" is"
    " another bottle\\'s')\n"
    "  end\n"
    "  local v = redis.call('HGET', '" BOTTLE_STORE_POLICY_PREFIX "' .."
    " bottle, '" BOTTLE_STORE_F_VERSION "')\n"
    "  local owner = redis.call('HGET', '" BOTTLE_STORE_TOKENS "', ARGV[9])\n"
    "  if v ~= ARGV[6] or (owner and owner ~= bottle) then\n"
    "    return redis.error_reply('CHANGED bottle \"' .. bottle .. '\""
    " changed meanwhile')\n"
    "  end\n"
    "end\n"
    "local jerr, why = journal(bottle, ARGV[4], ARGV[5])\n"
    "if not jerr then\n"
    "  return redis.error_reply('JOURNAL ' .. why)\n"
    "end\n"
    "local version = 0\n"
    "if apply then\n"
    "  local r = bottle_put({'1', bottle, ARGV[8], ARGV[9]})\n"
    "  if r.err then return r end\n"
    "  version = r[1]\n"
    "  redis.call('HSET', key, '" BOTTLE_PROPOSAL_F_VERSION "', version)\n"
    "end\n"
    /* an approved gitleaks-allow: the value git-gate lets through */
    "if ARGV[3] == 'approved' and h[4] == 'gitleaks-allow' then\n"
    "  local ok, p = pcall(cjson.decode, h[5] or '')\n"
    "  local a = ok and type(p) == 'table' and p.args or nil\n"
    "  if type(a) == 'table' and type(a.repo) == 'string'"
    " and type(a.rule) == 'string' and type(a.digest) == 'string' then\n"
    "    redis.call('SADD', '" BOTTLE_GITLEAKS_ALLOWED "' .. bottle,"
    " a.repo .. ' ' .. a.rule .. ' ' .. a.digest)\n"
    "  end\n"
    "end\n"
    "redis.call('HSET', key, '" BOTTLE_PROPOSAL_F_STATE "', ARGV[3], '"
    BOTTLE_PROPOSAL_F_DECISION "', ARGV[2])\n"
    "redis.call('ZREM', '" BOTTLE_PROPOSALS_PENDING "', id)\n"
    "redis.call('PUBLISH', '" BOTTLE_DECISIONS_CHANNEL "',"
    " id .. ' ' .. ARGV[3])\n"
    "return {1, ARGV[2], version, jerr}\n";


const char  bottle_proposal_check_script[] =
    "local h = redis.call('HMGET', '" BOTTLE_PROPOSAL_PREFIX "' .. ARGV[2],"
    " '" BOTTLE_PROPOSAL_F_BOTTLE "', '" BOTTLE_PROPOSAL_F_STATE "', '"
    BOTTLE_PROPOSAL_F_JSON "', '" BOTTLE_PROPOSAL_F_DECISION "')\n"
    "if not h[1] or h[1] ~= ARGV[1] then\n"
    "  return false\n"
    "end\n"
    "return {h[2], h[3], h[4] or ''}\n";


/*
 * A request nobody waits for any more: the proposal expires if no answer
 * came first, so an operator cannot approve what nobody will use.
 */
const char  bottle_proposal_withdraw_script[] =
    BOTTLE_PROPOSAL_JOURNAL_LUA
    "local id = ARGV[1]\n"
    "local key = '" BOTTLE_PROPOSAL_PREFIX "' .. id\n"
    "local h = redis.call('HMGET', key, '" BOTTLE_PROPOSAL_F_STATE "', '"
    BOTTLE_PROPOSAL_F_BOTTLE "')\n"
    "if h[1] ~= 'pending' then\n"
    "  return {0, ''}\n"
    "end\n"
    "local jerr, why = journal(h[2], ARGV[3], ARGV[4])\n"
    "if not jerr then\n"
    "  return redis.error_reply('JOURNAL ' .. why)\n"
    "end\n"
    "redis.call('HSET', key, '" BOTTLE_PROPOSAL_F_STATE "', 'expired', '"
    BOTTLE_PROPOSAL_F_DECISION "', ARGV[2])\n"
    "redis.call('ZREM', '" BOTTLE_PROPOSALS_PENDING "', id)\n"
    "redis.call('PUBLISH', '" BOTTLE_DECISIONS_CHANNEL "', id .. ' expired')\n"
    "return {1, jerr}\n";
