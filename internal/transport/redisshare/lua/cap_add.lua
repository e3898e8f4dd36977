-- Reserves a place in a capped set of sessions scored by expiry.
-- KEYS[1] the sorted set
-- ARGV[1] now ms, [2] the cap, [3] session id, [4] idle timeout ms
-- Returns 1 reserved, 0 at the cap.
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
