-- extend.lua, and add the lock's key to its prefix's index (see
-- extendIndexScript). KEYS[1]: the lock key, KEYS[2]: the index, KEYS[3]:
-- the replace marker. ARGV[1]: our token, ARGV[2]: new TTL in ms[,
-- ARGV[3]: any, to have the server's TIME too, as extend.lua].
local r = 0
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.pcall('hset', KEYS[2], KEYS[1], '')
  r = redis.call('pexpire', KEYS[1], ARGV[2])
  local m = redis.call('get', KEYS[3])
  if m and string.sub(m, -40) == redis.sha1hex(ARGV[1]) then
    r = string.sub(m, 1, -42)
  end
end
if ARGV[3] then
  local t = redis.call('time')
  return {r, t[1], t[2]}
end
return r
