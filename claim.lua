-- Take a lock on one node of a quorum, or confirm that it is already ours
-- there: a retried acquisition, or a node that lost the key while the lock
-- kept its majority (a restart without persistence) and is being repaired.
-- KEYS[1]: the lock key.  ARGV[1]: our token.  ARGV[2]: TTL in ms.
-- Returns 1 when the key now holds our token with that TTL, 0 when it is
-- someone else's.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
