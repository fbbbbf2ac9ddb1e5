-- delete: deletes a task; with ARGV[5] = 'dead', only if it is dead.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] key, ARGV[5] 'any' or 'dead'.
-- Returns: 1 deleted, 0 no such task (in that state).
local rec = redis.call('HGET', KEYS[5], ARGV[4])
if not rec then return 0 end
local t = decode(rec)
if ARGV[5] == 'dead' and t.st ~= 2 then return 0 end
remove(ARGV[4], t)
save_groups()
publish_wakeup()
return 1
