-- schedule: creates or updates tasks of one shard, in order.
-- KEYS, ARGV[1..3]: see common.lua.
-- ARGV[4] n; then n groups of 8: key, if_exists ('r' replace, 'k' keep, 'e' error),
--   due ms, max_attempts, id for a new task, tags joined by "\n", body, target ('' none,
--   else its stored text, which puts the task in the target lane).
-- Returns: n pairs of (outcome, record): outcome 'c' created, 'r' replaced, 'k' kept
--   (the record untouched), 'e' conflict (record '').
-- Records are read with one HMGET and written with one HSET and one ZADD per lane at
-- the end; a key given twice in one call sees its first write.
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
local records = records_at(n, 8)
-- Each lane's earliest due time, read when this call first writes a task of the lane
-- (false: not read yet; nil: the lane was empty).
local heads = { [HANDLER] = false, [TARGET] = false }
-- The record each key has after this call's writes so far.
local latest = {}
-- ZADD arguments by lane; and, for each key whose writes in this call put it in both
-- lanes, the lane of its last write (it is in both ZADDs, then leaves the other set).
local written, armed, moved = {}, { [HANDLER] = {}, [TARGET] = {} }, {}
for i = 0, n - 1 do
  local a = 5 + i * 8
  local key, mode, due, max = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local id, tags, body, tgt = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local earlier = latest[key]
  local rec = earlier or records[i + 1]
  local t = nil
  local outcome = 'c'
  local created = false
  if rec then
    local old = decode(rec)
    if mode == 'k' then
      outcome = 'k'
    elseif mode == 'e' then
      outcome = 'e'
      rec = ''
    else
      outcome = 'r'
      if earlier and lane_of(old.tgt) ~= lane_of(tgt) then moved[key] = lane_of(tgt) end
      unplace(key, old)
      unindex_tags(key, old.tags)
      t = { st = 0, due = due, exp = 0, fence = old.fence, ver = old.ver + 1, att = 0, max = max, occ = 1, anc = due,
            id = old.id, created = old.created, updated = now, tags = tags, tgt = tgt, body = body }
    end
  else
    created = true
  end
  if t or created then
    if created then rec = fresh(due, id, max, now, tags, tgt, body) else rec = encode(t) end
    latest[key] = rec
    written[#written + 1] = key
    written[#written + 1] = rec
    local lane = lane_of(tgt)
    local scores = armed[lane]
    scores[#scores + 1] = due
    scores[#scores + 1] = key
    index_tags(key, tags)
    if heads[lane] == false then heads[lane] = tonumber(redis.call('ZRANGE', KEYS[lane], 0, 0, 'WITHSCORES')[2]) end
    -- Earlier than the head consumers of the lane already know of: wake them.
    if heads[lane] == nil or due < heads[lane] then wake_at(lane, due) end
  end
  out[#out + 1] = outcome
  out[#out + 1] = rec
end
if #written > 0 then
  -- A key written twice appears twice: the later record and due time win.
  redis.call('HSET', KEYS[5], unpack(written))
  for _, lane in ipairs({ HANDLER, TARGET }) do
    if #armed[lane] > 0 then redis.call('ZADD', KEYS[lane], unpack(armed[lane])) end
  end
  for key, lane in pairs(moved) do
    redis.call('ZREM', KEYS[OTHER_LANE[lane]], key)
  end
end
publish_wakeup()
return out
