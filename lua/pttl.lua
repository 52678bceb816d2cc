-- Remaining time of a lock in ms if it is still ours, else -2 (as PTTL
-- reports a missing key).
-- KEYS[1]: the lock key.  ARGV[1]: our token.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pttl', KEYS[1])
end
return -2
