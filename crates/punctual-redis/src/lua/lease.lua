-- lease: hands out up to ARGV[4] due tasks of one lane of one shard, earliest first.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] max, ARGV[5] lease length in ms, ARGV[6]
--   the lane: 'h' tasks without a target, 't' tasks with one.
-- Returns: { next due ms of what stays scheduled in the lane or '', then key and record
--   of each lease }
-- Each Redis command runs once for the whole batch, never once per task.
local now = now_ms()
local lease_ms = tonumber(ARGV[5])
local scheduled = KEYS[LANE_OF_CODE[ARGV[6]]]
local due = {}
if tonumber(ARGV[4]) > 0 then
  due = redis.call('ZRANGEBYSCORE', scheduled, '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = { '' }
if #due > 0 then
  -- The due tasks are the set's first #due members by rank.
  redis.call('ZREMRANGEBYRANK', scheduled, 0, #due - 1)
  local records = redis.call('HMGET', KEYS[5], unpack(due))
  local fence = redis.call('INCRBY', KEYS[7], #due) - #due
  local exp = now + lease_ms
  local written, leases, inflight = {}, {}, {}
  for i, key in ipairs(due) do
    local rec = records[i]
    if rec then
      local t = decode(rec)
      fence = fence + 1
      t.st, t.fence, t.exp, t.updated = 1, fence, exp, now
      rec = encode(t)
      written[#written + 1] = key
      written[#written + 1] = rec
      leases[#leases + 1] = exp
      leases[#leases + 1] = key
      inflight[#inflight + 1] = t.due
      inflight[#inflight + 1] = key
      out[#out + 1] = key
      out[#out + 1] = rec
    end
  end
  if #written > 0 then
    redis.call('HSET', KEYS[5], unpack(written))
    redis.call('ZADD', KEYS[2], unpack(leases))
    redis.call('ZADD', KEYS[3], unpack(inflight))
  end
end
out[1] = head_score(scheduled)
return out
