-- claim.lua: take a lock on one node of a quorum, or confirm that it is
-- already ours there: a retried acquisition, or a node that lost the key
-- while the lock kept its majority (a restart without persistence) and is
-- being repaired (claimScript).
-- KEYS[1]: the lock key.
-- ARGV[1]: our token; ARGV[2]: the TTL in ms.
-- Returns 1 when the key now holds our token with that TTL. When it is
-- someone else's: minus the ms until it can be claimed (its PTTL + 1, as
-- Redis expires a key only after its last ms), or 0 without an expiry.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
local ms = redis.call('pttl', KEYS[1])
if ms < 0 then
  return 0
end
return -(ms + 1)
