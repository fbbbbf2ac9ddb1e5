-- lease: hands out up to ARGV[4] due tasks of one shard, earliest first.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] max, ARGV[5] lease length in ms.
-- Returns: { next due ms of what stays scheduled or '', then key and record of each lease }
local now = now_ms()
local lease_ms = tonumber(ARGV[5])
local due = {}
if tonumber(ARGV[4]) > 0 then
  due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = { '' }
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[1], key)
  local rec = redis.call('HGET', KEYS[5], key)
  if rec then
    local t = decode(rec)
    t.st = 1
    t.fence = redis.call('INCR', KEYS[7])
    t.exp = now + lease_ms
    t.updated = now
    rec = encode(t)
    redis.call('HSET', KEYS[5], key, rec)
    redis.call('ZADD', KEYS[2], t.exp, key)
    redis.call('ZADD', KEYS[3], t.due, key)
    out[#out + 1] = key
    out[#out + 1] = rec
  end
end
out[1] = head_score(KEYS[1])
return out
