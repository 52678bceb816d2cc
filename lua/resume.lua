-- resume.lua: end a pause (resumeScript, pause.go).
-- KEYS: as pause.lua's.
-- ARGV[1]: the pause value's prefix; ARGV[2]: the ms waiters keep the
-- waiting mark alive, which a mark the pause set gets instead of no
-- expiry.
-- Returns how many keys it deleted.
--
-- It deletes the pause key and its entry in line, and the lock key when it
-- holds a pause (and then publishes, as a release does).
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
