-- Ends the log of a POST stream whose origin died (luascripts.go,
-- postOrphanArgs).
-- KEYS[1] session hash, KEYS[2] POST-stream log
-- ARGV[1] ttl ms, [2] maxlen, [3] seq, [4] data ('' for a bare end),
-- [5] channel, [6] wake message, [7] origin replica, [8] request id
-- Returns 1 written, 0 the log grew, 2 ended already, -1 gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last == 0 then return -1 end
local e = last[1][2]
for i = 1, #e, 2 do if e[i] == 'f' then return 2 end end
if tonumber(string.sub(last[1][1], 3)) >= tonumber(ARGV[3]) then return 0 end
local f = {'o', ARGV[7], 'r', ARGV[8]}
if ARGV[4] ~= '' then f[#f + 1] = 'd'; f[#f + 1] = ARGV[4] end
f[#f + 1] = 'f'; f[#f + 1] = '1'
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '1-' .. ARGV[3], unpack(f))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
