-- End a pause (see resumeScript). KEYS: as pause.lua's. ARGV[1]: the pause
-- value's prefix; ARGV[2]: ms waiters keep their mark alive.
local k = KEYS[1]
local p = redis.call('get', KEYS[2])
local n = redis.call('del', KEYS[2])
if p then
  redis.call('lrem', KEYS[4], 0, '0|0|' .. p)
end
local cur = redis.call('get', k)
if cur and string.sub(cur, 1, #ARGV[1]) == ARGV[1] then
  n = n + redis.call('del', k)
  redis.call('publish', k, '')
end
if redis.call('get', KEYS[3]) == 'p' then
  redis.call('set', KEYS[3], 1, 'PX', ARGV[2])
end
return n
