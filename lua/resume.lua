-- End a pause (see resumeScript). KEYS[1]: the lock key; KEYS[2]: its pause
-- beside it; KEYS[3]: its waiting mark. ARGV[1]: the pause value's prefix;
-- ARGV[2]: ms waiters keep their mark alive.
local k = KEYS[1]
local n = redis.call('del', KEYS[2])
local cur = redis.call('get', k)
if cur and string.sub(cur, 1, #ARGV[1]) == ARGV[1] then
  n = n + redis.call('del', k)
  redis.call('publish', k, '')
end
if redis.call('pttl', KEYS[3]) == -1 then
  redis.call('pexpire', KEYS[3], ARGV[2])
end
return n
