-- complete: applies completions to live leases of one shard, each on its own.
-- KEYS, ARGV[1..3]: see common.lua; then KEYS[SHARD_KEYS + i] (SHARD_KEYS = 25) the
--   completion record key of the i-th completion's task (keys.rs).
-- Done of a task with a dedupe window (uq) writes its completion record there, in place
-- of any earlier one: "<completed_at>,<id>,<att>,<occ>,<until>" (ms, decimal; until =
-- now + the window), which expires at until (PX; schedule.lua reads until itself).
-- ARGV[4] n; then n groups of 9: key, id, version, fence, kind ('d' done, 'r' retry,
--   's' reschedule, 'x' dead), at ms (retry, reschedule), error (retry, dead), anchor
--   ms (reschedule: the time the next occurrence is scheduled for, before jitter), the
--   history's fields from the caller (the fence, the due time it is scheduled again
--   at, the outcome, the error, who completes, what the delivery saw; see tell in
--   common.lua).
-- Returns: n integers, 1 applied or 0 lease lost (nothing changed).
-- History: each completion applied is told 'acked' with those fields and the lease's
-- try (attempts + 1).
-- Records are read with one HMGET and finished tasks deleted together at the end; a
-- key completed twice in one call sees its first completion.
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
local records = records_at(n, 9)
-- The opening of an ack's event, by the state it leaves (4: gone), made once each.
local heads = {}
-- Tells the ack of `key`'s try `try`, leaving state `st`, with the caller's `fields`.
local function acked(key, st, try, fields)
  local head = heads[st or 4]
  if head == nil then
    head = event_head(now, 'acked', st)
    heads[st or 4] = head
  end
  tell_event(key, head .. ',"n":' .. dec(try) .. fields .. '}')
end
-- Keys changed by this call (their prefetched record is stale), and those finished.
local changed, finished, gone = {}, {}, {}
for i = 0, n - 1 do
  local a = 5 + i * 9
  local key = ARGV[a]
  local rec = records[i + 1]
  if gone[key] then
    rec = false
  elseif changed[key] then
    rec = redis.call('HGET', KEYS[5], key)
  end
  local kind, at, err = ARGV[a + 4], tonumber(ARGV[a + 5]), ARGV[a + 6]
  -- Done deletes the task: it needs the lease and the tags, not the whole record.
  local read = decode
  if kind == 'd' then read = lease_view end
  local t = live_record(rec, a, now, read)
  if t == nil then
    out[#out + 1] = 0
  else
    changed[key] = true
    local try, fields = t.att + 1, ARGV[a + 8]
    if kind == 'd' then
      acked(key, nil, try, fields)
      -- A live lease is in `leases` and `inflight`: removed below with the record.
      unindex_tags(key, t.tags)
      if t.grp ~= '' then count_in_group(t.grp, 1, -1) end
      gone[key] = true
      finished[#finished + 1] = key
      if t.uq then
        local ends = math.min(now + math.abs(t.uq), LATEST)
        local done = table.concat({ int(now), int(t.id), int(t.att), int(t.occ), int(ends) }, ',')
        redis.call('SET', KEYS[SHARD_KEYS + 1 + i], done, 'PX', int(math.max(ends - now, 1)))
      end
    else
      unplace(key, t)
      t.exp = 0
      t.updated = now
      if kind == 'r' then
        t.st, t.due, t.att, t.err = 0, at, t.att + 1, err
        arm(key, t)
      elseif kind == 's' then
        t.st, t.due, t.att, t.err, t.occ, t.anc = 0, at, 0, nil, t.occ + 1, tonumber(ARGV[a + 7])
        arm(key, t)
      else
        t.st, t.att, t.err = 2, t.att + 1, err
        bury(key, t)
      end
      acked(key, t.st, try, fields)
      redis.call('HSET', KEYS[5], key, encode(t))
    end
    out[#out + 1] = 1
  end
end
if #finished > 0 then
  redis.call('ZREM', KEYS[2], unpack(finished))
  redis.call('ZREM', KEYS[3], unpack(finished))
  redis.call('HDEL', KEYS[5], unpack(finished))
end
save_history()
save_groups()
publish_wakeup()
return out
