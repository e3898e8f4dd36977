-- Opens or extends the mailbox of a server-to-client request and returns
-- what it holds ('' while nothing came).
-- KEYS[1] mailbox; ARGV[1] ttl ms
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], '', 'PX', ARGV[1])
  return ''
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return v
