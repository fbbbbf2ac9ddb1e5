-- common_groups: what groups need, after common.lua in every script (whose header
-- names the keys; keys.rs has them too). count_in_group, arm_grouped and
-- unplace_grouped are the locals common.lua declares for its arm, unplace and bury.
-- A scheduled task with a group is in KEYS[12] by due time and in its lane's
-- group set (KEYS[13], KEYS[14]) as group_member(...), where the members of one group
-- sort in lease order: the highest priority first, each in due order, then by key. So
-- a group's head is one ZRANGEBYLEX per priority it holds, and every script touches
-- only the keys it is passed. Each lane's groups with scheduled tasks there are in its
-- KEYS[15] or KEYS[16], each in one region of scores, which tells its state there:
--   ready, scored by its turn (below PARKED): it had a due task when a lease last
--     looked (a lease takes them in this order, which is the order of turns, then of
--     names: Redis orders equal scores by member);
--   parked, PARKED + its leased count: a lease found it at its limit; the end of any
--     of its leases moves it to waiting (save_groups);
--   waiting, WAITING + the earliest due time of its tasks there: a lease moves the
--     due ones to ready first.
-- Each ready group is in its lane's KEYS[20] or KEYS[21] too, scored by the earliest
-- due time of its tasks there (the ready region, in turn order, cannot tell it), so
-- a lease's next due time is exact without a look at every ready group: every script
-- that moves a group into or out of the ready region, or changes the tasks of a ready
-- one, keeps it.
-- A group's counts and turn (KEYS[18]) are read once per script, changed in
-- `groups_read`, and written back by `save_groups`, which every script that places or
-- unplaces a task calls before it ends; a group left without tasks is forgotten there,
-- its turn with it.
local GROUPED, NAMES, COUNTS, TURNS = 12, 17, 18, 19
local GROUP_SET = { [HANDLER] = 13, [TARGET] = 14 }
local GROUP_ORDER = { [HANDLER] = 15, [TARGET] = 16 }
local READY_DUE = { [HANDLER] = 20, [TARGET] = 21 }
-- 2^50 and 2^51: turns stay below 2^49, due times below 2^48; every score is exact.
local PARKED, WAITING = 1125899906842624, 2251799813685248
-- The field of KEYS[19] counting the lane's scheduled tasks with a group and a
-- priority above 0 (absent: none). While there are none, as in most queues, every
-- group's head is of priority 0, and a lease looks at a group's head only when the
-- group's turn comes (lease_groups.lua).
local GROUPED_URGENT = { [HANDLER] = 'urgent', [TARGET] = 'urgent:target' }

-- Counts `delta` more scheduled tasks with a group and a priority above 0 in `lane`.
local function count_grouped_urgent(lane, delta)
  if redis.call('HINCRBY', KEYS[TURNS], GROUPED_URGENT[lane], delta) <= 0 then
    redis.call('HDEL', KEYS[TURNS], GROUPED_URGENT[lane])
  end
end

-- The member of a task of group `grp`, priority `pri`, due `due` and key `key` in its
-- lane's group set: due times are below 2^48, so 12 hex digits keep them in order.
local function group_member(grp, pri, due, key)
  return grp .. '\n' .. (9 - pri) .. string.format('%012x', due) .. '\n' .. key
end

-- The first member of `grp` in `lane`'s group set from priority 9 - `band` down, with
-- its priority band and due time; nil when there is none.
local function group_first(lane, grp, band)
  local first = redis.call('ZRANGEBYLEX', KEYS[GROUP_SET[lane]], '[' .. grp .. '\n' .. band, '(' .. grp .. '\11',
    'LIMIT', 0, 1)[1]
  if first == nil then return nil end
  local at = #grp + 2
  return first, tonumber(string.sub(first, at, at)), tonumber(string.sub(first, at + 1, at + 12), 16)
end

