-- extend.lua, and add the lock's key to its prefix's index (see
-- extendIndexScript). KEYS[1]: the lock key, KEYS[2]: the index, KEYS[3]:
-- the replace marker. ARGV[1]: our token, ARGV[2]: new TTL in ms.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.pcall('hset', KEYS[2], KEYS[1], '')
  local n = redis.call('pexpire', KEYS[1], ARGV[2])
  local r = redis.call('get', KEYS[3])
  if r and string.sub(r, -40) == redis.sha1hex(ARGV[1]) then
    return string.sub(r, 1, -42)
  end
  return n
end
return 0
