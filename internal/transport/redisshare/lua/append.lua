-- Appends an event to a shared session's GET-stream log (luascripts.go,
-- appendArgs).
-- KEYS[1] session hash, KEYS[2] GET-stream log
-- ARGV[1] ttl ms, [2] maxlen, [3] data, [4] channel, [5] wake message,
-- [6] token field, [7] token, [8] home ('' for any), [9] subscription
-- field ('' for none), [10] dead home ('' for none), [11] home change message
-- (a JSON object, which gets the new home version, hash field hv)
-- Returns the seq, -1 session gone, -2 token applied already, -3 not the
-- home a broadcast needs, -4 not subscribed.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local takeover = false
if ARGV[8] ~= '' then
  local home = redis.call('HGET', KEYS[1], 'home')
  if home ~= ARGV[8] then
    if home and (ARGV[10] == '' or home ~= ARGV[10]) then return -3 end
    takeover = true
  elseif ARGV[10] ~= '' and (redis.call('HGET', KEYS[1], 'hfrom') ~= ARGV[10] or redis.call('HGET', KEYS[1], 'hbc') == '1') then
    return -3
  end
end
if ARGV[9] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[9]) == 0 then return -4 end
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[6]) or '0')
if tonumber(ARGV[7]) <= last then return -2 end
local seq = tonumber(redis.call('HGET', KEYS[1], 'gseq') or '0')
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
if top then
  local t = tonumber(string.match(top[1], '^0%-(%d+)$') or '0')
  if t > seq then seq = t end
end
seq = seq + 1
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '0-' .. seq, 'd', ARGV[3])
redis.call('HSET', KEYS[1], ARGV[6], ARGV[7], 'gseq', seq)
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'hbc', '1') end
if takeover then
  -- The new home version as update.lua makes it: newer than any before
  -- it, even over a hash written back from a copy that lagged.
  local t = redis.call('TIME')
  local hv = string.format('%d', math.max(tonumber(redis.call('HGET', KEYS[1], 'hv') or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2])))
  redis.call('HSET', KEYS[1], 'home', ARGV[8], 'hfrom', ARGV[10], 'hv', hv)
  redis.call('PUBLISH', ARGV[4], string.sub(ARGV[11], 1, -2) .. ',"hv":' .. hv .. '}')
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return seq
