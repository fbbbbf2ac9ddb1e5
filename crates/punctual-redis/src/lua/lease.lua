-- lease: hands out up to ARGV[4] due tasks of one lane of one shard, the highest
-- priority first, each priority earliest first; with groups, the groups taking turns
-- (the rule of Store::lease, see lease_groups.lua).
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] max (0: takes nothing and answers the
--   head as a lease sees it, groups included: a sharded queue's look at a shard that
--   holds groups), ARGV[5] lease length in ms, ARGV[6]
--   the lane: 'h' tasks without a target, 't' tasks with one. ARGV[7] a bound ('':
--   none) and ARGV[9] its priority ('': 0): no task of a lower priority; of that
--   priority, only tasks due at or before the bound (ms), and ARGV[8] ('' or 'k' ..
--   key): of those due at the bound, only keys before that key (bytewise); of a higher
--   priority, every due task. So a sharded queue's lease keeps the order across its
--   shards (see heads.rs). ARGV[10] '1': answer the lane's urgent heads too (a sharded
--   queue's, for heads.rs), else ''. ARGV[11] the group limit ('': none): a group with
--   that many leased tasks offers none. ARGV[12] the group rate's count ('': none) and
--   ARGV[13] its per in ms: a group with count slots counting offers none, and each
--   lease of a group's task takes a slot (group_slots.lua). ARGV[14] the history's
--   fields from the caller (who leases and on which node; see tell in common.lua) and
--   ARGV[15] the store's part of a delivery id, with its '-': each task leased is told
--   'leased' with its try (attempts + 1), its fence, its lease's expiry and its
--   delivery id.
-- Returns: { next due ms of what stays scheduled in the lane or '' (leaving out the
--   groups at the limit; of a group the rate holds, the later of its earliest due time
--   and its room), the key of the lane's head without a group or '',
--   the script's now in ms, '1' when the shard holds groups (else ''), n, then n triples: priority, due ms and key of the
--   earliest task of each priority above 0 left in the lane (with ARGV[10], else n is
--   0), then key and record of each lease, in the order leased }
-- The urgent set comes first: one ZRANGEBYSCORE finds a priority's first task, another
-- takes its due tasks, and then the lane's set gives the due tasks of priority 0. A
-- lane without urgent tasks costs one ZRANGEBYSCORE of an empty key more than it did
-- before priorities. Each other Redis command runs once for the whole batch, never
-- once per task. A queue without groups (KEYS[17] absent) costs one EXISTS more than
-- before groups, and a lease that takes tasks one HSETNX (see the turns below). A lease
-- without a group rate reads no slot.
local now = now_ms()
local lease_ms = tonumber(ARGV[5])
local lane = LANE_OF_CODE[ARGV[6]]
local scheduled, urgent = KEYS[lane], KEYS[URGENT[lane]]
local room = tonumber(ARGV[4])
-- The lowest priority taken, and how far in it: due at or before `limit`, and of those
-- due at `limit`, with `before`, only keys before it.
local floor, limit, before = 0, now, nil
if ARGV[7] ~= '' then
  floor = tonumber(ARGV[9]) or 0
  if tonumber(ARGV[7]) <= now then
    limit = tonumber(ARGV[7])
    if ARGV[8] ~= '' then before = string.sub(ARGV[8], 2) end
  end
