-- Stores a client's response in a waiting mailbox and publishes it.
-- KEYS[1] mailbox
-- ARGV[1] ttl ms, [2] channel, [3] wake message head, [4] the response,
-- [5] wake message tail
-- Returns 1 stored, 0 no mailbox, 2 answered already.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if v ~= '' then return 2 end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3] .. ARGV[4] .. ARGV[5])
return 1
