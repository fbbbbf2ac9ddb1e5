-- Prepended to every script of this folder (see scripts.rs). Every script gets the
-- same KEYS, the keys of one shard of one queue (see keys.rs):
--   KEYS[1] scheduled  ZSet key -> due_at ms of scheduled tasks without a target
--   KEYS[2] leases     ZSet key -> lease expiry ms
--   KEYS[3] inflight   ZSet key -> due_at ms of leased tasks (listing in due order)
--   KEYS[4] dead       ZSet key -> due_at ms of dead tasks
--   KEYS[5] tasks      Hash key -> record (format below)
--   KEYS[6] tags       ZSet of "tag\nkey", all scores 0 (lexicographic index)
--   KEYS[7] seq        counter: every fence handed out in this shard
--   KEYS[8] died       ZSet key -> when each dead task died, ms (its updated)
--   KEYS[9] scheduled:target ZSet key -> due_at ms of scheduled tasks with a target
--   KEYS[10] scheduled:urgent ZSet key -> (9 - priority) * BAND + due_at ms of the
--     scheduled tasks of KEYS[1] whose priority is above 0 (the handler lane's urgent set)
--   KEYS[11] scheduled:target:urgent ZSet the same for the tasks of KEYS[9]
--   KEYS[12] scheduled:grouped ZSet key -> due_at ms of scheduled tasks with a group
--     (both lanes: listing, counts, purges)
--   KEYS[13] scheduled:groups ZSet, scores 0, of "<group>\n<9 - priority><due_at ms in
--     12 hex digits>\n<key>" for the scheduled tasks of KEYS[12] without a target: each
--     group's tasks in lease order (see group_member)
--   KEYS[14] scheduled:target:groups ZSet the same for the tasks of KEYS[12] with a target
--   KEYS[15] groups:scheduled ZSet group -> its state, of the groups with tasks in
--     KEYS[13]: its turn (ready), PARKED + its leased count, or WAITING + its earliest
--     due_at ms there (see common_groups.lua)
--   KEYS[16] groups:target:scheduled ZSet the same for KEYS[14]
--   KEYS[17] groups ZSet, scores 0, of the names of the groups that have tasks
--   KEYS[18] groups:counts Hash group -> "<scheduled>,<leased>,<dead>,<turn>" (decimal)
--   KEYS[19] turns Hash 'last' -> the last turn a lease gave, 'ungrouped' -> the
--     ungrouped tasks' turn (see lease.lua)
--   KEYS[20] groups:ready ZSet group -> the earliest due_at ms of its tasks in KEYS[13],
--     of each group ready in KEYS[15] (see common_groups.lua)
--   KEYS[21] groups:target:ready ZSet the same for KEYS[14] and KEYS[16]
--   KEYS[22] groups:slots Hash group -> its group_rate slots, "<at>+<until - at>" in ms
--     each, separated by ' ' (only the lease script reads or writes it: group_slots.lua)
--   KEYS[23] groups:slots:ends ZSet group -> the latest until ms of its slots in KEYS[22]
--   KEYS[24] history Hash key -> its history: its count in three digits, then
--     "\n<event>" for each of its latest HISTORY_LIMIT events, oldest first (see tell)
--   KEYS[25] history:latest ZSet key -> a time at or before its history's latest event,
--     ms: of its first event, or of its latest as a sweep last read it (see tell below)
-- (schedule.lua and complete.lua get more after these: KEYS[SHARD_KEYS + i], the
-- completion record key of the call's i-th task, under the same hash tag; see keys.rs;
-- and schedule.lua, delete.lua and cancel_tag.lua, when they apply an outbox row, the
-- shard's outbox marks last of all: see row_marked)
-- and the same first ARGV:
--   ARGV[1] now in ms since the epoch, or '' to use Redis' own clock (TIME)
--   ARGV[2] the channel on which wake-ups are published
--   ARGV[3] the queue name, for wake-up messages; of a sharded queue, followed by
--     "\ns<shard>\np<process>" (see publish_wakeup)
-- A scheduled task is in the due set of its lane: KEYS[1] when its record holds no
-- target (the handler lane), KEYS[9] when it holds one (the target lane); and, when
-- its priority is above 0, in that lane's urgent set too (KEYS[10], KEYS[11]), scored
-- so that the highest priority comes first and each priority in due order. A task of
-- priority 0 (most tasks) is in no urgent set: a queue that uses no priorities has
-- empty urgent sets, which Redis does not even keep.
-- A scheduled task with a group is in none of KEYS[1], KEYS[9], KEYS[10], KEYS[11] but
-- in KEYS[12] and its lane's group set (KEYS[13], KEYS[14]); its group is in that
-- lane's KEYS[15] or KEYS[16] exactly while it has such a task, and in KEYS[20] or
-- KEYS[21] exactly while it is ready there. A group is in
-- KEYS[17] and KEYS[18] exactly while it has tasks, its counts those of its tasks by
-- state (a leased task counts until its lease ends or is reaped). A queue without
-- groups has all of them empty, so Redis keeps none of them. KEYS[22] and KEYS[23]
-- hold the slots group_rate leases took, apart from the counts: they outlive a
-- group's tasks, for the window of each slot (group_slots.lua).
-- Record, format 2 (written for every new task): a mark, then up to 18 fields in
-- base 36 ('-' before a negative one) separated by ",", then "|":
--   mark: S scheduled, L leased, D dead
--   due,id,due-created,max,taglen,exp-updated,fence,updated-created,att,errlen,ver,occ,anchor,tgtlen,pri,dbu-due,grplen,uq
-- Times other than due and anchor are written as distances, which are short: created
-- as due - created, updated as updated - created, and a lease's expiry as exp -
-- updated (empty: exp 0, not leased). errlen is -1 when there is no last_error. The
-- digits go two at a time (`b36`): one at a time, encoding took a lease script twice
-- as long as format 1's decimal.
-- An empty field holds its usual value, and empty fields at the end are left out, so
-- a new task is "S<due>,<id>,<due - created>|": due - created 0, max 20, taglen 0,
-- exp 0, fence 0, updated - created 0, att 0, errlen -1, ver 1, occ 1, anchor = due,
-- tgtlen 0 (no target), pri 0 (the priority, 0 to 9). tgtlen came with targets: a
-- record written before has at most 13 fields and no target; pri came last, with
-- priorities: a record written before has at most 14 fields and priority 0, and so has
-- every record of priority 0 written since (byte for byte what it was before).
-- dbu-due came with debounce: the bound of the task's debounce burst (`dbu`, see
-- schedule.lua) as its distance from due ('0' when due is the bound; empty: no burst,
-- which is every leased and dead task and nearly every scheduled one). A record
-- written before has at most 15 fields and no bound, and so has every record outside
-- a burst written since (byte for byte what it was before).
-- grplen came with groups: the length of the task's group (empty: none). A record
-- written before has at most 16 fields and no group, and so has every record without
-- one written since (byte for byte what it was before).
-- uq came with dedupe windows: the task's window in ms (`uq`, see schedule.lua and
-- complete.lua), negative when it holds a dead task too; empty: none. A record without
-- one has at most 17 fields.
-- The usual values belong to the format: they never change, whatever the defaults of
-- a later punctual.
-- After "|": errlen bytes of last_error, taglen bytes of tags joined by "\n", tgtlen
-- bytes of the target (Target::to_stored, opaque here but for being there), grplen
-- bytes of the group, then
-- the body (written by the Rust side, opaque here): the payload's JSON (empty:
-- null), and when backoff, repeat or timing are not the defaults a "\n" and their
-- JSON, each left out at its default (see record.rs). Timing (calendar, misfire,
-- overlap, jitter) came last: a body written before has none and reads with the default
-- timing, and a task with the default timing writes the body it wrote before.
-- The anchor is the time the task's occurrence was scheduled for, before jitter: at a
-- create or a replace the earlier of the task's scheduled_for and its due time (once
-- debounced), at a reschedule the one the completion gives; kept by everything else.
-- Record, format 1 (written before format 2; still read, and written back in format 1
-- with its body untouched, so no body is ever converted here):
--   "st,due,exp,fence,ver,att,max,occ,anchor,id,created,updated,errlen,taglen|"
-- in decimal, st the state's number, the same fields left empty at the same usual
-- values (max and taglen always written), then the error, the tags and a body that is
-- one JSON object {"p": payload, "b": backoff, "r": repeat}. It never holds a target
-- nor a group and its priority is 0: a task gets any of them only by a replace, which
-- writes format 2.
-- States: 0 scheduled, 1 leased, 2 dead. Keys and tags hold no control characters.

