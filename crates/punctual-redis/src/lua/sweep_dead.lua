-- sweep_dead: deletes up to ARGV[5] dead tasks of one shard that died at or before
-- ARGV[4] (ms), those that died first first (none with ARGV[5] 0: only the answer);
-- each told 'deleted' at Redis' clock.
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { how many were deleted, when the earliest dead task left died (ms) or '' }
local died = {}
if tonumber(ARGV[5]) > 0 then
  died = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
end
local deleted = 0
local at = nil
for _, key in ipairs(died) do
  if remove_listed(8, key, key, 2) then
    deleted = deleted + 1
    at = at or clock_ms()
    tell(key, at, 'deleted', nil, '')
  end
end
save_history()
save_groups()
publish_wakeup()
return { deleted, head_score(KEYS[8]) }
