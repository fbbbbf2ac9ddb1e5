-- lease_groups: the part of the lease script that leases from a queue with groups
-- (between common.lua and lease.lua), by the rule of Store::lease: each group with due
-- tasks and fewer leased tasks than the limit offers its head (its due task of the
-- highest priority, the earliest), and so do the tasks without a group, as one more
-- group; each lease takes the offer of the highest priority, then of the lowest turn,
-- then the ungrouped tasks', then by group name; the one leased from takes the
-- queue's next turn and offers its next head.
-- Offers: { key, pri, due, turn, grp (false: the ungrouped tasks), member (a group's
-- entry in its lane's group set) }, kept in a binary heap, first offer first. While
-- the lane holds no grouped task of a priority above 0, every group's head is of
-- priority 0 and its offer's place depends on its turn and name alone: offers of
-- groups are then made without their head ({ pri = 0, turn, grp }), which is looked
-- at when the offer comes first (a group without a due task then offers nothing).
-- Turns (KEYS[19]): 'last', the last turn given, and 'ungrouped', the ungrouped
-- tasks'; a group's is in its counts (KEYS[18]), 0 until its first lease and forgotten
-- with the group. While a queue has no group, only whether the ungrouped tasks' turn
-- is above 0 can tell (every group to come starts at 0, below it, and every turn to
-- come is above every turn given), so a lease there writes it once, with HSETNX
-- ('ungrouped' is never written 0: absent, it is 0).
-- Cost: one HMGET of the counts of the groups with due tasks, and with grouped tasks
-- of a priority above 0 in the lane one look (a ZRANGEBYLEX per priority held) at each
-- of them; then per lease two ZREMs and a look at the group's next head.

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

-- Moves the offer at `i` down to its place below.
local function sift_down(heap, i)
  local n = #heap
  while true do
    local left, best = 2 * i, i
    if left <= n and goes_before(heap[left], heap[best]) then best = left end
    if left + 1 <= n and goes_before(heap[left + 1], heap[best]) then best = left + 1 end
    if best == i then break end
    heap[i], heap[best] = heap[best], heap[i]
    i = best
  end
end

local function pop(heap)
  local first, n = heap[1], #heap
  heap[1] = heap[n]
  heap[n] = nil
  sift_down(heap, 1)
  return first
end

-- Whether the groups' offers are made without their heads (see above), for this lease.
local offers_without_heads = false

-- The offers of the groups with due tasks in `lane` at `now` and room under `limit`
-- (nil: no limit), as a heap.
local function group_offers(lane, now, limit)
  local names = redis.call('ZRANGEBYSCORE', KEYS[GROUP_DUE[lane]], '-inf', now)
  read_groups(names)
  offers_without_heads = redis.call('HEXISTS', KEYS[TURNS], GROUPED_URGENT[lane]) == 0
  local heap = {}
  for _, grp in ipairs(names) do
    if group_open(grp, limit) then
      if offers_without_heads then
        heap[#heap + 1] = { pri = 0, turn = group_state(grp).turn, grp = grp }
      else
        local head = group_head(lane, grp, now)
        if head then
          head.turn = group_state(grp).turn
          push(heap, head)
        end
      end
    end
  end
  for i = math.floor(#heap / 2), 1, -1 do sift_down(heap, i) end
  return heap
end

-- The offer of `grp` after its lease of turn `turn`, if it has room under `limit`: its
-- next head at `now`, or with offers without heads the group alone.
local function next_offer(lane, grp, turn, now, limit)
  if not group_open(grp, limit) then return nil end
  if offers_without_heads then return { pri = 0, turn = turn, grp = grp } end
  return group_head(lane, grp, now)
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

-- Takes up to `room` offers of `heap` by turns (the ungrouped tasks' head joining),
-- each out of its sets, its key and due time appended to `due` and `dues`.
local function take_by_turns(heap, lane, now, limit, room, due, dues)
  local turns = redis.call('HMGET', KEYS[TURNS], 'last', 'ungrouped')
  local last, ungrouped_turn = tonumber(turns[1]) or 0, tonumber(turns[2]) or 0
  local loose = ungrouped_head(lane, now)
  if loose then
    loose.turn = ungrouped_turn
    push(heap, loose)
  end
  local touched, seen, grouped_keys, urgent_taken = {}, {}, {}, 0
  while room > 0 and #heap > 0 do
    local offer = pop(heap)
    if offer.grp and offer.key == nil then
      -- An offer made without its head: the group's head now (none: nothing due).
      local head = group_head(lane, offer.grp, now)
      if head then head.turn = offer.turn end
      offer = head
    end
    if offer then
      last = last + 1
      room = room - 1
      due[#due + 1] = offer.key
      dues[#dues + 1] = offer.due
      local next_head
      if offer.grp then
        redis.call('ZREM', KEYS[GROUP_SET[lane]], offer.member)
        grouped_keys[#grouped_keys + 1] = offer.key
        count_in_group(offer.grp, 0, -1)
        count_in_group(offer.grp, 1, 1)
        group_state(offer.grp).turn = last
        if not seen[offer.grp] then
          seen[offer.grp] = true
          touched[#touched + 1] = offer.grp
        end
        if offer.pri > 0 then urgent_taken = urgent_taken + 1 end
        next_head = next_offer(lane, offer.grp, last, now, limit)
      else
        redis.call('ZREM', KEYS[lane], offer.key)
        if offer.pri > 0 then redis.call('ZREM', KEYS[URGENT[lane]], offer.key) end
        ungrouped_turn = last
        next_head = ungrouped_head(lane, now)
      end
      if next_head then
        next_head.turn = last
        push(heap, next_head)
      end
    end
  end
  if urgent_taken > 0 then count_grouped_urgent(lane, -urgent_taken) end
  if #grouped_keys > 0 then redis.call('ZREM', KEYS[GROUPED], unpack(grouped_keys)) end
  for _, grp in ipairs(touched) do refresh_group_due(lane, grp) end
  group_head_due[lane] = false
  -- 'ungrouped' is never written 0 (see note_ungrouped_turns).
  redis.call('HSET', KEYS[TURNS], 'last', int(last))
  if ungrouped_turn > 0 then redis.call('HSET', KEYS[TURNS], 'ungrouped', int(ungrouped_turn)) end
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

-- The earliest due time of the groups' tasks in `lane`, leaving out the groups with
-- `limit` (nil: no limit) leased tasks, or nil; a page of groups at a time.
local function groups_next_due(lane, limit)
  local from = 0
  while true do
    local page = redis.call('ZRANGE', KEYS[GROUP_DUE[lane]], from, from + 99, 'WITHSCORES')
    if page[1] == nil then return nil end
    if limit == nil then return tonumber(page[2]) end
    local names = {}
    for i = 1, #page, 2 do names[#names + 1] = page[i] end
    read_groups(names)
    for i = 1, #page, 2 do
      if group_open(page[i], limit) then return tonumber(page[i + 1]) end
    end
    from = from + 100
  end
end