local function int(n)
  return string.format('%d', n)
end

-- How many keys of the shard every script gets first (those above).
local SHARD_KEYS = 25

-- History (punctual_core::history): every script that changes a task tells it, one
-- event per task it changes (`tell`), and writes the events told at its end
-- (`save_history`) with one HMGET and one HSET of KEYS[24], whatever the number of
-- tasks, and a ZADD of KEYS[25] for the keys whose history it starts: the history is
-- written in the change's atomic step. An event is one JSON object as history::encode
-- writes it (short names, fields at their empty value left out), made here from
-- numbers and fixed names, and from what the caller gives already encoded as JSON
-- members (`fields`, each after a ',': who did it, an ack's outcome, fence, due time,
-- error and delivery report, a cancel's tag), so a script encodes no text of its own
-- but a reaped lease's error (cjson). A key's history keeps its HISTORY_LIMIT latest
-- events; it outlives the task, and a task created again under the key adds to it.
-- KEYS[25] scores a key by its history's first event, at or before its latest (as a
-- sweep last read it, see sweep_history.lua): no event but a history's first costs a
-- ZADD. One Hash per shard, not a key per task: the scripts that find their tasks in
-- an index (lease, reap, purge, cancel_tag, sweep_dead) could not name a key per task
-- in KEYS. Each script's events happen at one time (its now, or for the deletions
-- that are given none, Redis' clock), whose text is made once.
local HISTORY, HISTORY_LATEST, HISTORY_LIMIT = 24, 25, 100
local STATE_MEMBER = { [0] = '","s":"scheduled"', '","s":"leased"', '","s":"dead"' }
-- The keys told of, in the order first told; the events of each ('\n' between them)
-- and how many; each key's place in those lists.
local told_keys, told_events, told_count, told_index = {}, {}, {}, {}
-- When the events told happened, ms, and its text.
local told_ms, told_text = nil, nil

