-- Extend a lock only if it is still ours; never recreates a missing key.
-- KEYS[1]: the lock key[, KEYS[2]: its replace marker].  ARGV[1]: our
-- token.  ARGV[2]: new TTL in ms. Returns 1 when extended, 0 when the lock
-- is gone or someone else's; extended, and the replacer's "<host>:<pid>"
-- when the marker names our token.
if redis.call('get', KEYS[1]) == ARGV[1] then
  local n = redis.call('pexpire', KEYS[1], ARGV[2])
  local r = KEYS[2] and redis.call('get', KEYS[2])
  if r and string.sub(r, -40) == redis.sha1hex(ARGV[1]) then
    return string.sub(r, 1, -42)
  end
  return n
end
return 0
