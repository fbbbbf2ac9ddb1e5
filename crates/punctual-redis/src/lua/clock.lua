-- clock: the time every script reads, prepended to each (scripts.rs).
-- ARGV[1] now in ms since the epoch, or '' to use Redis' own clock (TIME).
local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
