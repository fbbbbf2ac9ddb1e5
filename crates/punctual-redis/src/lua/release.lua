-- release: gives a live lease back untried; the task is scheduled again as it was,
-- told 'released'.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4..7] key, id, version, fence.
-- Returns: 1, or 0 when the lease is not live (nothing changed).
local now = now_ms()
local t = live(4, now)
if t == nil then return 0 end
unplace(ARGV[4], t)
t.st, t.exp, t.updated = 0, 0, now
redis.call('HSET', KEYS[5], ARGV[4], encode(t))
arm(ARGV[4], t)
tell(ARGV[4], now, 'released', 0, ',"l":' .. int(t.fence))
save_history()
save_groups()
publish_wakeup()
return 1
