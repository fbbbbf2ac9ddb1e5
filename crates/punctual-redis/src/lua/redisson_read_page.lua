-- Reads one page of a Redisson delayed queue's list, each member with its due time.
--
-- KEYS[1]  the list redisson_delay_queue:{NAME} (the members, in the order offered)
-- KEYS[2]  the sorted set redisson_delay_queue_timeout:{NAME} (the same members,
--          scored by due time in epoch milliseconds)
-- ARGV[1]  the index of the first member to read (0 is the head)
-- ARGV[2]  how many members to read at the most
--
-- Returns  a flat array: a member, then its score (nil when the sorted set lacks it),
--          and so on; empty past the list's end.
--
-- Read-only, and one script so that each score is the one the member had when the
-- page was read. O(ARGV[1] + ARGV[2] * log N): the page is bounded, and the importer
-- reads from the head, where its removals leave only what it could not import.
local first = tonumber(ARGV[1])
local members = redis.call('LRANGE', KEYS[1], first, first + tonumber(ARGV[2]) - 1)
local out = {}
for _, member in ipairs(members) do
  out[#out + 1] = member
  out[#out + 1] = redis.call('ZSCORE', KEYS[2], member)
end
return out