-- The opening of every event of `kind` at `at` leaving its task in state `st` (nil:
-- gone), up to its own members: a script that tells many events of a kind makes it
-- once.
local function event_head(at, kind, st)
  if at ~= told_ms then told_ms, told_text = at, int(at) end
  if st == nil then return '{"t":' .. told_text .. ',"e":"' .. kind .. '"' end
  return '{"t":' .. told_text .. ',"e":"' .. kind .. STATE_MEMBER[st]
end

-- Tells `event`, an event's JSON (an event_head, its members, '}'), of `key`.
local function tell_event(key, event)
  local i = told_index[key]
  if i == nil then
    i = #told_keys + 1
    told_keys[i], told_events[i], told_count[i], told_index[key] = key, event, 1, i
  else
    told_events[i], told_count[i] = told_events[i] .. '\n' .. event, told_count[i] + 1
  end
end

-- Tells that `kind` happened to `key` at `at`, leaving it in state `st` (nil: gone),
-- with `fields` ('' or JSON members, each after a ',').
local function tell(key, at, kind, st, fields)
  tell_event(key, event_head(at, kind, st) .. fields .. '}')
end

-- `n` (at least 0) in decimal for an event: a try's number (most are small) from a
-- table made as the script goes; any other as Lua writes a number when that is exact
-- (below 10^14), else as `int` does. (Writing numbers is most of what an event costs.)
local small_texts = {}
local function dec(n)
  if n < 64 then
    local text = small_texts[n]
    if text == nil then
      text = int(n)
      small_texts[n] = text
    end
    return text
  end
  if n < 1e14 then return n end
  return int(n)
end

-- A history's count as it is stored: three digits, made once per script and count.
local count_texts = {}
local function count_text(n)
  local text = count_texts[n]
  if text == nil then
    text = string.format('%03d', n)
    count_texts[n] = text
  end
  return text
end

-- `events` ('\n' before each of `count` events) less its oldest past HISTORY_LIMIT.
local function latest_events(events, count)
  local at = 1
  for _ = 1, count - HISTORY_LIMIT do at = string.find(events, '\n', at + 1, true) end
  return string.sub(events, at)
end

