-- Pause a name (see pauseScript). KEYS[1]: the lock key; KEYS[2]: its pause
-- beside it; KEYS[3]: its waiting mark. ARGV[1]: the pause's value;
-- ARGV[2]: ms it lasts, 0 until resumed; ARGV[3]: the pause value's prefix;
-- ARGV[4]: a semaphore marker's prefix.
local k, v, ms = KEYS[1], ARGV[1], tonumber(ARGV[2])
local cur = redis.call('get', k)
if cur and string.sub(cur, 1, #ARGV[4]) == ARGV[4] then
  return {-1, cur}
end
local function put(key)
  if ms > 0 then
    redis.call('set', key, v, 'PX', ms)
  else
    redis.call('set', key, v)
  end
end
put(KEYS[2])
if not cur or string.sub(cur, 1, #ARGV[3]) == ARGV[3] then
  put(k)
  return {1, ''}
end
redis.call('set', KEYS[3], 1)
return {0, cur}
