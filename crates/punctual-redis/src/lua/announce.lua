-- announce: a node says it is live, and what it announces, until ARGV[4] ms from now;
-- nodes whose announcement expired are forgotten; every live node's announcement is
-- returned. Standalone (common.lua is not prepended): its one key belongs to no
-- queue. O(nodes): the Hash holds the live nodes and those expired since the last
-- announcement of any node.
-- KEYS[1] the nodes Hash (<p>:nodes, see keys.rs): node name -> "<expires ms>,<announcement>"
-- ARGV[1] now in ms since the epoch (the caller's clock: a server's is Redis' time as
--   it measures it, so nodes agree within milliseconds on expiries of seconds)
-- ARGV[2] the node's name
-- ARGV[3] its announcement (any text)
-- ARGV[4] how long it holds, in ms, at least 1
-- Returns: a flat list, name then announcement, of every node whose announcement
-- holds now, this one's included.
local now = tonumber(ARGV[1])
redis.call('HSET', KEYS[1], ARGV[2], string.format('%d', now + tonumber(ARGV[4])) .. ',' .. ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  local expires, announcement = string.match(all[i + 1], '^(%d+),(.*)$')
  if expires and tonumber(expires) > now then
    live[#live + 1] = all[i]
    live[#live + 1] = announcement
  else
    -- Expired, or not in the format: a node that wrote it would write it again.
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return live
