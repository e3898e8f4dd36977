-- Raises gflushed, where a fresh GET on any replica starts.
-- KEYS[1] session hash; ARGV[1] seq. Returns 0 if the session is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local f = tonumber(redis.call('HGET', KEYS[1], 'gflushed') or '0')
if tonumber(ARGV[1]) > f then redis.call('HSET', KEYS[1], 'gflushed', ARGV[1]) end
return 1
