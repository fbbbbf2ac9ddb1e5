-- ids: reserves a block of task ids. Standalone (common.lua is not prepended): its one
-- key belongs to no shard.
-- KEYS[1] the task-id counter (<p>:ids, see keys.rs)
-- ARGV[1] how many ids to reserve
-- ARGV[2] where a counter that does not exist starts: a random point (see keys.rs), so
--   ids reserved after Redis lost the counter never meet ids reserved before it
-- Returns: the last id of the block (the block is the ARGV[1] ids ending there).
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], ARGV[2])
end
return redis.call('INCRBY', KEYS[1], ARGV[1])
