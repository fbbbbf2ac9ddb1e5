-- schedule: creates or updates tasks of one shard, in order.
-- KEYS, ARGV[1..3]: see common.lua.
-- ARGV[4] n; then n groups of 7: key, if_exists ('r' replace, 'k' keep, 'e' error),
--   due ms, max_attempts, id for a new task, tags joined by "\n", body.
-- Returns: n pairs of (outcome, record): outcome 'c' created, 'r' replaced, 'k' kept
--   (the record untouched), 'e' conflict (record '').
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local a = 5 + i * 7
  local key, mode, due, max = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local id, tags, body = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6]
  local rec = redis.call('HGET', KEYS[5], key)
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
            id = old.id, created = old.created, updated = now, tags = tags, body = body }
    end
  else
    t = { st = 0, due = due, exp = 0, fence = 0, ver = 1, att = 0, max = max, occ = 1, anc = due, id = id,
          created = now, updated = now, tags = tags, body = body }
  end
  if t then
    rec = encode(t)
    redis.call('HSET', KEYS[5], key, rec)
    index_tags(key, tags)
    arm(key, due)
  end
  out[#out + 1] = outcome
  out[#out + 1] = rec
end
publish_wakeup()
return out
