-- Release a lock only if it is still ours, in one atomic step.
-- KEYS[1]: the lock key.  ARGV[1]: our token.
-- ARGV[2]: milliseconds the key must still live (min-hold); "0" deletes it.
-- Returns 1 when the lock was ours, 0 when it was not (left untouched).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  -- A short job keeps the key until its min-hold passes, so a server whose
  -- cron fires late does not run the same job again.
  redis.call('pexpire', KEYS[1], keep)
  return 1
end
redis.call('del', KEYS[1])
-- Wake waiters at once instead of letting them poll. The channel is named
-- after the key so one ACL pattern covers both.
redis.call('publish', KEYS[1], '')
return 1
