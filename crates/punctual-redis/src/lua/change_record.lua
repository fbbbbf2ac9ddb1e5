-- change_record: writes a versioned record (a queue's, a calendar's) in its Hash if the
-- stored one is at the version the caller read (works on no shard: prepended with
-- nothing).
-- KEYS[1] the Hash of records: name -> record "<version>,..."
-- ARGV[1] the record's name
-- ARGV[2] the version read (0: there was no record)
-- ARGV[3] the new record
-- KEYS[2] the audit ZSet beside the Hash (in its slot), ARGV[4] the change's audit
-- entry, ARGV[5] its time in ms, ARGV[6] the set's parity: the entry is kept with the
-- record (audit.lua), and not when the record changed since it was read.
-- Returns: 1 written, 0 the record changed since it was read (nothing written).
local stored = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if stored then version = tonumber(string.match(stored, '^(%d+),')) end
if version ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
audit_add(KEYS[2], ARGV[4], ARGV[5], ARGV[6])
return 1
