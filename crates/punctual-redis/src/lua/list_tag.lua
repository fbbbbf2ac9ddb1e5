-- list_tag: one batch of a listing by tag: up to ARGV[9] members of the tags index for
-- tag ARGV[4] in the index's (lexicographic) order, each task read once.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[5] state ('' any, '0', '1', '2'),
-- ARGV[6] cursor due ms ('' from the start), ARGV[7] cursor key, ARGV[8] the last
-- member of the previous batch ('' from the tag's first), ARGV[9] the batch size.
-- Returns: { the last member looked at, or '' when the tag's index is done; then key
--   and due ms of each task looked at that is in the state and after the cursor in
--   (due, key) order }. Records are read, not returned: the caller keeps the first
--   page of what all batches found and reads only those.
local batch = tonumber(ARGV[9])
local members, keys = tag_members(ARGV[4], ARGV[8], batch)
local out = { '' }
if #members == batch then out[1] = members[#members] end
if #keys == 0 then return out end
local records = redis.call('HMGET', KEYS[5], unpack(keys))
local cursor_due = tonumber(ARGV[6])
local state = tonumber(ARGV[5])
for i, key in ipairs(keys) do
  local rec = records[i]
  if rec then
    local st, due = state_and_due(rec)
    local after = cursor_due == nil or due > cursor_due or (due == cursor_due and bytes_before(ARGV[7], key))
    if (state == nil or st == state) and after then
      out[#out + 1] = key
      out[#out + 1] = int(due)
    end
  end
end
return out
