-- purge: deletes up to ARGV[5] tasks of one shard in the selection ARGV[4],
-- each as cancel does: 'scheduled' (not leased), 'dead', or 'all' (scheduled, then
-- leased, then dead); within a set the earliest due first (the scheduled tasks of the
-- handler lane, then those of the target lane, then those with a group). Each task
-- deleted is told 'purged' at Redis' clock.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[6] the history's fields from the caller (who
--   purges; see tell in common.lua).
-- Returns: { how many were deleted, 1 if a full batch was looked at (the shard may
-- hold more of the selection; index entries without a task count as looked at), else 0 }
-- The sets each selection walks, by KEYS index, and the state of the tasks each holds.
local SETS = { scheduled = { HANDLER, TARGET, GROUPED }, dead = { 4 }, all = { HANDLER, TARGET, GROUPED, 3, 4 } }
local STATE_IN = { [HANDLER] = 0, [TARGET] = 0, [GROUPED] = 0, [3] = 1, [4] = 2 }
local limit = tonumber(ARGV[5])
local deleted, looked = 0, 0
local at = nil
for _, set in ipairs(SETS[ARGV[4]]) do
  if looked >= limit then break end
  local keys = redis.call('ZRANGE', KEYS[set], 0, limit - looked - 1)
  for _, key in ipairs(keys) do
    if remove_listed(set, key, key, STATE_IN[set]) then
      deleted = deleted + 1
      at = at or clock_ms()
      tell(key, at, 'purged', nil, ARGV[6])
    end
  end
  looked = looked + #keys
end
save_history()
save_groups()
publish_wakeup()
local more = 0
if looked >= limit then more = 1 end
return { deleted, more }