-- The head of `grp` in `lane` at `now` (its due task of the highest priority, the
-- earliest): { member, key, pri, due, grp }, or nil when it has no due task there.
local function group_head(lane, grp, now)
  local band = 0
  while band <= 9 do
    local member, at_band, due = group_first(lane, grp, band)
    if member == nil then return nil end
    if due <= now then
      return { member = member, key = string.sub(member, #grp + 16), pri = 9 - at_band, due = due, grp = grp }
    end
    band = at_band + 1
  end
  return nil
end

-- The earliest due time of the tasks of `grp` in `lane` (one look per priority it
-- holds), or nil when it has none there.
local function group_earliest(lane, grp)
  local band, earliest = 0, nil
  while band <= 9 do
    local member, at_band, due = group_first(lane, grp, band)
    if member == nil then break end
    if earliest == nil or due < earliest then earliest = due end
    band = at_band + 1
  end
  return earliest
end

-- Puts `grp` in `lane`'s waiting region at its earliest due time there, or out of the
-- lane's groups when it has no task there; that time, or nil.
local function wait_group(lane, grp)
  local earliest = group_earliest(lane, grp)
  if earliest == nil then
    redis.call('ZREM', KEYS[GROUP_ORDER[lane]], grp)
  else
    redis.call('ZADD', KEYS[GROUP_ORDER[lane]], int(WAITING + earliest), grp)
  end
  return earliest
end

-- Each group this script has read: { scheduled, leased, dead, turn = …, stored = it
-- was in KEYS[18], changed = …, freed = a lease of it ended }; and those changed, in
-- order.
local groups_read, groups_changed = {}, {}

local function group_of(grp, rec)
  local g = { 0, 0, 0, turn = 0, stored = false }
  if rec then
    local s, l, d, turn = string.match(rec, '^(%-?%d+),(%-?%d+),(%-?%d+),(%-?%d+)$')
    g = { tonumber(s), tonumber(l), tonumber(d), turn = tonumber(turn), stored = true }
  end
  groups_read[grp] = g
  return g
end

-- Reads the groups `names` not read yet with one HMGET.
local function read_groups(names)
  local wanted = {}
  for _, grp in ipairs(names) do
    if groups_read[grp] == nil then wanted[#wanted + 1] = grp end
  end
  if #wanted == 0 then return end
  local recs = redis.call('HMGET', KEYS[COUNTS], unpack(wanted))
  for i, grp in ipairs(wanted) do group_of(grp, recs[i]) end
end

local function group_state(grp)
  return groups_read[grp] or group_of(grp, redis.call('HGET', KEYS[COUNTS], grp))
end

-- Counts `delta` tasks of `grp` more in state `st`.
function count_in_group(grp, st, delta)
  local g = group_state(grp)
  g[st + 1] = g[st + 1] + delta
  if st == 1 and delta < 0 then g.freed = true end
  if not g.changed then
    g.changed = true
    groups_changed[#groups_changed + 1] = grp
  end
end

-- Forgets the turn of `grp` if it has no task left, as save_groups does, but at once:
-- a later write of this script that gives it a task finds it new, at turn 0.
local function forget_if_empty(grp)
  local g = group_state(grp)
  if g[1] + g[2] + g[3] <= 0 then g.turn = 0 end
end

-- Whether `grp` may be leased from under the limit `limit` (nil: none).
local function group_open(grp, limit)
  return limit == nil or group_state(grp)[2] < limit
end

-- Writes the groups changed back: counts and turn, or nothing for a group left without
-- tasks (its turn forgotten). A group whose lease ended may have room for a lease: it
-- leaves the parked region of each lane for the waiting one, and consumers of each lane
-- where it waits are woken for its earliest task.
local function save_groups()
  if #groups_changed == 0 then return end
  local counts, gone, added = {}, {}, {}
  for _, grp in ipairs(groups_changed) do
    local g = groups_read[grp]
    if g[1] + g[2] + g[3] <= 0 then
      if g.stored then gone[#gone + 1] = grp end
      groups_read[grp] = nil
    else
      counts[#counts + 1] = grp
      counts[#counts + 1] = int(g[1]) .. ',' .. int(g[2]) .. ',' .. int(g[3]) .. ',' .. int(g.turn)
      if not g.stored then
        added[#added + 1] = 0
        added[#added + 1] = grp
      end
      if g.freed then
        for _, lane in ipairs({ HANDLER, TARGET }) do
          local score = tonumber(redis.call('ZSCORE', KEYS[GROUP_ORDER[lane]], grp))
          local earliest = nil
          if score and score >= WAITING then
            earliest = score - WAITING
          elseif score and score >= PARKED then
            earliest = wait_group(lane, grp)
          end
          if earliest then wake_at(lane, earliest) end
        end
      end
      g.stored, g.changed, g.freed = true, false, false
    end
  end
  groups_changed = {}
  if #counts > 0 then redis.call('HSET', KEYS[COUNTS], unpack(counts)) end
  if #added > 0 then redis.call('ZADD', KEYS[NAMES], unpack(added)) end
  if #gone > 0 then
    redis.call('HDEL', KEYS[COUNTS], unpack(gone))
    redis.call('ZREM', KEYS[NAMES], unpack(gone))
  end
end

-- Each lane's earliest due time among its waiting groups as this script last read it
-- (false: not read yet, or a removal may have made it later; nil: none).
local group_head_due = { [HANDLER] = false, [TARGET] = false }

-- Schedules `key` (record `t`, with a group) as `arm` does a task without one: a group
-- new to the lane waits for its task's due time, a waiting group's earliest may be
-- lowered (ZADD LT leaves a ready or parked group as it is: their scores are lower),
-- and so may a ready group's (XX: only there), and a wake-up is noted if the task is
-- earlier than every waiting group's.
function arm_grouped(key, t)
  local lane = lane_of(t.tgt)
  local order = KEYS[GROUP_ORDER[lane]]
  if group_head_due[lane] == false then
    local first = redis.call('ZRANGEBYSCORE', order, int(WAITING), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    group_head_due[lane] = first[2] and tonumber(first[2]) - WAITING
  end
  redis.call('ZADD', KEYS[GROUPED], t.due, key)
  redis.call('ZADD', KEYS[GROUP_SET[lane]], 0, group_member(t.grp, t.pri, t.due, key))
  redis.call('ZADD', order, 'LT', int(WAITING + t.due), t.grp)
  redis.call('ZADD', KEYS[READY_DUE[lane]], 'XX', 'LT', int(t.due), t.grp)
  count_in_group(t.grp, 0, 1)
  if t.pri > 0 then count_grouped_urgent(lane, 1) end
  if group_head_due[lane] == nil or t.due < group_head_due[lane] then
    group_head_due[lane] = t.due
    wake_at(lane, t.due)
  end
end

-- Takes the scheduled task `key` (record `t`, with a group) out of its sets: a group
-- left without a task in the lane leaves the lane's groups; a waiting group whose
-- earliest task this was waits for its next, and a ready one has its next noted.
function unplace_grouped(key, t)
  local lane = lane_of(t.tgt)
  local order, ready = KEYS[GROUP_ORDER[lane]], KEYS[READY_DUE[lane]]
  redis.call('ZREM', KEYS[GROUPED], key)
  redis.call('ZREM', KEYS[GROUP_SET[lane]], group_member(t.grp, t.pri, t.due, key))
  local score = tonumber(redis.call('ZSCORE', order, t.grp))
  if score and score >= WAITING then
    if score - WAITING >= t.due then wait_group(lane, t.grp) end
  elseif score and score >= PARKED then
    if group_first(lane, t.grp, 0) == nil then redis.call('ZREM', order, t.grp) end
  elseif score then
    local earliest = tonumber(redis.call('ZSCORE', ready, t.grp))
    if earliest == nil or earliest >= t.due then
      earliest = group_earliest(lane, t.grp)
      if earliest == nil then
        redis.call('ZREM', order, t.grp)
        redis.call('ZREM', ready, t.grp)
      else
        redis.call('ZADD', ready, int(earliest), t.grp)
      end
    end
  end
  group_head_due[lane] = false
  count_in_group(t.grp, 0, -1)
  if t.pri > 0 then count_grouped_urgent(lane, -1) end
end
