-- Appends an event of a POST stream (luascripts.go, postAppendArgs).
-- KEYS[1] session hash, KEYS[2] POST-stream log
-- ARGV[1] ttl ms, [2] maxlen, [3] seq, [4] data ('' for the end without a
-- response), [5] final ('1' or ''), [6] channel, [7] wake message,
-- [8] origin replica, [9] request id
-- Returns 1 appended, 0 appended already or ended, -1 session gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local seq = tonumber(ARGV[3])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 and tonumber(string.sub(last[1][1], 3)) >= seq then return 0 end
if #last > 0 then
  local e = last[1][2]
  for i = 1, #e, 2 do if e[i] == 'f' then return 0 end end
end
if #last == 0 then redis.call('XADD', KEYS[2], '1-0', 'o', ARGV[8], 'r', ARGV[9]) end
local f = {'o', ARGV[8], 'r', ARGV[9]}
if ARGV[4] ~= '' then f[#f + 1] = 'd'; f[#f + 1] = ARGV[4] end
if ARGV[5] == '1' then f[#f + 1] = 'f'; f[#f + 1] = '1' end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '1-' .. ARGV[3], unpack(f))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
