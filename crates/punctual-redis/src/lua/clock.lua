-- clock: the time every script reads, prepended to each (scripts.rs).
-- Redis' own clock (TIME) in ms since the epoch, whatever ARGV[1] says: the time of
-- the writes that are given no now (a cancel, a purge, a deletion of dead tasks).
local function clock_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- ARGV[1] now in ms since the epoch, or '' to use Redis' own clock (TIME).
local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  return clock_ms()
end
