-- cancel_tag: deletes up to ARGV[5] tasks of one shard carrying tag ARGV[4].
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: how many were deleted (the caller repeats while that equals the limit).
local members, keys = tag_members(ARGV[4], '', tonumber(ARGV[5]))
local deleted = 0
for i, member in ipairs(members) do
  if remove_listed(6, member, keys[i], nil) then deleted = deleted + 1 end
end
save_groups()
publish_wakeup()
return deleted
