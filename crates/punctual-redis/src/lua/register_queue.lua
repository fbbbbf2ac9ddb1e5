-- register_queue: records a queue in the registry (KEYS[1]) unless a process has:
-- its shard count, and with it, in the same write, whether its keys are placed by
-- their hash tags (every process then agrees on both, whoever registered the queue).
-- Works on no shard.
-- ARGV[1] the queue, ARGV[2] the shard count, ARGV[3] '1': keys are placed by their
--   hash tags, else '' (a queue an earlier punctual registered, written back).
-- Returns: { the recorded shard count, '1' or false }
local tags = ARGV[1] .. '#hash-tags'
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  if ARGV[3] == '1' then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], tags, '1')
  else
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  end
end
return redis.call('HMGET', KEYS[1], ARGV[1], tags)
