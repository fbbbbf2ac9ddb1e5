-- cancel_tag: deletes up to ARGV[5] tasks of one shard carrying tag ARGV[4], each
-- told 'cancelled' at Redis' clock.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[6] the history's fields from the caller (who
--   cancels, and the tag; see tell in common.lua).
-- Applying an outbox row (a cancel by tag, in this shard): then KEYS[SHARD_KEYS + 1]
--   the shard's outbox marks, ARGV[7] the row's mark, ARGV[8] their retention, ms (see
--   row_marked in common.lua): answers -1 when the mark is there, nothing deleted;
--   else writes the mark with the batch that ends the shard's part, the one that
--   deletes fewer than ARGV[5] (where the caller stops).
-- Returns: how many were deleted (the caller repeats while that equals the limit).
local row = ARGV[7]
if row and row_marked(row) then return -1 end
local limit = tonumber(ARGV[5])
local members, keys = tag_members(ARGV[4], '', limit)
local deleted = 0
local at = nil
for i, member in ipairs(members) do
  if remove_listed(6, member, keys[i], nil) then
    deleted = deleted + 1
    at = at or clock_ms()
    tell(keys[i], at, 'cancelled', nil, ARGV[6])
  end
end
if row and deleted < limit then mark_row(row, now_ms(), tonumber(ARGV[8])) end
save_history()
save_groups()
publish_wakeup()
return deleted
