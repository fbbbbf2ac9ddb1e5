-- group_slots: the slots of a queue's groups under a lease's group_rate, for the lease
-- script (after common_groups.lua, before lease_groups.lua), by the rule of
-- Store::lease: each lease of a grouped task under a rate count/per takes a slot of
-- its group, at = now and until = now + per, whatever becomes of the lease; under
-- count/per a slot counts while at <= now and min(until, at + per) > now, and a group
-- with count counting slots offers no task (the reference is GroupSlots in
-- punctual-core). Slots outlive the group's tasks: they are kept apart from the
-- group's counts, which go with its last task.
--   KEYS[22] groups:slots Hash group -> its slots, "<at ms>+<until - at ms>" each,
--     separated by ' '
--   KEYS[23] groups:slots:ends ZSet group -> the latest until of its slots in KEYS[22]
--   ARGV[12] the lease's rate count ('': no rate), ARGV[13] its per in ms
-- Invariant: a group is in KEYS[22] exactly while it is in KEYS[23], scored by the
-- latest until of the slots its field holds. A slot that ended (until <= now: it
-- never counts again) may stay in its group's field until the field is written again
-- or the group's latest slot ends: each lease under a rate first drops the groups whose
-- every slot ended (at most TRIMMED, the earliest ended first; the next lease drops
-- the rest), so the slots of a queue that no rated lease reads any more stay until one
-- does.
-- Cost: a lease without a rate reads neither key and takes no slot. A lease under one
-- reads KEYS[23] once (the trim), the slots of each group it looks at (one HMGET a
-- page of groups, or one HGET), and writes the groups it took slots of once at the
-- end (one HSET, one ZADD).

local SLOTS, SLOT_ENDS = 22, 23
-- The most groups with ended slots one lease drops.
local TRIMMED = 1000

-- The lease's rate, { count = …, per = … ms }, or nil.
local group_rate = nil
if ARGV[12] ~= nil and ARGV[12] ~= '' then
  group_rate = { count = tonumber(ARGV[12]), per = tonumber(ARGV[13]) }
end

-- Each group's slots this script read, with those it took: { at, until } each; the
-- groups it took slots of, in order, and as a set.
local slots_read, slots_taken, slots_taken_set = {}, {}, {}

local function parse_slots(text)
  local slots = {}
  if text then
    for at, span in string.gmatch(text, '(%d+)%+(%d+)') do
      at = tonumber(at)
      slots[#slots + 1] = { at, at + tonumber(span) }
    end
  end
  return slots
end

-- Reads the slots of the groups `names` not read yet with one HMGET (under a rate only).
local function read_slots(names)
  if not group_rate then return end
  local wanted = {}
  for _, grp in ipairs(names) do
    if slots_read[grp] == nil then wanted[#wanted + 1] = grp end
  end
  if #wanted == 0 then return end
  local texts = redis.call('HMGET', KEYS[SLOTS], unpack(wanted))
  for i, grp in ipairs(wanted) do slots_read[grp] = parse_slots(texts[i]) end
end

local function slots_of(grp)
  local slots = slots_read[grp]
  if slots == nil then
    slots = parse_slots(redis.call('HGET', KEYS[SLOTS], grp))
    slots_read[grp] = slots
  end
  return slots
end

-- When `grp`, held by the lease's rate at `now`, has room again: the instant all but
-- count - 1 of its counting slots stopped counting (GroupSlots::room_at). nil while it
-- has room, or without a rate.
local function held_until(grp, now)
  if not group_rate then return nil end
  local per, ends = group_rate.per, {}
  for _, slot in ipairs(slots_of(grp)) do
    if slot[1] <= now then
      local ends_at = math.min(slot[2], slot[1] + per)
      if ends_at > now then ends[#ends + 1] = ends_at end
    end
  end
  if #ends < group_rate.count then return nil end
  table.sort(ends)
  return ends[#ends - group_rate.count + 1]
end

-- Takes a slot of `grp` at `now` (under a rate only): it counts at once.
local function take_slot(grp, now)
  if not group_rate then return end
  local slots = slots_of(grp)
  slots[#slots + 1] = { now, now + group_rate.per }
  if not slots_taken_set[grp] then
    slots_taken_set[grp] = true
    slots_taken[#slots_taken + 1] = grp
  end
end

-- Drops the groups whose every slot ended by `now`, at most TRIMMED (under a rate only).
local function drop_ended_slots(now)
  if not group_rate then return end
  local ended = redis.call('ZRANGEBYSCORE', KEYS[SLOT_ENDS], '-inf', int(now), 'LIMIT', 0, TRIMMED)
  if #ended > 0 then
    redis.call('HDEL', KEYS[SLOTS], unpack(ended))
    redis.call('ZREM', KEYS[SLOT_ENDS], unpack(ended))
  end
end

-- Writes the slots of the groups this script took slots of, less those ended by `now`
-- (each keeps the one it took, which ends after `now`).
local function save_slots(now)
  if #slots_taken == 0 then return end
  local fields, ends = {}, {}
  for _, grp in ipairs(slots_taken) do
    local kept, latest = {}, now
    for _, slot in ipairs(slots_read[grp]) do
      if slot[2] > now then
        kept[#kept + 1] = int(slot[1]) .. '+' .. int(slot[2] - slot[1])
        latest = math.max(latest, slot[2])
      end
    end
    fields[#fields + 1] = grp
    fields[#fields + 1] = table.concat(kept, ' ')
    ends[#ends + 1] = int(latest)
    ends[#ends + 1] = grp
  end
  redis.call('HSET', KEYS[SLOTS], unpack(fields))
  redis.call('ZADD', KEYS[SLOT_ENDS], unpack(ends))
end
