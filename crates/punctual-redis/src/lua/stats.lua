-- stats: counts of one shard, both lanes together.
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { scheduled, leased, dead, earliest due ms of a scheduled task or '' }
local head = ''
for _, set in ipairs({ HANDLER, TARGET, GROUPED }) do
  local first = head_score(KEYS[set])
  if head == '' or (first ~= '' and tonumber(first) < tonumber(head)) then head = first end
end
local scheduled = redis.call('ZCARD', KEYS[HANDLER]) + redis.call('ZCARD', KEYS[TARGET])
  + redis.call('ZCARD', KEYS[GROUPED])
return { scheduled, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[4]), head }
