-- Changes one field of a session hash and publishes the change
-- (luascripts.go, updateArgs).
-- KEYS[1] session hash, KEYS[2] GET-stream log
-- ARGV[1] ttl ms, [2] channel, [3] message, [4] hset|hdel|hsetv,
-- [5] field, [6] value, [7] for hsetv, the home version the change
-- was made on
-- Returns {result, home version}: result 1 changed, 0 session gone, 2
-- hsetv found another value and another home version; the home
-- version (hash field hv) after the change, 0 for a field other than
-- home.
-- A new home version is the larger of the next integer and Redis's clock
-- in microseconds: newer than any before it even where a copy that lagged
-- wrote the hash back (its hv behind) after Redis lost it. Formatted with
-- %d: Lua's own number format would round it.
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0} end
local res = 1
local prev = false
local home = ARGV[5] == 'home'
if home then prev = redis.call('HGET', KEYS[1], 'home') end
if ARGV[4] == 'hdel' then redis.call('HDEL', KEYS[1], ARGV[5])
elseif ARGV[4] == 'hsetv' then
  local cur = redis.call('HGET', KEYS[1], ARGV[5])
  if cur and cur ~= ARGV[6] and (redis.call('HGET', KEYS[1], 'hv') or '0') ~= ARGV[7] then res = 2
  else redis.call('HSET', KEYS[1], ARGV[5], ARGV[6]) end
else redis.call('HSET', KEYS[1], ARGV[5], ARGV[6]) end
local hv = 0
local msg = ARGV[3]
if home then
  if res == 1 and prev ~= ARGV[6] then
    local t = redis.call('TIME')
    hv = math.max(tonumber(redis.call('HGET', KEYS[1], 'hv') or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
    redis.call('HSET', KEYS[1], 'hfrom', prev or '', 'hbc', '0', 'hv', string.format('%d', hv))
  else
    hv = tonumber(redis.call('HGET', KEYS[1], 'hv') or '0')
  end
  -- The message is a JSON object: the version goes in before its brace.
  msg = string.sub(msg, 1, -2) .. ',"hv":' .. string.format('%d', hv) .. '}'
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if res == 1 then redis.call('PUBLISH', ARGV[2], msg) end
return {res, hv}
