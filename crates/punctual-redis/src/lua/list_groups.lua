-- list_groups: up to ARGV[5] + 1 groups of one shard that have tasks, by name (bytewise),
-- after the name ARGV[4] ('' from the first), each with its tasks counted by state.
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { name, scheduled, leased, dead of each group in order } (one group more
--   than the limit when more follow).
local from = '-'
if ARGV[4] ~= '' then from = '(' .. ARGV[4] end
local names = redis.call('ZRANGEBYLEX', KEYS[NAMES], from, '+', 'LIMIT', 0, tonumber(ARGV[5]) + 1)
if #names == 0 then return {} end
read_groups(names)
local out = {}
for _, grp in ipairs(names) do
  local g = groups_read[grp]
  if g.stored then
    out[#out + 1] = grp
    out[#out + 1] = g[1]
    out[#out + 1] = g[2]
    out[#out + 1] = g[3]
  end
end
return out
