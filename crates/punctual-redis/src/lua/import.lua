-- import: stores tasks and completion records of one shard as another store held them
-- (Store::import): each task only where its key holds none, each record only where
-- it holds at now and its key holds none that does.
-- KEYS, ARGV[1..3]: see common.lua; then KEYS[SHARD_KEYS + j] (SHARD_KEYS = 25) the
--   key of the j-th completion record (keys.rs), which complete.lua writes.
-- ARGV[4] n; then n tuples of 20: key, state (0 scheduled, 1 leased, 2 dead), due ms,
--   id (of this store), created ms, updated ms, lease expiry ms (a leased task's, else
--   ''), attempts, max_attempts, version, occurrence, anchor ms, debounce bound ms (''
--   none), priority, dedupe window as the record keeps it ('' none), tags joined by
--   "\n", target ('' none, else its stored text), group ('' none), last_error after a
--   '+' ('' none), body; then ARGV[5 + n * 20] m, and m pairs: a completion record's
--   text ("<completed_at>,<id>,<att>,<occ>,<until>", ms, as complete.lua writes it)
--   and its until ms.
-- A task is written with every field as given but its fence, 0 (no lease token of the
-- other store is live here: its id is this store's too), and placed in the sets of its
-- state and the tags index as if it had come there the usual way (`place`): a
-- scheduled task wakes the lane's consumers if it is earlier than the lane's head, a
-- leased one is reaped at its expiry and counts toward its group's limit, a dead one is
-- swept by its time of death (updated). A key given twice is written once, the first.
-- A record is written as complete.lua writes one, expiring at its until. Each task
-- written is told 'imported', with its state and due time.
-- Returns: n integers, 1 written or 0 present (nothing written).
local now = now_ms()
local n = tonumber(ARGV[4])
local m = tonumber(ARGV[5 + n * 20])
local records = records_at(n, 20)
local out, written = {}, {}
for i = 0, n - 1 do
  local a = 5 + i * 20
  local key = ARGV[a]
  if records[i + 1] or written[key] then
    out[#out + 1] = 0
  else
    written[key] = true
    local err = nil
    if ARGV[a + 18] ~= '' then err = string.sub(ARGV[a + 18], 2) end
    local t = {
      st = tonumber(ARGV[a + 1]), due = tonumber(ARGV[a + 2]), id = tonumber(ARGV[a + 3]),
      created = tonumber(ARGV[a + 4]), updated = tonumber(ARGV[a + 5]), exp = tonumber(ARGV[a + 6]) or 0,
      att = tonumber(ARGV[a + 7]), max = tonumber(ARGV[a + 8]), ver = tonumber(ARGV[a + 9]),
      occ = tonumber(ARGV[a + 10]), anc = tonumber(ARGV[a + 11]), dbu = tonumber(ARGV[a + 12]),
      pri = tonumber(ARGV[a + 13]), uq = tonumber(ARGV[a + 14]), tags = ARGV[a + 15], tgt = ARGV[a + 16],
      grp = ARGV[a + 17], err = err, body = ARGV[a + 19], fence = 0,
    }
    redis.call('HSET', KEYS[5], key, encode(t))
    index_tags(key, t.tags)
    place(key, t)
    tell(key, now, 'imported', t.st, ',"d":' .. int(t.due))
    out[#out + 1] = 1
  end
end
if m > 0 then
  local names = {}
  for j = 1, m do names[j] = KEYS[SHARD_KEYS + j] end
  local found = redis.call('MGET', unpack(names))
  -- The record of each key written by this call: a key given twice keeps the first.
  local kept = {}
  for j = 1, m do
    local b = 6 + n * 20 + (j - 1) * 2
    local text, ends = ARGV[b], tonumber(ARGV[b + 1])
    local here = kept[names[j]] or found[j]
    local held = here and now < tonumber(string.match(here, '([^,]*)$'))
    if now < ends and not held then
      redis.call('SET', names[j], text, 'PX', int(ends - now))
      kept[names[j]] = text
    end
  end
end
save_history()
save_groups()
publish_wakeup()
return out
