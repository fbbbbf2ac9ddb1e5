-- Removes one element of a Redisson delayed queue whose task punctual holds, unless
-- Redisson took it first.
--
-- KEYS[1]  the sorted set redisson_delay_queue_timeout:{NAME}
-- KEYS[2]  the list redisson_delay_queue:{NAME}
-- ARGV[1]  the member, as read
--
-- Returns  1 when it was removed from both,
--          0 when the sorted set no longer held it: Redisson moved it to the
--          destination queue (it came due), or the application removed it; nothing
--          is touched then.
--
-- Both keys carry the hash tag {NAME}, as Redisson names them. O(log N) for the
-- sorted set plus LREM's walk from the list's head to the member, which is short: the
-- importer reads the list from its head and removes what it read.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('LREM', KEYS[2], 1, ARGV[1])
return 1