-- Appends the events told to their keys' histories (the count in three digits, then
-- "\n<event>" for each, oldest first), dropping the oldest past HISTORY_LIMIT, and
-- indexes the keys whose history this starts.
local function save_history()
  if #told_keys == 0 then return end
  local stored = redis.call('HMGET', KEYS[HISTORY], unpack(told_keys))
  local written, started = {}, {}
  for i, key in ipairs(told_keys) do
    local old, count, events = stored[i], told_count[i], told_events[i]
    local value
    if old then
      -- The three digits' bytes, each 48 ('0') above its digit: 48 * 111 in all.
      local hundreds, tens, ones = string.byte(old, 1, 3)
      count = count + hundreds * 100 + tens * 10 + ones - 5328
      if count <= HISTORY_LIMIT then
        value = count_text(count) .. string.sub(old, 4) .. '\n' .. events
      else
        value = count_text(HISTORY_LIMIT) .. latest_events(string.sub(old, 4) .. '\n' .. events, count)
      end
    else
      if count <= HISTORY_LIMIT then
        value = count_text(count) .. '\n' .. events
      else
        value = count_text(HISTORY_LIMIT) .. latest_events('\n' .. events, count)
      end
      started[#started + 1] = told_text
      started[#started + 1] = key
    end
    written[#written + 1] = key
    written[#written + 1] = value
  end
  redis.call('HSET', KEYS[HISTORY], unpack(written))
  if #started > 0 then redis.call('ZADD', KEYS[HISTORY_LATEST], unpack(started)) end
end

-- Outbox rows (Store::apply_once). A schedule, delete or cancel_tag that applies a row
-- gets, after its other KEYS, the shard's outbox marks as its last key: a ZSet of
-- "<outbox>\n<row id>" -> when the row was applied, ms; and, after its other ARGV, the
-- row's mark and how long marks are kept (MARK_RETENTION, ms). It first looks for the
-- mark: there, it changes nothing and answers so; else it writes the mark with the
-- row's effect (a schedule it refuses writes none). A call that applies no row reads
-- and writes no mark: it costs what it did.
local function row_marked(mark)
  return redis.call('ZSCORE', KEYS[#KEYS], mark) ~= false
end

-- Marks the row `mark` applied at `now`, first dropping at most 100 marks older than
-- `now - retention` (each mark written drops more than it adds, so marks past their
-- retention never pile up, and no script drops more than a few at once).
local function mark_row(mark, now, retention)
  local old = redis.call('ZRANGEBYSCORE', KEYS[#KEYS], '-inf', '(' .. int(now - retention), 'LIMIT', 0, 100)
  if #old > 0 then redis.call('ZREM', KEYS[#KEYS], unpack(old)) end
  redis.call('ZADD', KEYS[#KEYS], int(now), mark)
end

-- Timestamp::MAX in ms: no time a script computes is later.
local LATEST = 253402207200999

-- Format 1: the header's fields, then the rest of the record from `pos`.
local function decode_v1(rec)
  local st, due, exp, fence, ver, att, max, occ, anc, id, created, updated, errlen, taglen, pos = string.match(rec,
    '^(%d+),(%-?%d+),(%-?%d*),(%d*),(%d*),(%d*),(%d+),(%d*),(%-?%d*),(%d+),(%-?%d+),(%-?%d*),(%-?%d*),(%d+)|()')
  local t = {
    v1 = true, st = tonumber(st), due = tonumber(due), exp = tonumber(exp) or 0, fence = tonumber(fence) or 0,
    ver = tonumber(ver) or 1, att = tonumber(att) or 0, max = tonumber(max), occ = tonumber(occ) or 1,
    id = tonumber(id), created = tonumber(created), pri = 0,
  }
  t.anc = tonumber(anc) or t.due
  t.updated = tonumber(updated) or t.created
  return t, tonumber(errlen) or -1, tonumber(taglen), 0, 0, pos
end

local B36 = '0123456789abcdefghijklmnopqrstuvwxyz'

-- Two-digit strings "00" to "zz" by value, each made the first time a script writes it
-- (a script cannot keep anything between runs): writing a number two digits at a time
-- takes half the time of one at a time, and making all 1296 up front cost a script
-- that writes one record more than the record itself.
local b36_pairs = {}

local function b36_pair(d)
  local pair = b36_pairs[d]
  if pair == nil then
    local lo = d % 36
    local hi = (d - lo) / 36
    pair = string.sub(B36, hi + 1, hi + 1) .. string.sub(B36, lo + 1, lo + 1)
    b36_pairs[d] = pair
  end
  return pair
end

-- The integer `n` in base 36, '-' before a negative one.
local function b36(n)
  if n < 0 then return '-' .. b36(-n) end
  if n < 36 then return string.sub(B36, n + 1, n + 1) end
  local text = ''
  while n >= 1296 do
    local d = n % 1296
    text = b36_pair(d) .. text
    n = (n - d) / 1296
  end
  if n < 36 then return string.sub(B36, n + 1, n + 1) .. text end
  return b36_pair(n) .. text
end

-- The base-36 field `s`, or `usual` when it is empty.
local function field(s, usual)
  if s == '' then return usual end
  if string.byte(s) == 45 then return -tonumber(string.sub(s, 2), 36) end
  return tonumber(s, 36)
end

local STATE_OF_MARK = { S = 0, L = 1, D = 2 }
local MARK_OF_STATE = { [0] = 'S', 'L', 'D' }
-- The usual max_attempts of format 2 (DEFAULT_MAX_ATTEMPTS when the format was made).
local USUAL_MAX = 20
-- A mark, 18 fields (missing ones at the end match empty), "|".
local HEADER_V2 = '^.' .. string.rep('([^,|]*),?', 18) .. '|()'

-- Format 2: the header's fields, then the rest of the record from `pos`.
local function decode_v2(rec, st)
  local due, id, lead, max, taglen, lease, fence, age, att, errlen, ver, occ, anc, tgtlen, pri, dbu, grplen, uq, pos =
    string.match(rec, HEADER_V2)
  local t = { st = st, due = field(due), id = field(id), pri = field(pri, 0), dbu = field(dbu, nil) }
  t.uq = field(uq, nil)
  if t.dbu ~= nil then t.dbu = t.due + t.dbu end
  t.created = t.due - field(lead, 0)
  t.updated = t.created + field(age, 0)
  t.exp = field(lease, nil)
  if t.exp == nil then t.exp = 0 else t.exp = t.updated + t.exp end
  t.max, t.fence, t.att = field(max, USUAL_MAX), field(fence, 0), field(att, 0)
  t.ver, t.occ, t.anc = field(ver, 1), field(occ, 1), field(anc, t.due)
  return t, field(errlen, -1), field(taglen, 0), field(tgtlen, 0), field(grplen, 0), pos
end

-- The record `rec`, in either format.
local function decode(rec)
  local st = STATE_OF_MARK[string.sub(rec, 1, 1)]
  local t, errlen, taglen, tgtlen, grplen, pos
  if st == nil then
    t, errlen, taglen, tgtlen, grplen, pos = decode_v1(rec)
  else
    t, errlen, taglen, tgtlen, grplen, pos = decode_v2(rec, st)
  end
  if errlen >= 0 then
    t.err = string.sub(rec, pos, pos + errlen - 1)
    pos = pos + errlen
  end
  t.tags = string.sub(rec, pos, pos + taglen - 1)
  pos = pos + taglen
  t.tgt = ''
  if tgtlen > 0 then
    t.tgt = string.sub(rec, pos, pos + tgtlen - 1)
    pos = pos + tgtlen
  end
  t.grp = string.sub(rec, pos, pos + grplen - 1)
  t.body = string.sub(rec, pos + grplen)
  return t
end

-- The state and due time of `rec`, which lead it in either format, without the rest.
local function state_and_due(rec)
  local st = STATE_OF_MARK[string.sub(rec, 1, 1)]
  if st == nil then
    local s, due = string.match(rec, '^(%d+),(%-?%d+),')
    return tonumber(s), tonumber(due)
  end
  return st, field(string.match(rec, '^.([^,|]*)'))
end

-- `n`, or '' when it is `usual` (see the record formats above); `digits` writes it.
local function unless(n, usual, digits)
  if n == usual then return '' end
  return digits(n)
end

-- `t` in the format it was read in (format 2 for a new task).
local function encode(t)
  local errlen = -1
  if t.err then errlen = #t.err end
  local tail = (t.err or '') .. t.tags .. t.tgt .. t.grp .. t.body
  if t.v1 then
    return table.concat({
      int(t.st), ',', int(t.due), ',', unless(t.exp, 0, int), ',', unless(t.fence, 0, int), ',',
      unless(t.ver, 1, int), ',', unless(t.att, 0, int), ',', int(t.max), ',', unless(t.occ, 1, int), ',',
      unless(t.anc, t.due, int), ',', int(t.id), ',', int(t.created), ',', unless(t.updated, t.created, int), ',',
      unless(errlen, -1, int), ',', int(#t.tags), '|', tail,
    })
  end
  local lease = ''
  if t.exp ~= 0 then lease = b36(t.exp - t.updated) end
  local f = {
    b36(t.due), b36(t.id), unless(t.due - t.created, 0, b36), unless(t.max, USUAL_MAX, b36),
    unless(#t.tags, 0, b36), lease, unless(t.fence, 0, b36), unless(t.updated - t.created, 0, b36),
    unless(t.att, 0, b36), unless(errlen, -1, b36), unless(t.ver, 1, b36), unless(t.occ, 1, b36),
    unless(t.anc, t.due, b36), unless(#t.tgt, 0, b36), unless(t.pri, 0, b36), '', unless(#t.grp, 0, b36), '',
  }
  if t.dbu ~= nil then f[16] = b36(t.dbu - t.due) end
  if t.uq ~= nil then f[18] = b36(t.uq) end
  local n = 18
  while f[n] == '' do n = n - 1 end
  return MARK_OF_STATE[t.st] .. table.concat(f, ',', 1, n) .. '|' .. tail
end

-- The record of a task created at `now`: what encode(t) writes of it, made without
-- the table (every field after the fifth holds its usual value, but for the anchor
-- `anc`, a target's length, the priority, the debounce bound `dbu`, nil for none, a
-- group's length and the dedupe window `uq`, nil for none).
local function fresh(due, anc, id, max, now, tags, tgt, pri, dbu, grp, uq, body)
  local f = { b36(due), b36(id), unless(due - now, 0, b36), unless(max, USUAL_MAX, b36), unless(#tags, 0, b36) }
  local n = 5
  if anc ~= due or tgt ~= '' or pri ~= 0 or dbu ~= nil or grp ~= '' or uq ~= nil then
    for i = 6, 12 do f[i] = '' end
    f[13] = unless(anc, due, b36)
    f[14], f[15], f[16], f[17], f[18], n = unless(#tgt, 0, b36), unless(pri, 0, b36), '', unless(#grp, 0, b36), '', 18
    if dbu ~= nil then f[16] = b36(dbu - due) end
    if uq ~= nil then f[18] = b36(uq) end
  end
  while f[n] == '' do n = n - 1 end
  return 'S' .. table.concat(f, ',', 1, n) .. '|' .. tags .. tgt .. grp .. body
end

-- The part of a delivery id (Task::delivery_id) after the store's, of the task `id` at
-- version `ver` and occurrence `occ`.
local function delivery_suffix(id, ver, occ)
  return string.format('%x-%d-%d', id, ver, occ)
end

-- The scheduled record `rec` leased with `fence` from `now` for `lease_ms`: what
-- encode(t) writes after decode(rec) and those changes, the debounce bound cleared (a
-- lease ends the burst); and for the history's event the task's attempts and its
-- delivery_suffix. In format 2 without a bound only the fields that change
-- (lease, fence, age) are made anew, between the header's first five fields and its
-- fields from the ninth on, both copied as written, found by their commas without
-- splitting the header. A record with a bound (a 16th field not empty, found by one
-- match from the ninth field) is decoded and encoded.
local SIXTEENTH_FROM_NINTH = '^' .. string.rep('[^,|]*,', 7) .. '([^,|]*)'
-- From the eighth field's comma on: the ninth to the twelfth fields (att, errlen, ver, occ).
local AFTER_EIGHTH = '^,([^,|]*),?([^,|]*),?([^,|]*),?([^,|]*)'
local function leased(rec, fence, now, lease_ms)
  local format_2 = STATE_OF_MARK[string.sub(rec, 1, 1)] ~= nil
  local bar = string.find(rec, '|', 2, true)
  -- commas[i]: the comma after field i, for the fields the header has (up to 8).
  local commas, at = {}, 1
  if format_2 then
    for i = 1, 8 do
      at = string.find(rec, ',', at + 1, true)
      if at == nil or at > bar then break end
      commas[i] = at
    end
  end
  local bound = commas[8] and string.match(rec, SIXTEENTH_FROM_NINTH, commas[8] + 1)
  if not format_2 or (bound and bound ~= '') then
    local t = decode(rec)
    t.st, t.fence, t.exp, t.updated, t.dbu = 1, fence, now + lease_ms, now, nil
    return encode(t), t.att, delivery_suffix(t.id, t.ver, t.occ)
  end
  local fields = #commas + 1
  local lead = ''
  if fields >= 3 then lead = string.sub(rec, commas[2] + 1, (commas[3] or bar) - 1) end
  local due = field(string.sub(rec, 2, (commas[1] or bar) - 1))
  local first_five
  if fields > 5 then
    first_five = string.sub(rec, 2, commas[5])
  else
    first_five = string.sub(rec, 2, bar - 1) .. string.rep(',', 6 - fields)
  end
  local age = unless(now - (due - field(lead, 0)), 0, b36)
  local rest = string.sub(rec, commas[8] or bar)
  -- The ninth field, the attempts, opens `rest` after its comma, the version and the
  -- occurrence two and three fields on (none: their usual values).
  local att, ver, occ = 0, 1, 1
  if commas[8] then
    local a, _, v, o = string.match(rest, AFTER_EIGHTH)
    att, ver, occ = field(a, 0), field(v, 1), field(o, 1)
  end
  local id = field(string.sub(rec, commas[1] + 1, (commas[2] or bar) - 1))
  if age ~= '' or commas[8] then age = ',' .. age end
  return 'L' .. first_five .. b36(lease_ms) .. ',' .. b36(fence) .. age .. rest, att, delivery_suffix(id, ver, occ)
end

-- What a completion that deletes the task needs of `rec`: state, id, ver, fence, exp,
-- tags and group; and for a completion record att, occ and the dedupe window uq. A
-- leased record in format 2 is read from its header and the texts before its body; any
-- other is decoded.
local function lease_view(rec)
  if string.sub(rec, 1, 1) ~= 'L' then return decode(rec) end
  local due, id, lead, _, taglen, lease, fence, age, att, errlen, ver, occ, _, tgtlen, _, _, grplen, uq, pos =
    string.match(rec, HEADER_V2)
  local t = { st = 1, id = field(id), ver = field(ver, 1), fence = field(fence, 0), exp = 0, att = field(att, 0),
              occ = field(occ, 1), uq = field(uq, nil) }
  if lease ~= '' then t.exp = field(due) - field(lead, 0) + field(age, 0) + field(lease) end
  local errors = field(errlen, -1)
  if errors > 0 then pos = pos + errors end
  local tags = field(taglen, 0)
  t.tags = string.sub(rec, pos, pos + tags - 1)
  pos = pos + tags + field(tgtlen, 0)
  t.grp = string.sub(rec, pos, pos + field(grplen, 0) - 1)
  return t
end

-- The lanes, each named by the KEYS index of its due set: HANDLER (tasks without a
-- target) and TARGET. The lease script takes a lane by its code; a wake-up message
-- ends with the lane's suffix, none for the handler lane, as before there were lanes.
local HANDLER, TARGET = 1, 9
local LANE_OF_CODE = { h = HANDLER, t = TARGET }
local WAKE_SUFFIX = { [HANDLER] = '', [TARGET] = '\nt' }
local OTHER_LANE = { [HANDLER] = TARGET, [TARGET] = HANDLER }

-- The lane of a task whose record holds the target `tgt` ('': none).
local function lane_of(tgt)
  if tgt == '' then return HANDLER end
  return TARGET
end

-- Each lane's urgent set, by KEYS index. A task of priority p due at d is scored
-- (9 - p) * BAND + d there: priority p's band is [(9 - p) * BAND, (10 - p) * BAND).
-- BAND is 2^48, above every due time (Timestamp::MAX, in the year 9999, is under
-- 2^47.9), and the highest score, under 10 * 2^48, is far below 2^53: scores are
-- exact in a double. (Pass them to Redis through `int`: Lua writes a number of more
-- than 14 digits in its own way with a loss of precision.)
local URGENT = { [HANDLER] = 10, [TARGET] = 11 }
local BAND = 281474976710656

-- The first score of priority `pri`'s band.
local function band_start(pri)
  return (9 - pri) * BAND
end

-- A sharded queue's scripts tell other processes of a new earliest task of an urgent
-- band (see publish_wakeup), as the heads of a sharded queue's shards hold them.
local SHARDED = string.find(ARGV[3] or '', '\n', 1, true) ~= nil

-- The earliest task of each priority above 0 that `lane`'s urgent set holds, the
-- highest priority first, as a flat list: priority, due ms, key. One ZRANGEBYSCORE per
-- priority held, and one more (the only one for a queue without priorities).
local function urgent_heads(lane)
  local urgent, out, band = KEYS[URGENT[lane]], {}, 0
  while band < 9 do
    local first = redis.call('ZRANGEBYSCORE', urgent, int(band * BAND), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[1] == nil then break end
    local score = tonumber(first[2])
    band = math.floor(score / BAND)
    out[#out + 1] = int(9 - band)
    out[#out + 1] = int(score - band * BAND)
    out[#out + 1] = first[1]
    band = band + 1
  end
  return out
end

-- The earliest due time this script made, by lane (published once, at the end); and,
-- of a sharded queue, by lane and priority above 0, each urgent band's.
local woken = {}
local woken_band = { [HANDLER] = {}, [TARGET] = {} }

-- Each urgent band's earliest due time as this script last read it, by lane and
-- priority (nil: not read yet, or a removal may have made it later; false: empty).
local band_due = { [HANDLER] = {}, [TARGET] = {} }

-- Each lane's earliest due time as this script last read it (false: not read yet, or
-- a removal may have made it later; nil: the set was empty).
local head_due = { [HANDLER] = false, [TARGET] = false }

-- Notes that consumers of `lane` must wake for `due` (published once, at the end).
local function wake_at(lane, due)
  if woken[lane] == nil or due < woken[lane] then woken[lane] = due end
end

-- Notes, of a sharded queue, that a task of priority `pri` (above 0) due at `due` is
-- about to join `lane`'s urgent set: a wake-up if it is earlier than its band's head
-- (read once per script, lane and priority, before the task is added).
local function note_urgent(lane, pri, due)
  if not SHARDED then return end
  local known = band_due[lane]
  if known[pri] == nil then
    local start = band_start(pri)
    local head = redis.call('ZRANGEBYSCORE', KEYS[URGENT[lane]], int(start), '(' .. int(start + BAND), 'WITHSCORES',
      'LIMIT', 0, 1)
    known[pri] = (head[2] and tonumber(head[2]) - start) or false
  end
  if known[pri] == false or due < known[pri] then
    known[pri] = due
    local noted = woken_band[lane]
    if noted[pri] == nil or due < noted[pri] then noted[pri] = due end
  end
end

-- Groups: lua/common_groups.lua, which follows this file in every script, defines
-- these (and the rest of what groups need).
local count_in_group, arm_grouped, unplace_grouped

-- Schedules `key` (record `t`) at its due time in its lane (and its lane's urgent set
-- when its priority is above 0), noting a wake-up if that is earlier than the lane's
-- head. The head is read once per script and lane: arming only ever lowers it, and
-- `unplace` forgets it. A task with a group goes to its group (`arm_grouped`).
local function arm(key, t)
  if t.grp ~= '' then return arm_grouped(key, t) end
  local lane = lane_of(t.tgt)
  if head_due[lane] == false then
    local head = redis.call('ZRANGE', KEYS[lane], 0, 0, 'WITHSCORES')
    head_due[lane] = tonumber(head[2])
  end
  redis.call('ZADD', KEYS[lane], t.due, key)
  if t.pri > 0 then
    note_urgent(lane, t.pri, t.due)
    redis.call('ZADD', KEYS[URGENT[lane]], int(band_start(t.pri) + t.due), key)
  end
  if head_due[lane] == nil or t.due < head_due[lane] then
    head_due[lane] = t.due
    wake_at(lane, t.due)
  end
end

-- Publishes the wake-ups noted: "<queue>\n<due ms>", "\nt" for the target lane, then
-- the rest of ARGV[3] after the queue name (for a sharded queue "\ns<shard>\np<the
-- publishing process>"); and, of a sharded queue, one per urgent band made earlier,
-- "\nu<priority>" after the lane's suffix (such a task may not make its lane's head
-- earlier: the message tells where the most urgent due work is).
local function publish_wakeup()
  local queue, tail = nil, nil
  for _, lane in ipairs({ HANDLER, TARGET }) do
    if woken[lane] ~= nil then
      if queue == nil then queue, tail = string.match(ARGV[3], '^([^\n]*)(.*)$') end
      redis.call('PUBLISH', ARGV[2], queue .. '\n' .. int(woken[lane]) .. WAKE_SUFFIX[lane] .. tail)
    end
    for pri = 9, 1, -1 do
      local due = woken_band[lane][pri]
      if due ~= nil then
        if queue == nil then queue, tail = string.match(ARGV[3], '^([^\n]*)(.*)$') end
        redis.call('PUBLISH', ARGV[2], queue .. '\n' .. int(due) .. WAKE_SUFFIX[lane] .. '\nu' .. pri .. tail)
      end
    end
  end
end

local function each_tag(tags, f)
  if tags == '' then return end
  for tag in string.gmatch(tags, '[^\n]+') do f(tag) end
end

local function index_tags(key, tags)
  each_tag(tags, function(tag) redis.call('ZADD', KEYS[6], 0, tag .. '\n' .. key) end)
end

local function unindex_tags(key, tags)
  each_tag(tags, function(tag) redis.call('ZREM', KEYS[6], tag .. '\n' .. key) end)
end

-- Takes `key` (record `t`) out of the set of its state, and out of its group's counts.
local function unplace(key, t)
  if t.st == 0 and t.grp ~= '' then
    unplace_grouped(key, t)
  elseif t.st == 0 then
    local lane = lane_of(t.tgt)
    redis.call('ZREM', KEYS[lane], key)
    head_due[lane] = false
    if t.pri > 0 then
      redis.call('ZREM', KEYS[URGENT[lane]], key)
      band_due[lane][t.pri] = nil
    end
  elseif t.st == 1 then
    redis.call('ZREM', KEYS[2], key)
    redis.call('ZREM', KEYS[3], key)
    if t.grp ~= '' then count_in_group(t.grp, 1, -1) end
  else
    redis.call('ZREM', KEYS[4], key)
    redis.call('ZREM', KEYS[8], key)
    if t.grp ~= '' then count_in_group(t.grp, 2, -1) end
  end
end

-- Places the dead task `key` (record `t`, state 2, `updated` its time of death).
local function bury(key, t)
  redis.call('ZADD', KEYS[4], t.due, key)
  redis.call('ZADD', KEYS[8], t.updated, key)
  if t.grp ~= '' then count_in_group(t.grp, 2, 1) end
end

-- Places `key` (record `t`, in any state) in the sets of its state, as the script that
-- brought it there did: `unplace` undone. A scheduled task is armed; a leased one is in
-- `leases` by its expiry (the reaper's index) and `inflight` by its due time, and
-- counts toward its group's leased tasks; a dead one is buried.
local function place(key, t)
  if t.st == 0 then
    arm(key, t)
  elseif t.st == 1 then
    redis.call('ZADD', KEYS[2], int(t.exp), key)
    redis.call('ZADD', KEYS[3], int(t.due), key)
    if t.grp ~= '' then count_in_group(t.grp, 1, 1) end
  else
    bury(key, t)
  end
end

-- Puts the dead task `key` (record `t`) back to work, due `now`, attempts 0,
-- last_error kept, telling it with `fields` (see tell); the new record.
local function revive(key, t, now, fields)
  unplace(key, t)
  t.st, t.due, t.att, t.updated = 0, now, 0, now
  local rec = encode(t)
  redis.call('HSET', KEYS[5], key, rec)
  arm(key, t)
  tell(key, now, 'retried', 0, ',"d":' .. int(now) .. fields)
  return rec
end

-- Up to `n` members of the tags index for `tag`, after `after` (a member; '' from the
-- tag's first), with the task key of each.
local function tag_members(tag, after, n)
  local from = '[' .. tag .. '\n'
  if after ~= '' then from = '(' .. after end
  local members = redis.call('ZRANGEBYLEX', KEYS[6], from, '(' .. tag .. '\11', 'LIMIT', 0, n)
  local keys = {}
  for i, member in ipairs(members) do keys[i] = string.sub(member, #tag + 2) end
  return members, keys
end

-- Deletes the task entirely.
local function remove(key, t)
  unplace(key, t)
  unindex_tags(key, t.tags)
  redis.call('HDEL', KEYS[5], key)
end

-- Deletes the task `key`, which the index KEYS[index] lists as `member`, as cancel
-- does, if its record is there and in state `st` (nil: any state); else the index
-- disagrees with the records and only that entry goes. Whether a task was deleted.
-- Every deletion of tasks found through an index (cancel_tag, purge, sweep_dead).
local function remove_listed(index, member, key, st)
  local rec = redis.call('HGET', KEYS[5], key)
  local t = rec and decode(rec)
  if t and (st == nil or t.st == st) then
    remove(key, t)
    return true
  end
  redis.call('ZREM', KEYS[index], member)
  -- A lane's set listed a task that is not scheduled there: nor is it urgent there.
  if URGENT[index] then redis.call('ZREM', KEYS[URGENT[index]], member) end
  return false
end

-- The records of the `n` tasks whose keys are at ARGV[5], ARGV[5 + stride], … (false
-- where there is none), read with one HMGET.
local function records_at(n, stride)
  if n == 0 then return {} end
  local keys = {}
  for i = 0, n - 1 do
    keys[i + 1] = ARGV[5 + i * stride]
  end
  return redis.call('HMGET', KEYS[5], unpack(keys))
end

-- The decoded `rec` if it is the live lease named by ARGV[i..i+3] (key, id, version,
-- fence) at `now`, else nil (`rec` may be false: no such task). `read` decodes it
-- (default `decode`; `lease_view` where the caller needs only what that reads).
local function live_record(rec, i, now, read)
  if not rec then return nil end
  local t = (read or decode)(rec)
  if t.st == 1 and t.id == tonumber(ARGV[i + 1]) and t.ver == tonumber(ARGV[i + 2])
      and t.fence == tonumber(ARGV[i + 3]) and now < t.exp then
    return t
  end
  return nil
end

-- The record of a live lease (key, id, version, fence at ARGV[i..i+3]) at `now`, or nil.
local function live(i, now)
  return live_record(redis.call('HGET', KEYS[5], ARGV[i]), i, now)
end

-- a < b, byte by byte (Lua's own string order follows the server's locale).
local function bytes_before(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function head_score(zset)
  local head = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  return head[2] or ''
end