end
-- The keys to lease, in order, and the due time of each (the inflight set's score).
local due, dues = {}, {}

-- Takes up to `room` members of `zset` scored from `start` on and due at or before
-- `cap` (a member's due time: its score less `start`); with `stop`, of those due at
-- `cap`, only keys before `stop`. How many it took.
local function take(zset, start, cap, stop)
  local from = '-inf'
  if start > 0 then from = int(start) end
  local scored = redis.call('ZRANGEBYSCORE', zset, from, int(start + cap), 'WITHSCORES', 'LIMIT', 0, room)
  local taken = 0
  for i = 1, #scored, 2 do
    local at = tonumber(scored[i + 1]) - start
    -- Members of one score come in key order: those at the bound from `stop` on end it.
    if stop ~= nil and at == cap and not bytes_before(scored[i], stop) then break end
    due[#due + 1] = scored[i]
    dues[#dues + 1] = at
    taken = taken + 1
  end
  room = room - taken
  return taken
end

-- With groups (KEYS[17] holds one), the groups of the lane with due tasks are made
-- ready: when one is, the groups and the ungrouped tasks take turns (lease_groups.lua).
local group_limit = tonumber(ARGV[11])
drop_ended_slots(now)
local grouped = redis.call('EXISTS', KEYS[NAMES]) == 1
local by_turns = false
if grouped then
  ready_groups(lane, now, group_limit)
  by_turns = redis.call('ZRANGEBYSCORE', KEYS[GROUP_ORDER[lane]], '-inf', '(' .. int(PARKED), 'LIMIT', 0, 1)[1] ~= nil
end
local probed, urgent_held = false, false
local urgent_taken = 0
if by_turns and room > 0 then
  take_by_turns(lane, now, group_limit, room, due, dues)
  -- Every entry is checked below, and the bands are read afresh.
  urgent_taken, urgent_held = #due, true
else
  -- The urgent set, priority by priority from the highest (band 0 is priority 9).
  local band = 0
  while room > 0 and band < 9 do
    local first = redis.call('ZRANGEBYSCORE', urgent, int(band * BAND), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    probed = true
    if first[1] == nil then break end
    urgent_held = true
    local score = tonumber(first[2])
    band = math.floor(score / BAND)
    local pri = 9 - band
    if pri < floor then break end
    local start = band * BAND
    local cap, stop = now, nil
    if pri == floor then cap, stop = limit, before end
    if score - start <= cap then take(urgent, start, cap, stop) end
    band = band + 1
  end
  urgent_taken = #due
  if urgent_taken > 0 then
    redis.call('ZREM', urgent, unpack(due))
    redis.call('ZREM', scheduled, unpack(due))
  end
  -- Every due urgent task is taken unless the room ran out: the lane's due tasks left
  -- are of priority 0, and its first members by rank.
  if room > 0 and floor == 0 then
    local taken = take(scheduled, 0, limit, before)
    if taken > 0 then redis.call('ZREMRANGEBYRANK', scheduled, 0, taken - 1) end
  end
  -- Every lease takes the next turn, the ungrouped tasks' (lease_groups.lua).
  if #due > 0 then note_ungrouped_turns(grouped, #due) end
end
local leases_out = {}
if #due > 0 then
  local records = redis.call('HMGET', KEYS[5], unpack(due))
  local fence = redis.call('INCRBY', KEYS[7], #due) - #due
  local exp = int(now + lease_ms)
  local head = event_head(now, 'leased', 1)
  local written, leases, inflight = {}, {}, {}
  for i, key in ipairs(due) do
    local rec = records[i]
    -- An urgent entry whose task is not scheduled (left by a punctual from before
    -- priorities, which leases without knowing the urgent sets) is dropped, not leased.
    if rec and i <= urgent_taken and string.sub(rec, 1, 1) ~= 'S' then rec = false end
    if rec then
      fence = fence + 1
      local att, delivery
      rec, att, delivery = leased(rec, fence, now, lease_ms)
      tell_event(key, head .. ',"n":' .. dec(att + 1) .. ',"l":' .. dec(fence) .. ',"u":' .. exp .. ARGV[14]
        .. ',"di":"' .. ARGV[15] .. delivery .. '"}')
      written[#written + 1] = key
      written[#written + 1] = rec
      leases[#leases + 1] = exp
      leases[#leases + 1] = key
      inflight[#inflight + 1] = int(dues[i])
      inflight[#inflight + 1] = key
      leases_out[#leases_out + 1] = key
      leases_out[#leases_out + 1] = rec
    end
  end
  if #written > 0 then
    redis.call('HSET', KEYS[5], unpack(written))
    redis.call('ZADD', KEYS[2], unpack(leases))
    redis.call('ZADD', KEYS[3], unpack(inflight))
  end
end
local head = redis.call('ZRANGE', scheduled, 0, 0, 'WITHSCORES')
local next_due, head_key = tonumber(head[2]), head[1] or ''
if grouped then
  local groups_due = groups_next_due(lane, group_limit, now)
  if groups_due and (next_due == nil or groups_due < next_due) then next_due, head_key = groups_due, '' end
end
save_slots(now)
save_history()
save_groups()
publish_wakeup()
local bands = {}
if ARGV[10] == '1' and (urgent_held or not probed) then bands = urgent_heads(lane) end
local out = { (next_due and int(next_due)) or '', head_key, int(now), (grouped and '1') or '', int(#bands / 3) }
for _, item in ipairs(bands) do out[#out + 1] = item end
for _, item in ipairs(leases_out) do out[#out + 1] = item end
return out
