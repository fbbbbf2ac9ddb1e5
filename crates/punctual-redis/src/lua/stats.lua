-- stats: counts of one shard, both lanes together.
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { scheduled, leased, dead, earliest due ms of a scheduled task or '' }
local handler, target = head_score(KEYS[HANDLER]), head_score(KEYS[TARGET])
local head = handler
if head == '' or (target ~= '' and tonumber(target) < tonumber(head)) then head = target end
local scheduled = redis.call('ZCARD', KEYS[HANDLER]) + redis.call('ZCARD', KEYS[TARGET])
return { scheduled, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[4]), head }
