-- schedule: creates or updates tasks of one shard, in order.
-- KEYS, ARGV[1..3]: see common.lua; then KEYS[19 + i] the completion record key of the
--   i-th task (keys.rs), which complete.lua writes.
-- ARGV[4] n; then n tuples of 12: key, if_exists ('r' replace, 'k' keep, 'e' error),
--   due ms, max_attempts, id for a new task, tags joined by "\n", body, target ('' none,
--   else its stored text, which puts the task in the target lane), priority (0 to 9;
--   above 0 the task is in its lane's urgent set too), debounce max_wait ms ('' none),
--   group ('' none), dedupe window ms ('' none; negative: it holds a dead task too).
-- Dedupe windows come first, whatever if_exists says (transitions::held_dead, the
-- Store::schedule contract): a dead task whose window holds dead tasks is kept until
-- it died (updated) + the window ('k'); where there is no task, a completion record
-- ("<completed_at>,<id>,<att>,<occ>,<until>", ms) holding the key (now < until) keeps
-- the schedule ('u'), nothing written.
-- A debounced write (created or replaced) is due no later than its burst's bound
-- (`dbu`, kept in the record): the bound of the task it replaces if that one is
-- scheduled and has one (the burst goes on), else now + max_wait (a new burst). A
-- write without debounce has no bound. (transitions::debounce.)
-- Returns: n pairs of (outcome, record): outcome 'c' created, 'r' replaced, 'k' kept
--   (the record untouched), 'e' conflict (record ''), 'u' kept by the completion
--   record (the record is that record's text).
-- Records are read with one HMGET and written with one HSET and one ZADD per lane at
-- the end (and one per urgent set, for tasks of priority above 0); a key given twice
-- in one call sees its first write. A task with a group is placed when written
-- (arm_grouped), not with the ZADDs at the end. The completion records of the keys
-- without a task are read with one MGET (none when every key has one).
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
local records = records_at(n, 12)
-- The completion record of each task without a record (false: none), by index.
local completions = {}
local absent = {}
for i = 1, n do
  if not records[i] then absent[#absent + 1] = i end
end
if #absent > 0 then
  local names = {}
  for j, i in ipairs(absent) do names[j] = KEYS[19 + i] end
  local found = redis.call('MGET', unpack(names))
  for j, i in ipairs(absent) do completions[i] = found[j] end
end
-- Each lane's earliest due time, read when this call first writes a task of the lane
-- (false: not read yet; nil: the lane was empty).
local heads = { [HANDLER] = false, [TARGET] = false }
-- The record each key has after this call's writes so far.
local latest = {}
-- ZADD arguments by lane; and, for each key whose writes in this call put it in both
-- lanes, the lane of its last write (it is in both ZADDs, then leaves the other set).
local written, armed, moved = {}, { [HANDLER] = {}, [TARGET] = {} }, {}
-- The urgent set entry of each key's last write, { lane, score }, or false (priority
-- 0, after an urgent write of the key in this call); and the keys of urgent writes, in
-- the order first written. Unlike the lanes' ZADDs, made from the last writes only: a
-- key whose earlier write in this call was urgent is left out of the urgent sets its
-- last write is not in. A task of priority 0 costs no Redis command more.
local urgent_last, urgent_keys = {}, {}
-- Keys whose last write has a group, after a write without one in this call: in the
-- ZADDs at the end, then out of the lanes' sets.
local grouped_last = {}
for i = 0, n - 1 do
  local a = 5 + i * 12
  local key, mode, due, max = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local id, tags, body, tgt = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local pri, max_wait, grp = tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9]), ARGV[a + 10]
  local uq = tonumber(ARGV[a + 11])
  local earlier = latest[key]
  local rec = earlier or records[i + 1]
  local t = nil
  local outcome = 'c'
  local created = false
  -- Whether this key's write before, in this call, had no group (it is in the ZADDs).
  local old_ungrouped = false
  local dbu = nil
  if max_wait then dbu = math.min(now + max_wait, LATEST) end
  if rec then
    local old = decode(rec)
    if old.st == 2 and old.uq and old.uq < 0 and now < old.updated - old.uq then
      outcome = 'k'
    elseif mode == 'k' then
      outcome = 'k'
    elseif mode == 'e' then
      outcome = 'e'
      rec = ''
    else
      outcome = 'r'
      if dbu and old.st == 0 and old.dbu then dbu = old.dbu end
      if dbu and dbu < due then due = dbu end
      if earlier and lane_of(old.tgt) ~= lane_of(tgt) then moved[key] = lane_of(tgt) end
      old_ungrouped = earlier ~= nil and old.grp == ''
      unplace(key, old)
      unindex_tags(key, old.tags)
      t = { st = 0, due = due, exp = 0, fence = old.fence, ver = old.ver + 1, att = 0, max = max, occ = 1, anc = due,
            id = old.id, created = old.created, updated = now, tags = tags, tgt = tgt, pri = pri, dbu = dbu,
            grp = grp, uq = uq, body = body }
    end
  else
    local done = completions[i + 1]
    if done and now < tonumber(string.match(done, '([^,]*)$')) then
      outcome = 'u'
      rec = done
    else
      created = true
      if dbu and dbu < due then due = dbu end
    end
  end
  if t or created then
    if created then rec = fresh(due, id, max, now, tags, tgt, pri, dbu, grp, uq, body) else rec = encode(t) end
    latest[key] = rec
    written[#written + 1] = key
    written[#written + 1] = rec
    local lane = lane_of(tgt)
    if grp ~= '' then
      arm_grouped(key, { due = due, pri = pri, tgt = tgt, grp = grp })
      if earlier and old_ungrouped then grouped_last[key] = true end
      if urgent_last[key] then urgent_last[key] = false end
    else
      grouped_last[key] = nil
      local scores = armed[lane]
      scores[#scores + 1] = due
      scores[#scores + 1] = key
      if pri > 0 then
        if urgent_last[key] == nil then urgent_keys[#urgent_keys + 1] = key end
        note_urgent(lane, pri, due)
        urgent_last[key] = { lane, int(band_start(pri) + due) }
      elseif urgent_last[key] then
        urgent_last[key] = false
      end
      if heads[lane] == false then heads[lane] = tonumber(redis.call('ZRANGE', KEYS[lane], 0, 0, 'WITHSCORES')[2]) end
      -- Earlier than the head consumers of the lane already know of: wake them.
      if heads[lane] == nil or due < heads[lane] then wake_at(lane, due) end
    end
    index_tags(key, tags)
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
  for key in pairs(grouped_last) do
    redis.call('ZREM', KEYS[HANDLER], key)
    redis.call('ZREM', KEYS[TARGET], key)
  end
  local urgent = { [HANDLER] = {}, [TARGET] = {} }
  for _, key in ipairs(urgent_keys) do
    local entry = urgent_last[key]
    if entry then
      local scores = urgent[entry[1]]
      scores[#scores + 1] = entry[2]
      scores[#scores + 1] = key
    end
  end
  for _, lane in ipairs({ HANDLER, TARGET }) do
    if #urgent[lane] > 0 then redis.call('ZADD', KEYS[URGENT[lane]], unpack(urgent[lane])) end
  end
end
save_groups()
publish_wakeup()
return out
