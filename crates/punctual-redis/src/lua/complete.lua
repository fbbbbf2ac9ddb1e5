-- complete: applies completions to live leases of one shard, each on its own.
-- KEYS, ARGV[1..3]: see common.lua.
-- ARGV[4] n; then n groups of 7: key, id, version, fence, kind ('d' done, 'r' retry,
--   's' reschedule, 'x' dead), at ms (retry, reschedule), error (retry, dead).
-- Returns: n integers, 1 applied or 0 lease lost (nothing changed).
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local a = 5 + i * 7
  local t = live(a, now)
  if t == nil then
    out[#out + 1] = 0
  else
    local key, kind, at, err = ARGV[a], ARGV[a + 4], tonumber(ARGV[a + 5]), ARGV[a + 6]
    if kind == 'd' then
      remove(key, t)
    else
      unplace(key, t)
      t.exp = 0
      t.updated = now
      if kind == 'r' then
        t.st, t.due, t.att, t.err = 0, at, t.att + 1, err
        arm(key, at)
      elseif kind == 's' then
        t.st, t.due, t.att, t.err, t.occ = 0, at, 0, nil, t.occ + 1
        arm(key, at)
      else
        t.st, t.att, t.err = 2, t.att + 1, err
        redis.call('ZADD', KEYS[4], t.due, key)
      end
      redis.call('HSET', KEYS[5], key, encode(t))
    end
    out[#out + 1] = 1
  end
end
publish_wakeup()
return out
