-- audit: keeps an audit entry in a ZSet of entries (see audit.rs), scored by its
-- sequence number: the entry's time in ms times 2048 plus the set's parity (0 the
-- queue records' set, 1 the calendars'), raised by 2 above the set's last score when
-- it would not be above it, so the numbers of one set rise and those of the two sets
-- never meet. The member is "<score>|<entry>", so two equal entries are two members.
local function audit_add(key, entry, at_ms, parity)
  local score = tonumber(at_ms) * 2048 + tonumber(parity)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] and tonumber(last[2]) >= score then score = tonumber(last[2]) + 2 end
  local seq = string.format('%.0f', score)
  redis.call('ZADD', key, seq, seq .. '|' .. entry)
end
