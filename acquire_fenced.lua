-- Acquire a lock and draw its fencing number in one atomic step, so the
-- number is strictly increasing across successful acquisitions.
-- KEYS[1]: the lock key.  KEYS[2]: its fence counter (same hash slot).
-- ARGV[1]: our token.  ARGV[2]: TTL in ms.
-- Returns the fencing number, or false when the lock is held.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return false
