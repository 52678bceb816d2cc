-- pttl.lua: the remaining time of a lock if it is still ours (pttlScript).
-- KEYS[1]: the lock key.
-- ARGV[1]: our token.
-- Returns its PTTL in ms; -2 (as PTTL reports a missing key) when it is
-- not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pttl', KEYS[1])
end
return -2
