-- lease: hands out up to ARGV[4] due tasks of one lane of one shard, earliest first.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] max, ARGV[5] lease length in ms, ARGV[6]
--   the lane: 'h' tasks without a target, 't' tasks with one. ARGV[7] a bound ('':
--   none): only tasks due at or before it (ms), and ARGV[8] ('' or 'k' .. key): of
--   those due at the bound, only keys before that key (bytewise), so that a sharded
--   queue's lease keeps due order across its shards (see heads.rs).
-- Returns: { next due ms of what stays scheduled in the lane or '', its key or '',
--   the script's now in ms, then key and record of each lease }
-- Each Redis command runs once for the whole batch, never once per task.
local now = now_ms()
local lease_ms = tonumber(ARGV[5])
local scheduled = KEYS[LANE_OF_CODE[ARGV[6]]]
local limit, before = now, nil
if ARGV[7] ~= '' and tonumber(ARGV[7]) <= now then
  limit = tonumber(ARGV[7])
  if ARGV[8] ~= '' then before = string.sub(ARGV[8], 2) end
end
-- The due keys, and the score of each as Redis wrote it (the inflight set's score).
local due, scores = {}, {}
if tonumber(ARGV[4]) > 0 then
  local scored = redis.call('ZRANGEBYSCORE', scheduled, '-inf', limit, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
  for i = 1, #scored, 2 do
    -- Members of one score come in key order: those at the bound from `before` on end it.
    if before ~= nil and tonumber(scored[i + 1]) == limit and not bytes_before(scored[i], before) then break end
    due[#due + 1] = scored[i]
    scores[#scores + 1] = scored[i + 1]
  end
end
local out = { '', '', int(now) }
if #due > 0 then
  -- The due tasks are the set's first #due members by rank.
  redis.call('ZREMRANGEBYRANK', scheduled, 0, #due - 1)
  local records = redis.call('HMGET', KEYS[5], unpack(due))
  local fence = redis.call('INCRBY', KEYS[7], #due) - #due
  local exp = int(now + lease_ms)
  local written, leases, inflight = {}, {}, {}
  for i, key in ipairs(due) do
    local rec = records[i]
    if rec then
      fence = fence + 1
      rec = leased(rec, fence, now, lease_ms)
      written[#written + 1] = key
      written[#written + 1] = rec
      leases[#leases + 1] = exp
      leases[#leases + 1] = key
      inflight[#inflight + 1] = scores[i]
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
local head = redis.call('ZRANGE', scheduled, 0, 0, 'WITHSCORES')
out[1], out[2] = head[2] or '', head[1] or ''
return out
