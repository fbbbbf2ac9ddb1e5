-- cancel_tag: deletes up to ARGV[5] tasks of one shard carrying tag ARGV[4].
-- KEYS, ARGV[1..3]: see common.lua.
-- Applying an outbox row (a cancel by tag, in this shard): then KEYS[SHARD_KEYS + 1]
--   the shard's outbox marks, ARGV[6] the row's mark, ARGV[7] their retention, ms (see
--   row_marked in common.lua): answers -1 when the mark is there, nothing deleted;
--   else writes the mark with the batch that ends the shard's part, the one that
--   deletes fewer than ARGV[5] (where the caller stops).
-- Returns: how many were deleted (the caller repeats while that equals the limit).
local row = ARGV[6]
if row and row_marked(row) then return -1 end
local limit = tonumber(ARGV[5])
local members, keys = tag_members(ARGV[4], '', limit)
local deleted = 0
for i, member in ipairs(members) do
  if remove_listed(6, member, keys[i], nil) then deleted = deleted + 1 end
end
if row and deleted < limit then mark_row(row, now_ms(), tonumber(ARGV[7])) end
save_groups()
publish_wakeup()
return deleted
