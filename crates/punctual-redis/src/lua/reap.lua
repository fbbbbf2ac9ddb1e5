-- reap: ends up to ARGV[4] expired leases of one shard, earliest expiry first. Each
-- counts as a failed try: dead if that was the last attempt, else due again now; told
-- 'expired' with the lease's try (attempts + 1) and fence, the error, and the due time.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] limit.
-- Returns: { earliest expiry of the leases still live or '', then per reaped task
--   its key and its new state (0 scheduled, 2 dead) }
local now = now_ms()
local expired = {}
if tonumber(ARGV[4]) > 0 then
  expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = { '' }

-- RFC 3339 UTC of ms since the epoch, for last_error (civil-from-days, proleptic
-- Gregorian calendar).
local function rfc3339(ms)
  local secs = math.floor(ms / 1000)
  local days = math.floor(secs / 86400)
  local rem = secs - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if m > 12 then m = m - 12 end
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d, math.floor(rem / 3600),
    math.floor(rem % 3600 / 60), rem % 60, ms - secs * 1000)
end

for _, key in ipairs(expired) do
  redis.call('ZREM', KEYS[2], key)
  redis.call('ZREM', KEYS[3], key)
  local rec = redis.call('HGET', KEYS[5], key)
  if rec then
    local t = decode(rec)
    if t.grp ~= '' then count_in_group(t.grp, 1, -1) end
    t.err = 'lease expired at ' .. rfc3339(t.exp) .. ' before the handler finished'
    local expired_event = ',"n":' .. int(t.att + 1) .. ',"l":' .. int(t.fence) .. ',"x":' .. cjson.encode(t.err)
    t.att = t.att + 1
    t.exp = 0
    t.updated = now
    if t.att >= t.max then
      t.st = 2
      bury(key, t)
    else
      t.st = 0
      t.due = now
      arm(key, t)
      expired_event = expired_event .. ',"d":' .. int(now)
    end
    tell(key, now, 'expired', t.st, expired_event)
    redis.call('HSET', KEYS[5], key, encode(t))
    out[#out + 1] = key
    out[#out + 1] = int(t.st)
  end
end
local following = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. int(now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
out[1] = following[2] or ''
save_history()
save_groups()
publish_wakeup()
return out
