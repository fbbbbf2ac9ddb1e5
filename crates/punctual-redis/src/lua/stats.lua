-- stats: counts of one shard.
-- KEYS, ARGV[1..3]: see common.lua.
-- Returns: { scheduled, leased, dead, earliest due ms of a scheduled task or '' }
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[4]), head_score(KEYS[1]) }
