-- import_history: adds to each given key's history of one shard the given events older
-- than its oldest (all of them when it has none), before its own, keeping its latest
-- ARGV[1] (Store::import_histories). Standalone, as sweep_history.lua, whose KEYS it
-- takes: KEYS[1] history, KEYS[2] history:latest.
-- ARGV[1] the most events a history keeps; ARGV[2] how many keys; then for each: the
--   key, n, and its n events, oldest first, each as history::encode writes one (it
--   opens with its time, {"t":<ms>,).
-- A history started here is indexed by its first event, as a script that starts one
-- does; one that was there keeps its index entry (at or before its latest, which an
-- older event does not move).
-- Returns how many events were added.
local TIME = '^{"t":(%-?%d+)'
local function time_of(event)
  return tonumber(string.match(event, TIME))
end

local limit, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local added, at = 0, 3
for _ = 1, count do
  local key, n = ARGV[at], tonumber(ARGV[at + 1])
  local given = at + 2
  at = given + n
  local stored = redis.call('HGET', KEYS[1], key)
  local own, oldest = {}, nil
  if stored then
    for line in string.gmatch(stored, '\n([^\n]*)') do own[#own + 1] = line end
    if own[1] then oldest = time_of(own[1]) end
  end
  local events = {}
  for i = given, at - 1 do
    if oldest ~= nil and time_of(ARGV[i]) >= oldest then break end
    events[#events + 1] = ARGV[i]
  end
  if #events > 0 then
    added = added + #events
    for _, line in ipairs(own) do events[#events + 1] = line end
    local kept = {}
    for i = math.max(1, #events - limit + 1), #events do kept[#kept + 1] = events[i] end
    redis.call('HSET', KEYS[1], key, string.format('%03d', #kept) .. '\n' .. table.concat(kept, '\n'))
    if not stored then redis.call('ZADD', KEYS[2], string.match(kept[1], TIME), key) end
  end
end
return added
