-- change_record: writes a versioned record (a queue's, a calendar's) in its Hash if the
-- stored one is at the version the caller read (works on no shard: prepended with
-- nothing).
-- KEYS[1] the Hash of records: name -> record "<version>,..."
-- ARGV[1] the record's name
-- ARGV[2] the version read (0: there was no record)
-- ARGV[3] the new record
-- Returns: 1 written, 0 the record changed since it was read (nothing written).
local stored = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if stored then version = tonumber(string.match(stored, '^(%d+),')) end
if version ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
