-- Changes one field of a session hash and publishes the change
-- (luascripts.go, updateArgs).
-- KEYS[1] session hash, KEYS[2] GET-stream log
-- ARGV[1] ttl ms, [2] channel, [3] message, [4] hset|hdel|hsetnx,
-- [5] field, [6] value
-- Returns 1 changed, 0 session gone, 2 hsetnx found another value.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local res = 1
local prev = false
if ARGV[5] == 'home' then prev = redis.call('HGET', KEYS[1], 'home') end
if ARGV[4] == 'hdel' then redis.call('HDEL', KEYS[1], ARGV[5])
elseif ARGV[4] == 'hsetnx' then
  if redis.call('HSETNX', KEYS[1], ARGV[5], ARGV[6]) == 0 and redis.call('HGET', KEYS[1], ARGV[5]) ~= ARGV[6] then res = 2 end
else redis.call('HSET', KEYS[1], ARGV[5], ARGV[6]) end
if ARGV[5] == 'home' and res == 1 and prev ~= ARGV[6] then
  redis.call('HSET', KEYS[1], 'hfrom', prev or '', 'hbc', '0')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if res == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return res
