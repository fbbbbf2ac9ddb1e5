-- delete: deletes a task; with ARGV[5] = 'dead', only if it is dead. A task deleted is
-- told 'cancelled' ('deleted' with 'dead') at Redis' clock.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] key, ARGV[5] 'any' or 'dead', ARGV[6] the
--   history's fields from the caller (who deletes; see tell in common.lua).
-- Applying an outbox row (a cancel): then KEYS[SHARD_KEYS + 1] the shard's outbox
--   marks, ARGV[7] the row's mark, ARGV[8] their retention, ms (see row_marked in
--   common.lua): answers -1 when the mark is there, nothing deleted; else writes the
--   mark, whether or not a task was deleted.
-- Returns: 1 deleted, 0 no such task (in that state).
local row = ARGV[7]
if row and row_marked(row) then return -1 end
local rec = redis.call('HGET', KEYS[5], ARGV[4])
local t = rec and decode(rec)
local deleted = 0
if t and (ARGV[5] ~= 'dead' or t.st == 2) then
  remove(ARGV[4], t)
  deleted = 1
  if ARGV[5] == 'dead' then
    tell(ARGV[4], clock_ms(), 'deleted', nil, ARGV[6])
  else
    tell(ARGV[4], clock_ms(), 'cancelled', nil, ARGV[6])
  end
end
if row then mark_row(row, now_ms(), tonumber(ARGV[8])) end
save_history()
save_groups()
publish_wakeup()
return deleted
