-- Returns the epoch, writing a new one where there is none.
-- KEYS[1] epoch, KEYS[2] fresh marker
-- ARGV[1] a new epoch, [2] the fresh marker's TTL ms, [3] '1' to set it
local e = redis.call('GET', KEYS[1])
if e then return e end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
return ARGV[1]
