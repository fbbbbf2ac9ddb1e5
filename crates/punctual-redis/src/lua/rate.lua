-- rate: takes a slot of a queue's rate limit, shared by every process on this Redis:
-- at most ARGV[2] slots start in any window of ARGV[3] ms. A sliding log, so the limit
-- is exact (no burst at a window's edge). Standalone (only clock.lua is prepended): its
-- one key belongs to no shard, only to the queue's first hash tag. O(1) but after a
-- smaller count than before, when the extra entries go once.
-- KEYS[1] the queue's slot log (<p>:{<queue>}:rate, see keys.rs): a List of the start
--   times in ms of the latest ARGV[2] slots, oldest first; it expires a window after
--   its newest entry, when nothing in it counts any more
-- ARGV[1] now in ms since the epoch, or '' to use Redis' own clock (TIME)
-- ARGV[2] count: slots per window, at least 1
-- ARGV[3] per: the window in ms, at least 1
-- Returns: 0 when a slot was taken (its start is now); else, taking nothing, the ms
-- (at least 1) until the oldest slot of the window frees.
local now = now_ms()
local count = tonumber(ARGV[2])
local per = tonumber(ARGV[3])
redis.call('LTRIM', KEYS[1], -count, -1)
if redis.call('LLEN', KEYS[1]) >= count then
  local oldest = tonumber(redis.call('LINDEX', KEYS[1], 0))
  if oldest + per > now then
    return oldest + per - now
  end
  redis.call('LPOP', KEYS[1])
end
-- Never before the newest entry (Redis' clock stepped back): the log stays in order.
local newest = redis.call('LINDEX', KEYS[1], -1)
if newest and tonumber(newest) > now then
  now = tonumber(newest)
end
redis.call('RPUSH', KEYS[1], string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], per)
return 0
