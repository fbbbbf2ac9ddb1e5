-- sweep_dead: deletes up to ARGV[5] dead tasks of one shard that died at or before
-- ARGV[4] (ms), those that died first first (none with ARGV[5] 0: only the answer).
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { how many were deleted, when the earliest dead task left died (ms) or '' }
local died = {}
if tonumber(ARGV[5]) > 0 then
  died = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
end
local deleted = 0
for _, key in ipairs(died) do
  local rec = redis.call('HGET', KEYS[5], key)
  local t = rec and decode(rec)
  if t and t.st == 2 then
    remove(key, t)
    deleted = deleted + 1
  else
    -- Not dead (the index disagrees with the record): only the index entry goes.
    redis.call('ZREM', KEYS[8], key)
  end
end
return { deleted, head_score(KEYS[8]) }
