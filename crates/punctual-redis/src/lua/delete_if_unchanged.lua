-- Deletes one legacy key, but only if it still holds what the import read from it.
--
-- KEYS[1]  the key (a string with an expiry, as the import read it)
-- ARGV[1]  its value as read
-- ARGV[2]  its PEXPIRETIME as read (epoch milliseconds)
--
-- Returns  1 when the key was unchanged and is now deleted,
--          0 when its type, value or expiry changed (the key is left alone),
--         -1 when it no longer exists (it expired or was deleted meanwhile).
--
-- One key per call, O(1) plus the value's length: it never holds Redis for long, and
-- it touches only KEYS[1].
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
  return 0
end
if redis.call('PEXPIRETIME', KEYS[1]) ~= tonumber(ARGV[2]) then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
