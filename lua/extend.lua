-- Extend a lock only if it is still ours; never recreates a missing key.
-- KEYS[1]: the lock key.  ARGV[1]: our token.  ARGV[2]: new TTL in ms.
-- Returns 1 when extended, 0 when the lock is gone or someone else's.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
