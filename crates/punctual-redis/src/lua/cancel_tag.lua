-- cancel_tag: deletes up to ARGV[5] tasks of one shard carrying tag ARGV[4].
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: how many were deleted (the caller repeats while that equals the limit).
local prefix = ARGV[4] .. '\n'
local members = redis.call('ZRANGEBYLEX', KEYS[6], '[' .. prefix, '(' .. ARGV[4] .. '\11', 'LIMIT', 0,
  tonumber(ARGV[5]))
local deleted = 0
for _, member in ipairs(members) do
  local key = string.sub(member, #prefix + 1)
  local rec = redis.call('HGET', KEYS[5], key)
  if rec then
    remove(key, decode(rec))
    deleted = deleted + 1
  else
    redis.call('ZREM', KEYS[6], member)
  end
end
return deleted
