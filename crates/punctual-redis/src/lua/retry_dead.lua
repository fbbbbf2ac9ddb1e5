-- retry_dead: puts a dead task back to work, due now, attempts 0, last_error kept;
-- told 'retried'.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] key, ARGV[5] the history's fields from the
--   caller (who retries; see tell in common.lua).
-- Returns: the record, or '' when there is no such dead task.
local now = now_ms()
local rec = redis.call('HGET', KEYS[5], ARGV[4])
if not rec then return '' end
local t = decode(rec)
if t.st ~= 2 then return '' end
rec = revive(ARGV[4], t, now, ARGV[5])
save_history()
save_groups()
publish_wakeup()
return rec
