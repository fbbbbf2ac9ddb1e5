-- retry_dead_many: one batch of a bulk retry of one shard's dead tasks; each selected
-- task that is dead goes back to work as retry_dead.lua puts it (due now, attempts 0),
-- told 'retried'.
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] mode, ARGV[5] the batch size, ARGV[6] the
--   history's fields from the caller (who retries; see tell in common.lua):
--   'all':  ARGV[7] the bound: the dead tasks due at or before it, earliest first (the
--           retried leave the set, so each batch takes the first ones left);
--   'tag':  ARGV[7] the tag, ARGV[8] the last index member of the previous batch ('' from
--           the tag's first): the tag's tasks in the index's order;
--   'keys': ARGV[7..] the keys (at most the batch size).
-- Returns: { how many were retried, '1' when more may follow in this shard else '',
--   the last index member looked at ('tag' only) }
local now = now_ms()
local batch = tonumber(ARGV[5])
local mode = ARGV[4]
local keys, members = {}, {}
if mode == 'all' then
  keys = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[7], 'LIMIT', 0, batch)
elseif mode == 'tag' then
  members, keys = tag_members(ARGV[7], ARGV[8], batch)
else
  for i = 7, #ARGV do keys[#keys + 1] = ARGV[i] end
end
local retried = 0
-- A key given twice is retried once (its second record, read before, is stale).
local seen = {}
if #keys > 0 then
  local records = redis.call('HMGET', KEYS[5], unpack(keys))
  for i, key in ipairs(keys) do
    if records[i] and not seen[key] then
      seen[key] = true
      local t = decode(records[i])
      if t.st == 2 then
        revive(key, t, now, ARGV[6])
        retried = retried + 1
      end
    end
  end
end
save_history()
save_groups()
publish_wakeup()
local more = ''
if mode ~= 'keys' and #keys == batch then more = '1' end
return { retried, more, members[#members] or '' }
