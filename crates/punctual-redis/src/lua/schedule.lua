-- schedule: creates or updates tasks of one shard, in order.
-- KEYS, ARGV[1..3]: see common.lua; then KEYS[SHARD_KEYS + i] (SHARD_KEYS = 25) the
--   completion record key of the i-th task (keys.rs), which complete.lua writes.
-- ARGV[4] n; then n tuples of 14: key, if_exists ('r' replace, 'k' keep, 'e' error),
--   due ms, max_attempts, id for a new task, tags joined by "\n", body, target ('' none,
--   else its stored text, which puts the task in the target lane), priority (0 to 9;
--   above 0 the task is in its lane's urgent set too), debounce max_wait ms ('' none),
--   group ('' none), dedupe window ms ('' none; negative: it holds a dead task too),
--   scheduled_for ms (the time the task's occurrence is scheduled for, before jitter),
--   the history's fields from the caller (who writes; see tell in common.lua).
-- Applying an outbox row (n = 1): then KEYS[SHARD_KEYS + n + 1] the shard's outbox
--   marks, ARGV[5 + n * 14] the row's mark, ARGV[6 + n * 14] their retention, ms (see
--   row_marked in common.lua). Answers { 'm' } when the mark is there, nothing
--   written; else writes the mark with the tasks, unless one was refused ('e').
-- Dedupe windows come first, whatever if_exists says (transitions::held_dead, the
-- Store::schedule contract): a dead task whose window holds dead tasks is kept until
-- it died (updated) + the window ('k'); where there is no task, a completion record
-- ("<completed_at>,<id>,<att>,<occ>,<until>", ms) holding the key (now < until) keeps
-- the schedule ('u'), nothing written.
-- A debounced write (created or replaced) is due no later than its burst's bound
-- (`dbu`, kept in the record): the bound of the task it replaces if that one is
-- scheduled and has one (the burst goes on), else now + max_wait (a new burst). A
-- write without debounce has no bound. (transitions::debounce.)
-- A write (created or replaced) is anchored at the earlier of its scheduled_for and
-- its due time once debounced (transitions::anchor).
-- Returns: n pairs of (outcome, record): outcome 'c' created, 'r' replaced, 'k' kept
--   (the record untouched), 'e' conflict (record ''), 'u' kept by the completion
--   record (the record is that record's text).
-- History: a task created is told 'created', one replaced 'replaced' with the names of
-- the fields that differ (`changed`, as history::changed_fields names them); a task
-- kept, refused or kept by a completion record tells nothing.
-- Records are read with one HMGET and written with one HSET and one ZADD per lane at
-- the end (and one per urgent set, for tasks of priority above 0); a key given twice
-- in one call sees its first write. Tasks with a group are placed at the end too, one
-- ZADD per set (see arm_grouped for what each set gets). The completion records of
-- the keys without a task are read with one MGET (none when every key has one).
local now = now_ms()
local out = {}
local n = tonumber(ARGV[4])
local row = ARGV[5 + n * 14]
if row and row_marked(row) then return { 'm' } end
local records = records_at(n, 14)
-- The completion record of each task without a record (false: none), by index.
local completions = {}
local absent = {}
for i = 1, n do
  if not records[i] then absent[#absent + 1] = i end
end
if #absent > 0 then
  local names = {}
  for j, i in ipairs(absent) do names[j] = KEYS[SHARD_KEYS + i] end
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
-- The writes with a group, placed at the end: { key, lane, due, pri, grp, dropped (a
-- later write of the key replaced it) }, and the index of each key's last one.
local grouped_writes, grouped_at = {}, {}
-- The counts of the groups written, read with one HMGET.
local named, seen_group = {}, {}
for i = 0, n - 1 do
  local grp = ARGV[5 + i * 14 + 10]
  if grp ~= '' and not seen_group[grp] then
    seen_group[grp] = true
    named[#named + 1] = grp
  end
end
read_groups(named)

-- The payload's JSON and the policies' of a body of format 2 (see record.rs): the text
-- before its first "\n" and after it ('' when there is none).
local function body_parts(body)
  local cut = string.find(body, '\n', 1, true)
  if cut == nil then return body, '' end
  return string.sub(body, 1, cut - 1), string.sub(body, cut + 1)
end

-- The history's member "c" of a replace of `old` by `t`, '' when no field differs: in
-- history::changed_fields' order, the fields a caller writes that differ. The body of
-- a record of format 1 is one JSON object of another form: its payload and policies
-- are told changed.
local function changed(old, t)
  local names = {}
  local payload, policies = body_parts(t.body)
  local old_payload, old_policies = false, false
  if not old.v1 then old_payload, old_policies = body_parts(old.body) end
  if old.due ~= t.due then names[#names + 1] = '"due_at"' end
  if old_payload ~= payload then names[#names + 1] = '"payload"' end
  if old.tags ~= t.tags then names[#names + 1] = '"tags"' end
  if old.pri ~= t.pri then names[#names + 1] = '"priority"' end
  if old.grp ~= t.grp then names[#names + 1] = '"group"' end
  if old.tgt ~= t.tgt then names[#names + 1] = '"target"' end
  if old.max ~= t.max or old.uq ~= t.uq or old_policies ~= policies then names[#names + 1] = '"policies"' end
  if #names == 0 then return '' end
  return ',"c":[' .. table.concat(names, ',') .. ']'
end

-- The openings of the events of this call's writes, made once each.
local created_head, replaced_head = nil, nil
for i = 0, n - 1 do
  local a = 5 + i * 14
  local key, mode, due, max = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local id, tags, body, tgt = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local pri, max_wait, grp = tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9]), ARGV[a + 10]
  local uq, scheduled_for, fields = tonumber(ARGV[a + 11]), tonumber(ARGV[a + 12]), ARGV[a + 13]
  local earlier = latest[key]
  local rec = earlier or records[i + 1]
  local t = nil
  local outcome = 'c'
  local created = false
  -- Whether this key's write before, in this call, had no group (it is in the ZADDs).
  local old_ungrouped = false
  -- The group of the task replaced ('' none): left without tasks, it is forgotten.
  local left = ''
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
      left = old.grp
      if earlier and grouped_at[key] then
        -- Its write before, in this call, is not placed yet: it is dropped instead.
        grouped_writes[grouped_at[key]].dropped = true
        grouped_at[key] = nil
        count_in_group(old.grp, 0, -1)
      else
        unplace(key, old)
      end
      unindex_tags(key, old.tags)
      t = { st = 0, due = due, exp = 0, fence = old.fence, ver = old.ver + 1, att = 0, max = max, occ = 1,
            anc = math.min(scheduled_for, due), id = old.id, created = old.created, updated = now, tags = tags,
            tgt = tgt, pri = pri, dbu = dbu, grp = grp, uq = uq, body = body }
      replaced_head = replaced_head or event_head(now, 'replaced', 0)
      tell_event(key, replaced_head .. ',"d":' .. int(due) .. changed(old, t) .. fields .. '}')
    end
  else
    local done = completions[i + 1]
    if done and now < tonumber(string.match(done, '([^,]*)$')) then
      outcome = 'u'
      rec = done
    else
      created = true
      if dbu and dbu < due then due = dbu end
      -- Due as given (most writes): its text as given.
      local due_text = ARGV[a + 2]
      if due ~= tonumber(due_text) then due_text = int(due) end
      created_head = created_head or event_head(now, 'created', 0)
      tell_event(key, created_head .. ',"d":' .. due_text .. fields .. '}')
    end
  end
  if t or created then
    if created then
      rec = fresh(due, math.min(scheduled_for, due), id, max, now, tags, tgt, pri, dbu, grp, uq, body)
    else
      rec = encode(t)
    end
    latest[key] = rec
    written[#written + 1] = key
    written[#written + 1] = rec
    local lane = lane_of(tgt)
    if grp ~= '' then
      grouped_writes[#grouped_writes + 1] = { key = key, lane = lane, due = due, pri = pri, grp = grp }
      grouped_at[key] = #grouped_writes
      count_in_group(grp, 0, 1)
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
  if left ~= '' and left ~= grp then forget_if_empty(left) end
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
  -- The writes with a group, as arm_grouped places one.
  local by_due, members, earliest, urgent_n = {}, { [HANDLER] = {}, [TARGET] = {} }, {}, {}
  for _, w in ipairs(grouped_writes) do
    if not w.dropped then
      by_due[#by_due + 1] = w.due
      by_due[#by_due + 1] = w.key
      local lane_members = members[w.lane]
      lane_members[#lane_members + 1] = 0
      lane_members[#lane_members + 1] = group_member(w.grp, w.pri, w.due, w.key)
      earliest[w.lane] = earliest[w.lane] or {}
      local first = earliest[w.lane][w.grp]
      if first == nil or w.due < first then earliest[w.lane][w.grp] = w.due end
      if w.pri > 0 then urgent_n[w.lane] = (urgent_n[w.lane] or 0) + 1 end
    end
  end
  if #by_due > 0 then redis.call('ZADD', KEYS[GROUPED], unpack(by_due)) end
  for _, lane in ipairs({ HANDLER, TARGET }) do
    if #members[lane] > 0 then
      local order = KEYS[GROUP_ORDER[lane]]
      local head = redis.call('ZRANGEBYSCORE', order, int(WAITING), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
      local waiting, ready, first = {}, {}, nil
      for grp, due in pairs(earliest[lane]) do
        waiting[#waiting + 1] = int(WAITING + due)
        waiting[#waiting + 1] = grp
        ready[#ready + 1] = int(due)
        ready[#ready + 1] = grp
        if first == nil or due < first then first = due end
      end
      redis.call('ZADD', KEYS[GROUP_SET[lane]], unpack(members[lane]))
      redis.call('ZADD', order, 'LT', unpack(waiting))
      redis.call('ZADD', KEYS[READY_DUE[lane]], 'XX', 'LT', unpack(ready))
      if urgent_n[lane] then count_grouped_urgent(lane, urgent_n[lane]) end
      -- Earlier than every waiting group: wake the lane's consumers.
      if head == nil or first < tonumber(head) - WAITING then wake_at(lane, first) end
    end
  end
end
if row then
  local refused = false
  for i = 1, #out, 2 do refused = refused or out[i] == 'e' end
  if not refused then mark_row(row, now, tonumber(ARGV[6 + n * 14])) end
end
save_history()
save_groups()
publish_wakeup()
return out
