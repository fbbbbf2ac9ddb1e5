-- list: up to ARGV[7] + 1 tasks of one shard after the cursor, in (due, key) order.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] state ('' any, '0', '1', '2'),
-- ARGV[5] cursor due ms ('' from the start), ARGV[6] cursor key, ARGV[7] limit.
-- Returns: key and record of each task in order (one more than the limit when more follow).
local limit = tonumber(ARGV[7])
local cursor_due = tonumber(ARGV[5])
local cursor_key = ARGV[6]

-- The index of the first member of `zset` after (cursor_due, cursor_key).
local function seek(zset)
  if cursor_due == nil then return 0 end
  local lo = redis.call('ZCOUNT', zset, '-inf', '(' .. int(cursor_due))
  local hi = redis.call('ZCOUNT', zset, '-inf', int(cursor_due))
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local member = redis.call('ZRANGE', zset, mid, mid)[1]
    if bytes_before(cursor_key, member) then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- The sets holding each state's tasks (scheduled: both lanes', and those with a group).
local sets = {
  ['0'] = { KEYS[HANDLER], KEYS[TARGET], KEYS[GROUPED] }, ['1'] = { KEYS[3] }, ['2'] = { KEYS[4] },
  [''] = { KEYS[HANDLER], KEYS[TARGET], KEYS[GROUPED], KEYS[3], KEYS[4] },
}
local found = {}
for _, zset in ipairs(sets[ARGV[4]]) do
  local from = seek(zset)
  local page = redis.call('ZRANGE', zset, from, from + limit, 'WITHSCORES')
  for i = 1, #page, 2 do
    found[#found + 1] = { key = page[i], due = tonumber(page[i + 1]) }
  end
end
table.sort(found, function(a, b)
  if a.due ~= b.due then return a.due < b.due end
  return bytes_before(a.key, b.key)
end)
local out = {}
for i = 1, math.min(#found, limit + 1) do
  local rec = redis.call('HGET', KEYS[5], found[i].key)
  if rec then
    out[#out + 1] = found[i].key
    out[#out + 1] = rec
  end
end
return out
