-- extend.lua, and add the lock's key to its prefix's index (see
-- extendIndexScript). KEYS[1]: the lock key, KEYS[2]: the index.
-- ARGV[1]: our token, ARGV[2]: new TTL in ms.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.pcall('hset', KEYS[2], KEYS[1], '')
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
