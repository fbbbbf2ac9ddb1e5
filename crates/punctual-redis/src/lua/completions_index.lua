-- completions_index: keeps the index by which a shard's completion records are paged
-- (see completions.rs). Standalone (only clock.lua is prepended): its keys are one
-- shard's index and records, under the shard's hash tag.
-- KEYS[1] the index: ZSet, scores 0, of the task keys of the shard's records
-- KEYS[1 + i] the completion record key of the i-th task key ("<completed_at>,<id>,
--   <att>,<occ>,<until>", ms, as complete.lua writes it)
-- ARGV[1] now in ms since the epoch, or '' to use Redis' own clock (TIME)
-- ARGV[2] 'add': indexes each task key whose record holds at now (now < until), and
--   keeps the index at least until the latest of those ends; 'drop': unindexes each
--   task key whose record is gone (a record there is never unindexed)
-- ARGV[2 + i] the i-th task key
-- Returns: how many task keys were added or dropped.
local now = now_ms()
local index, n = KEYS[1], #KEYS - 1
if n == 0 then return 0 end
local names = {}
for i = 1, n do names[i] = KEYS[1 + i] end
local found = redis.call('MGET', unpack(names))
local changed = 0
if ARGV[2] == 'drop' then
  for i = 1, n do
    if not found[i] then changed = changed + redis.call('ZREM', index, ARGV[2 + i]) end
  end
  return changed
end
local latest = nil
for i = 1, n do
  local ends = found[i] and tonumber(string.match(found[i], '([^,]*)$'))
  if ends and now < ends then
    changed = changed + redis.call('ZADD', index, 0, ARGV[2 + i])
    if latest == nil or ends > latest then latest = ends end
  end
end
if latest then
  -- Redis counts the index's time to live as it does the records' (PX from now); -1:
  -- none yet, the index was made just now.
  local left = redis.call('PTTL', index)
  if left == -1 or left < latest - now then redis.call('PEXPIRE', index, string.format('%d', latest - now)) end
end
return changed
