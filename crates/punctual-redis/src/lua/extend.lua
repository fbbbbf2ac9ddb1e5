-- extend: moves a live lease's expiry to now + ARGV[8] ms, told 'extended'.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4..7] key, id, version, fence. ARGV[9] the
--   history's fields from the caller (who extends; see tell in common.lua).
-- Returns: the new expiry in ms, or -1 when the lease is not live (nothing changed).
local now = now_ms()
local t = live(4, now)
if t == nil then return -1 end
t.exp = now + tonumber(ARGV[8])
t.updated = now
redis.call('HSET', KEYS[5], ARGV[4], encode(t))
redis.call('ZADD', KEYS[2], t.exp, ARGV[4])
tell(ARGV[4], now, 'extended', 1, ',"l":' .. int(t.fence) .. ',"u":' .. int(t.exp) .. ARGV[9])
save_history()
return t.exp
