-- Extends a session's TTL.
-- KEYS[1] session hash, KEYS[2] GET-stream log; ARGV[1] ttl ms
-- Returns 0 when the session is gone.
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
