-- sweep_history: deletes the histories of up to ARGV[2] task keys of one shard whose
-- latest event happened before ARGV[1] (ms), looking at up to ARGV[3] keys.
-- Standalone (nothing is prepended): its keys are one shard's histories and their
-- index, under the shard's hash tag (keys.rs).
-- KEYS[1] history: Hash key -> its count in three digits, then "\n<event>" for each
--   event, oldest first, each a JSON object that opens with its time, {"t":<ms>,…
--   (see tell in common.lua)
-- KEYS[2] history:latest: ZSet key -> a time at or before its history's latest event
-- ARGV[1] the cutoff, ms; ARGV[2] the most histories deleted, at least 1; ARGV[3] the
--   most keys looked at, at least ARGV[2]
-- The index names the keys that may be quiet: those scored before the cutoff, the
-- earliest first. A key whose latest event (its history's last line) happened before
-- the cutoff goes, history and index entry; one whose latest did not is scored by it,
-- out of the cutoff's reach until the cutoff passes it (so a sweep looks at a key
-- something happens to about once per retention, and no event but a history's first
-- writes the index).
-- Returns: { how many histories were deleted, 1 when keys scored before the cutoff
--   remain (the caller sweeps again), else 0 }
local cutoff, limit, looks = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local deleted, looked = 0, 0
while deleted < limit and looked < looks do
  local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0,
    math.min(limit - deleted, looks - looked))
  if #keys == 0 then break end
  looked = looked + #keys
  local histories = redis.call('HMGET', KEYS[1], unpack(keys))
  local quiet, unindexed, later = {}, {}, {}
  for i, key in ipairs(keys) do
    local latest = histories[i] and tonumber(string.match(histories[i], '{"t":(%d+)[^\n]*$'))
    if not histories[i] then
      unindexed[#unindexed + 1] = key
    elseif latest and latest >= cutoff then
      later[#later + 1] = string.format('%d', latest)
      later[#later + 1] = key
    else
      quiet[#quiet + 1] = key
    end
  end
  if #quiet > 0 then
    redis.call('HDEL', KEYS[1], unpack(quiet))
    redis.call('ZREM', KEYS[2], unpack(quiet))
    deleted = deleted + #quiet
  end
  -- An index entry without its history (none is left so): dropped, not counted.
  if #unindexed > 0 then redis.call('ZREM', KEYS[2], unpack(unindexed)) end
  if #later > 0 then redis.call('ZADD', KEYS[2], unpack(later)) end
end
local more = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 1)[1] ~= nil
return { deleted, (more and 1) or 0 }
