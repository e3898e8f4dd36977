-- Ends a session: its keys go, a tombstone stays, the end is published.
-- KEYS[1] session hash, KEYS[2] GET-stream log, KEYS[3] tombstone
-- ARGV[1] ttl ms, [2] channel, [3] message
-- Returns 1 if the hash existed.
local e = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return e
