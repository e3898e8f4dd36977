-- Opens the Redis log of a POST stream (luascripts.go, postOpen).
-- KEYS[1] session hash, KEYS[2] POST-stream log
-- ARGV[1] ttl ms, [2] origin replica, [3] request id
-- Returns 1 this origin's, 0 another replica's, -1 session gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
if #first == 0 then
  redis.call('XADD', KEYS[2], '1-0', 'o', ARGV[2], 'r', ARGV[3])
elseif first[1][2][1] ~= 'o' or first[1][2][2] ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
