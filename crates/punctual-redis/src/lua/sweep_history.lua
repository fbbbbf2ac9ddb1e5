-- sweep_history: deletes the histories of up to ARGV[2] task keys of one shard whose
-- latest event happened before ARGV[1] (ms), those quiet longest first.
-- Standalone (nothing is prepended): its keys are one shard's histories and their
-- index, under the shard's hash tag (keys.rs).
-- KEYS[1] history: Hash key -> its history (see tell in common.lua)
-- KEYS[2] history:latest: ZSet key -> when the latest event of its history happened, ms
-- ARGV[1] the cutoff, ms; ARGV[2] the most histories deleted, at least 1
-- Returns: how many histories were deleted.
local quiet = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #quiet == 0 then return 0 end
redis.call('HDEL', KEYS[1], unpack(quiet))
redis.call('ZREM', KEYS[2], unpack(quiet))
return #quiet
