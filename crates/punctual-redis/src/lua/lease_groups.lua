-- lease_groups: the part of the lease script that leases from a queue with groups
-- (between common.lua and lease.lua), by the rule of Store::lease: each group with due
-- tasks and fewer leased tasks than the limit offers its head (its due task of the
-- highest priority, the earliest), and so do the tasks without a group, as one more
-- group (a group the lease's group rate holds offers nothing, group_slots.lua); each
-- lease takes the offer of the highest priority, then of the lowest turn,
-- then the ungrouped tasks', then by group name; the one leased from takes the
-- queue's next turn and offers its next head.
-- The lane's groups (KEYS[15] or KEYS[16], see common_groups.lua) come first: the waiting
-- ones now due become ready (at most PROMOTED a lease, the earliest first), and the
-- parked ones with room under this lease's limit wait again (or become ready). Then:
-- - while the lane holds no grouped task of a priority above 0 (nearly always), every
--   group's head is of priority 0, so the ready region is already in the order of the
--   offers (turn, then name): the lease walks it a page at a time, reading a group's
--   first tasks only when the group comes, the ungrouped tasks' offer slotted in by its
--   priority and turn; a group leased from comes again after the whole region (its
--   new turn); one at its limit is parked, one without a due task waits, one without
--   a task leaves; the region is written once, at the end;
-- - otherwise every ready group's head is read, and the offers, in a binary heap,
--   are taken in order; then each group is moved as above.
-- A group the lease's rate holds (below its limit) is left where it is, ready at its
-- turn, and a lease looks at it again until it has room; one that this lease's own
-- slots come to hold stays ready at its new turn. Either way the lane's ready index
-- (KEYS[20] or KEYS[21]) follows: a group that stays ready has its earliest task's due
-- time there, one that leaves the region leaves it.
-- The next due time the lease answers is read from it and the waiting region.
-- A group's turn is the queue's, for both lanes: where it is ready in the other lane,
-- its score follows its new turn.
-- Offers: { key, pri, due, turn, grp (false: the ungrouped tasks), member (a group's
-- entry in its lane's group set) }.
-- Turns (KEYS[19]): 'last', the last turn given, and 'ungrouped', the ungrouped
-- tasks'; a group's is in its counts (KEYS[18]), 0 until its first lease and forgotten
-- with the group. While a queue has no group, only whether the ungrouped tasks' turn
-- is above 0 can tell (every group to come starts at 0, below it, and every turn to
-- come is above every turn given), so a lease there writes it once, with HSETNX
-- ('ungrouped' is never written 0: absent, it is 0).
-- Cost, without grouped urgent tasks: per group leased from, one ZRANGEBYLEX of its
-- first tasks, and its share of one HMGET, ZREM and ZADD per page or lease (and of one
-- ZADD and ZREM of the ready index); per group that falls due, one move. With them, a
-- look at the head of every ready group. Under a group rate, a look at the slots of
-- every ready group the walk reaches (read with its page), held ones included.

-- The most waiting groups one lease makes ready (bounds the script; the others, due
-- later than those, are made ready by the next lease).
local PROMOTED = 1000

-- Whether offer `a` goes before offer `b`.
local function goes_before(a, b)
  if a.pri ~= b.pri then return a.pri > b.pri end
  if a.turn ~= b.turn then return a.turn < b.turn end
  if not a.grp then return true end
  if not b.grp then return false end
  return bytes_before(a.grp, b.grp)
end

local function push(heap, offer)
  local i = #heap + 1
  heap[i] = offer
  while i > 1 do
    local parent = math.floor(i / 2)
    if not goes_before(heap[i], heap[parent]) then break end
    heap[i], heap[parent] = heap[parent], heap[i]
    i = parent
  end
end

local function pop(heap)
  local first, n = heap[1], #heap
  heap[1] = heap[n]
  heap[n] = nil
  n = n - 1
  local i = 1
  while true do
    local left, best = 2 * i, i
    if left <= n and goes_before(heap[left], heap[best]) then best = left end
    if left + 1 <= n and goes_before(heap[left + 1], heap[best]) then best = left + 1 end
    if best == i then break end
    heap[i], heap[best] = heap[best], heap[i]
    i = best
  end
  return first
end

-- Makes `names` ready in `lane`, each at its turn, with the earliest due time of its
-- tasks there (`earliest`, by index) in the lane's ready index.
local function make_ready(lane, names, earliest)
  read_groups(names)
  local scores, dues = {}, {}
  for i, grp in ipairs(names) do
    scores[#scores + 1] = int(group_state(grp).turn)
    scores[#scores + 1] = grp
    dues[#dues + 1] = int(earliest[i])
    dues[#dues + 1] = grp
  end
  if #scores > 0 then
    redis.call('ZADD', KEYS[GROUP_ORDER[lane]], unpack(scores))
    redis.call('ZADD', KEYS[READY_DUE[lane]], unpack(dues))
  end
end

-- Moves `lane`'s waiting groups now due to ready, and its parked groups with room under
-- `limit` (nil: every one) to ready or waiting.
local function ready_groups(lane, now, limit)
  local order = KEYS[GROUP_ORDER[lane]]
  local upto = '(' .. int(WAITING)
  if limit then upto = '(' .. int(PARKED + limit) end
  local ready, earliest = {}, {}
  for _, grp in ipairs(redis.call('ZRANGEBYSCORE', order, int(PARKED), upto, 'LIMIT', 0, PROMOTED)) do
    local first = wait_group(lane, grp)
    if first and first <= now then
      ready[#ready + 1] = grp
      earliest[#earliest + 1] = first
    end
  end
  local waiting = redis.call('ZRANGEBYSCORE', order, int(WAITING), int(WAITING + now), 'WITHSCORES', 'LIMIT', 0,
    PROMOTED)
  for i = 1, #waiting, 2 do
    ready[#ready + 1] = waiting[i]
    earliest[#earliest + 1] = tonumber(waiting[i + 1]) - WAITING
  end
  make_ready(lane, ready, earliest)
end

-- Whether the urgent set of the lane may still hold a due task (taking tasks never
-- makes another due).
local urgent_may_be_due = true

-- The head of the tasks of `lane` without a group at `now`, as an offer without its
-- turn, or nil: the first due task of the urgent set's highest band that has one, else
-- the lane's first due task (then of priority 0: every due urgent one is in the bands).
local function ungrouped_head(lane, now)
  local band = 0
  while urgent_may_be_due and band < 9 do
    local first = redis.call('ZRANGEBYSCORE', KEYS[URGENT[lane]], int(band * BAND), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[1] == nil then break end
    local score = tonumber(first[2])
    band = math.floor(score / BAND)
    if score - band * BAND <= now then
      return { key = first[1], pri = 9 - band, due = score - band * BAND, grp = false }
    end
    band = band + 1
  end
  urgent_may_be_due = false
  local first = redis.call('ZRANGEBYSCORE', KEYS[lane], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
  if first[1] == nil then return nil end
  return { key = first[1], pri = 0, due = tonumber(first[2]), grp = false }
end

-- One lease by turns: the state of this script's leases, and what each does.
local Turns = {}
Turns.__index = Turns

local function new_turns(lane, now, limit, room, due, dues)
  local turns = redis.call('HMGET', KEYS[TURNS], 'last', 'ungrouped')
  local self = setmetatable({
    lane = lane, now = now, limit = limit, room = room, due = due, dues = dues,
    last = tonumber(turns[1]) or 0, ungrouped_turn = tonumber(turns[2]) or 0,
    grouped_keys = {}, urgent_taken = 0, touched = {}, seen = {},
  }, Turns)
  self.loose = ungrouped_head(lane, now)
  if self.loose then self.loose.turn = self.ungrouped_turn end
  return self
end

-- Takes `offer` out of its sets and notes it leased, at the next turn.
function Turns:take(offer)
  self.last = self.last + 1
  self.room = self.room - 1
  self.due[#self.due + 1] = offer.key
  self.dues[#self.dues + 1] = offer.due
  if offer.grp then
    if self.taken_members then
      self.taken_members[#self.taken_members + 1] = offer.member
    else
      redis.call('ZREM', KEYS[GROUP_SET[self.lane]], offer.member)
    end
    self.grouped_keys[#self.grouped_keys + 1] = offer.key
    count_in_group(offer.grp, 0, -1)
    count_in_group(offer.grp, 1, 1)
    group_state(offer.grp).turn = self.last
    take_slot(offer.grp, self.now)
    if not self.seen[offer.grp] then
      self.seen[offer.grp] = true
      self.touched[#self.touched + 1] = offer.grp
    end
    if offer.pri > 0 then self.urgent_taken = self.urgent_taken + 1 end
  else
    redis.call('ZREM', KEYS[self.lane], offer.key)
    if offer.pri > 0 then redis.call('ZREM', KEYS[URGENT[self.lane]], offer.key) end
    self.ungrouped_turn = self.last
    self.loose = ungrouped_head(self.lane, self.now)
    if self.loose then self.loose.turn = self.last end
  end
end

-- Moves `grp` after a look at it: parked at its limit, else ready at its turn when
-- `head` (its next head) is there (its earliest task read for the ready index), else
-- waiting. Answers `head` if it stays ready.
function Turns:settle(grp, head)
  local order, ready = KEYS[GROUP_ORDER[self.lane]], KEYS[READY_DUE[self.lane]]
  if not group_open(grp, self.limit) then
    if head or group_first(self.lane, grp, 0) then
      redis.call('ZADD', order, int(PARKED + group_state(grp)[2]), grp)
    else
      redis.call('ZREM', order, grp)
    end
  elseif head then
    redis.call('ZADD', order, int(group_state(grp).turn), grp)
    redis.call('ZADD', ready, int(group_earliest(self.lane, grp)), grp)
    return head
  else
    wait_group(self.lane, grp)
  end
  redis.call('ZREM', ready, grp)
  return nil
end

-- Takes the ungrouped tasks' offer while it goes before a group of priority 0 and turn
-- `turn` (nil: before every group).
function Turns:take_loose_before(turn)
  while self.room > 0 and self.loose and (turn == nil or self.loose.pri > 0 or self.loose.turn <= turn) do
    self:take(self.loose)
  end
end

-- Up to `n` tasks of `grp` in `lane` after the member `after` (nil: from its first),
-- while every one there is of priority 0, in due order: { member, key, pri = 0, due,
-- grp } each.
local function group_tasks(lane, grp, after, n)
  local from = '[' .. grp .. '\n'
  if after then from = '(' .. after end
  local members = redis.call('ZRANGEBYLEX', KEYS[GROUP_SET[lane]], from, '(' .. grp .. '\11', 'LIMIT', 0, n)
  local at, tasks = #grp + 3, {}
  for i, member in ipairs(members) do
    tasks[i] = { member = member, key = string.sub(member, at + 13), pri = 0, grp = grp,
                 due = tonumber(string.sub(member, at, at + 11), 16) }
  end
  return tasks
end

-- When `grp`, open, comes in the walk below: reads its first tasks the first time
-- (into `tasks[grp]`, `next[grp]` the index of its first not taken) and takes its next
-- task if due; answers the task that follows (nil: none in the lane).
function Turns:walk_group(grp, tasks, next, per_group)
  local list = tasks[grp]
  if list == nil then
    list = group_tasks(self.lane, grp, nil, per_group)
    tasks[grp], next[grp] = list, 1
  end
  local following = list[next[grp]]
  if following and following.due <= self.now then
    self:take(following)
    next[grp] = next[grp] + 1
    if list[next[grp]] == nil then
      for _, task in ipairs(group_tasks(self.lane, grp, list[#list].member, per_group)) do list[#list + 1] = task end
    end
    following = list[next[grp]]
  end
  return following
end

-- Every group's head is of priority 0, so the ready region is the groups' offers in
-- order: it is read a page at a time and left as it is while the lease goes on (the
-- taken members leave their group set, and the groups moved move, at the end). A group
-- that comes has its first tasks read (as many as this lease may take from it); after
-- its lease, its next task is its head when it comes again, after every group of the
-- region (`again`, in the order of their new turns), or tells where it goes: waiting
-- for that task, or, with none, out of the lane's groups; or parked at its limit. A
-- group that stays ready has that task, its earliest (every task is of priority 0),
-- noted in the lane's ready index; one that leaves the region leaves the index.
function Turns:walk_ready()
  local order = KEYS[GROUP_ORDER[self.lane]]
  self.taken_members = {}
  -- tasks[grp]: its tasks read, and next[grp] the index of its first not taken;
  -- earliest[grp]: the due time of its next task, where it stays ready.
  local tasks, next, again, moved, earliest = {}, {}, {}, {}, {}
  local offset, per_group, region_done = 0, 2, false
  local page, at = {}, 1
  while self.room > 0 do
    local grp, turn
    if not region_done and at > #page then
      page = redis.call('ZRANGEBYSCORE', order, '-inf', '(' .. int(PARKED), 'WITHSCORES', 'LIMIT', offset, self.room)
      offset, at = offset + #page / 2, 1
      if #page < 2 * self.room then
        region_done = true
        -- Every ready group is in this page: each may come about room / count times.
        if #page > 0 then per_group = math.min(math.floor(self.room / (#page / 2)) + 2, 500) end
      end
      local names = {}
      for i = 1, #page, 2 do names[#names + 1] = page[i] end
      read_groups(names)
      read_slots(names)
    end
    if at <= #page then
      grp, turn = page[at], tonumber(page[at + 1])
      at = at + 2
    elseif #again > 0 then
      grp = table.remove(again, 1)
      turn = group_state(grp).turn
    else
      break
    end
    self:take_loose_before(turn)
    if self.room == 0 then break end
    -- A group the rate holds (below its limit) offers nothing and stays as it is.
    local open = group_open(grp, self.limit)
    if not (open and held_until(grp, self.now)) then
      -- At its limit: in the ready region, so with a task in the lane (not read).
      local following = true
      if open then following = self:walk_group(grp, tasks, next, per_group) end
      if following == nil then
        moved[grp] = false
      elseif not group_open(grp, self.limit) then
        moved[grp] = PARKED + group_state(grp)[2]
      elseif following.due <= self.now then
        -- It comes again after the region unless this lease's slots now hold it.
        moved[grp], earliest[grp] = group_state(grp).turn, following.due
        if not held_until(grp, self.now) then again[#again + 1] = grp end
      else
        moved[grp] = WAITING + following.due
      end
    end
  end
  local scores, gone, dues, unready = {}, {}, {}, {}
  for grp, score in pairs(moved) do
    if score then
      scores[#scores + 1] = int(score)
      scores[#scores + 1] = grp
    else
      gone[#gone + 1] = grp
    end
    if score and score < PARKED then
      dues[#dues + 1] = int(earliest[grp])
      dues[#dues + 1] = grp
    else
      unready[#unready + 1] = grp
    end
  end
  if #self.taken_members > 0 then redis.call('ZREM', KEYS[GROUP_SET[self.lane]], unpack(self.taken_members)) end
  if #scores > 0 then redis.call('ZADD', order, unpack(scores)) end
  if #gone > 0 then redis.call('ZREM', order, unpack(gone)) end
  if #dues > 0 then redis.call('ZADD', KEYS[READY_DUE[self.lane]], unpack(dues)) end
  if #unready > 0 then redis.call('ZREM', KEYS[READY_DUE[self.lane]], unpack(unready)) end
end

-- Some group's head may be of a priority above 0: every ready group's head is read and
-- the offers taken from a heap; then each group looked at is moved.
function Turns:by_heads()
  local page = redis.call('ZRANGEBYSCORE', KEYS[GROUP_ORDER[self.lane]], '-inf', '(' .. int(PARKED))
  read_groups(page)
  read_slots(page)
  -- looked[grp]: the group's head as last read (false: none); moved[grp]: to be moved.
  -- A group the rate holds (below its limit) offers nothing and stays as it is.
  local heap, looked, moved = {}, {}, {}
  for _, grp in ipairs(page) do
    local head, open = nil, group_open(grp, self.limit)
    local held = open and held_until(grp, self.now) ~= nil
    if open and not held then head = group_head(self.lane, grp, self.now) end
    looked[grp], moved[grp] = head or false, head == nil and not held
    if head then
      head.turn = group_state(grp).turn
      push(heap, head)
    end
  end
  if self.loose then push(heap, self.loose) end
  while self.room > 0 and #heap > 0 do
    local offer = pop(heap)
    self:take(offer)
    local next_head = nil
    if offer.grp then
      if group_open(offer.grp, self.limit) then next_head = group_head(self.lane, offer.grp, self.now) end
      looked[offer.grp], moved[offer.grp] = next_head or false, true
      -- Held by this lease's slots: it stays ready with that head, offering no more.
      if held_until(offer.grp, self.now) then next_head = nil end
    else
      next_head = self.loose
    end
    if next_head then
      next_head.turn = self.last
      push(heap, next_head)
    end
  end
  for _, grp in ipairs(page) do
    if moved[grp] then self:settle(grp, looked[grp] or nil) end
  end
end

-- Leases up to `room` due tasks of `lane` by turns (see above), appending each one's
-- key and due time to `due` and `dues`.
local function take_by_turns(lane, now, limit, room, due, dues)
  local turns = new_turns(lane, now, limit, room, due, dues)
  if redis.call('HEXISTS', KEYS[TURNS], GROUPED_URGENT[lane]) == 0 then
    turns:walk_ready()
    turns:take_loose_before(nil)
  else
    turns:by_heads()
  end
  if turns.urgent_taken > 0 then count_grouped_urgent(lane, -turns.urgent_taken) end
  -- A group's turn is one for both lanes: where it is ready in the other, its place
  -- moves with it (GT: a parked or waiting score is above every turn).
  local moved = {}
  for _, grp in ipairs(turns.touched) do
    moved[#moved + 1] = int(group_state(grp).turn)
    moved[#moved + 1] = grp
  end
  if #moved > 0 then redis.call('ZADD', KEYS[GROUP_ORDER[OTHER_LANE[lane]]], 'XX', 'GT', unpack(moved)) end
  if #turns.grouped_keys > 0 then redis.call('ZREM', KEYS[GROUPED], unpack(turns.grouped_keys)) end
  group_head_due[lane] = false
  redis.call('HSET', KEYS[TURNS], 'last', int(turns.last))
  if turns.ungrouped_turn > 0 then redis.call('HSET', KEYS[TURNS], 'ungrouped', int(turns.ungrouped_turn)) end
end

-- Notes that `n` leases went to the ungrouped tasks, none to a group (`grouped`: the
-- queue has groups): with groups, each took the next turn; without, see above.
local function note_ungrouped_turns(grouped, n)
  if grouped then
    local last = redis.call('HINCRBY', KEYS[TURNS], 'last', n)
    redis.call('HSET', KEYS[TURNS], 'ungrouped', last)
  elseif redis.call('HSETNX', KEYS[TURNS], 'ungrouped', 1) == 1 then
    redis.call('HSETNX', KEYS[TURNS], 'last', 1)
  end
end

-- Of the groups of the sorted set `key` scored from `from` to `to` (a group's score
-- less `base` is its earliest due time) whose leased tasks are fewer than `limit` (nil:
-- no limit), the earliest time one may be leased from at `now`: its earliest due time,
-- or for one the lease's rate holds the later of that and its room (held_until). Read
-- a page at a time, up to the first group with room (nil when there is none): a group
-- due later cannot be leased from sooner.
local function first_open(key, from, to, base, limit, now)
  if limit == nil and not group_rate then
    local first = redis.call('ZRANGEBYSCORE', key, from, to, 'WITHSCORES', 'LIMIT', 0, 1)
    return first[2] and tonumber(first[2]) - base
  end
  local offset, best = 0, nil
  while true do
    local page = redis.call('ZRANGEBYSCORE', key, from, to, 'WITHSCORES', 'LIMIT', offset, 100)
    if page[1] == nil then return best end
    local names = {}
    for i = 1, #page, 2 do names[#names + 1] = page[i] end
    if limit then read_groups(names) end
    read_slots(names)
    for i = 1, #page, 2 do
      local due = tonumber(page[i + 1]) - base
      if best and due >= best then return best end
      if group_open(page[i], limit) then
        local room = held_until(page[i], now)
        if room == nil then return due end
        if best == nil or math.max(due, room) < best then best = math.max(due, room) end
      end
    end
    offset = offset + 100
  end
end

-- The earliest time a group's task in `lane` may be leased at `now` (see first_open),
-- leaving out the groups with `limit` (nil: no limit) leased tasks, or nil: the
-- earlier of the ready groups' (their earliest tasks in the lane's ready index) and
-- the waiting groups', only those due earlier than it looked at (a parked group has
-- none with room).
local function groups_next_due(lane, limit, now)
  local ready = first_open(KEYS[READY_DUE[lane]], '-inf', '+inf', 0, limit, now)
  local to = '+inf'
  if ready then to = '(' .. int(WAITING + ready) end
  local waiting = first_open(KEYS[GROUP_ORDER[lane]], int(WAITING), to, WAITING, limit, now)
  if waiting and (ready == nil or waiting < ready) then return waiting end
  return ready
end
