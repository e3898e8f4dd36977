-- Puts back a session Redis lost (luascripts.go, rewriteArgs).
-- KEYS[1] session hash, KEYS[2] GET-stream log, KEYS[3] tombstone
-- ARGV[1] ttl ms, [2] channel, [3] message, [4] least gseq,
-- [5] least gflushed, [6...] field/value pairs
-- Returns 1 written, 0 deleted (tombstone), 2 the hash exists.
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local exists = redis.call('EXISTS', KEYS[1]) == 1
if not exists then
  for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1]) end
end
for i, f in ipairs({'gseq', 'gflushed'}) do
  if tonumber(redis.call('HGET', KEYS[1], f) or '0') < tonumber(ARGV[3 + i]) then redis.call('HSET', KEYS[1], f, ARGV[3 + i]) end
end
if exists then return 2 end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
