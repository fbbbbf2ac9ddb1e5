-- head: the earliest scheduled task of one lane of one shard, and the earliest of
-- each priority above 0 (what a sharded queue's heads hold of a shard, see heads.rs).
-- KEYS, ARGV[1..3]: see common.lua. ARGV[4] the lane: 'h' tasks without a target, 't'
--   tasks with one.
-- Returns: { due ms of the lane's earliest task or '', its key or '', n, then n
--   triples: priority, due ms and key of the earliest task of each priority above 0 }
local lane = LANE_OF_CODE[ARGV[4]]
local head = redis.call('ZRANGE', KEYS[lane], 0, 0, 'WITHSCORES')
local bands = urgent_heads(lane)
local out = { head[2] or '', head[1] or '', int(#bands / 3) }
for _, item in ipairs(bands) do out[#out + 1] = item end
return out
