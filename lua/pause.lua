-- Pause a name (see pauseScript). KEYS[1]: the lock key; KEYS[2]: its pause
-- beside it; KEYS[3]: its waiting mark; KEYS[4]: its fair line. ARGV[1]:
-- the pause's value; ARGV[2]: ms it lasts, 0 until resumed; ARGV[3]: the
-- pause value's prefix; ARGV[4]: a semaphore marker's prefix.
local k, v, ms = KEYS[1], ARGV[1], tonumber(ARGV[2])
local cur = redis.call('get', k)
if cur and string.sub(cur, 1, #ARGV[4]) == ARGV[4] then
  return {-1, cur}
end
local old = redis.call('get', KEYS[2])
if old then
  redis.call('lrem', KEYS[4], 0, '0|0|' .. old)
end
local px = ms > 0 and {'PX', ms} or {}
redis.call('set', KEYS[2], v, unpack(px))
if not cur or string.sub(cur, 1, #ARGV[3]) == ARGV[3] then
  redis.call('set', k, v, unpack(px))
  return {1, ''}
end
redis.call('set', KEYS[3], 'p')
redis.call('lpush', KEYS[4], '0|0|' .. v)
return {0, cur}
