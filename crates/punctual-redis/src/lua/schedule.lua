-- schedule: creates or updates tasks of one shard, in order.
-- KEYS, ARGV[1..3]: see common.lua.
-- ARGV[4] n; then n groups of 8: key, if_exists ('r' replace, 'k' keep, 'e' error),
--   due ms, max_attempts, id for a new task, tags joined by "\n", body, target ('' none,
--   else its stored text).
-- Returns: n pairs of (outcome, record): outcome 'c' created, 'r' replaced, 'k' kept
--   (the record untouched), 'e' conflict (record '').
-- Records are read with one HMGET and written with one HSET and one ZADD at the end;
-- a key given twice in one call sees its first write.
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
local records = records_at(n, 8)
local head = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
-- The record each key has after this call's writes so far.
local latest = {}
local written, armed = {}, {}
for i = 0, n - 1 do
  local a = 5 + i * 8
  local key, mode, due, max = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local id, tags, body, tgt = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local rec = latest[key]
  if rec == nil then rec = records[i + 1] end
  local t = nil
  local outcome = 'c'
  if rec then
    local old = decode(rec)
    if mode == 'k' then
      outcome = 'k'
    elseif mode == 'e' then
      outcome = 'e'
      rec = ''
    else
      outcome = 'r'
      unplace(key, old)
      unindex_tags(key, old.tags)
      t = { st = 0, due = due, exp = 0, fence = old.fence, ver = old.ver + 1, att = 0, max = max, occ = 1, anc = due,
            id = old.id, created = old.created, updated = now, tags = tags, tgt = tgt, body = body }
    end
  else
    t = { st = 0, due = due, exp = 0, fence = 0, ver = 1, att = 0, max = max, occ = 1, anc = due, id = id,
          created = now, updated = now, tags = tags, tgt = tgt, body = body }
  end
  if t then
    rec = encode(t)
    latest[key] = rec
    written[#written + 1] = key
    written[#written + 1] = rec
    armed[#armed + 1] = due
    armed[#armed + 1] = key
    index_tags(key, tags)
    -- Earlier than the head consumers already know of: wake them.
    if head == nil or due < head then wake_at(due) end
  end
  out[#out + 1] = outcome
  out[#out + 1] = rec
end
if #written > 0 then
  -- A key written twice appears twice: the later record and due time win.
  redis.call('HSET', KEYS[5], unpack(written))
  redis.call('ZADD', KEYS[1], unpack(armed))
end
publish_wakeup()
return out
