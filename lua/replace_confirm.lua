-- replace_confirm.lua: confirm a lock that a replacer got in the fair
-- line, where a hand-over is a plain SET of its token
-- (replaceConfirmScript, replace.go).
-- KEYS[1]: the key holding our token (the lock key, or a semaphore's
-- slot); KEYS[2]: the fence counter; KEYS[3]: the replace marker.
-- ARGV[1]: our token; ARGV[2]: the TTL in ms to set again, or 0 for none;
-- ARGV[3]: '1' to draw a fencing number; ARGV[4]: "<host>:<pid> " of the
-- replacer, whose marker it deletes, or ''.
-- Returns the number (0 when none was drawn); false when the key no
-- longer holds our token.
--
-- It draws the fencing number (LockOptions.Fence) as acquire_fenced.lua
-- does, and writes, so that a WAIT after it on the same connection counts
-- the replicas that have the hand-over too (LockOptions.MinReplicas). A
-- semaphore's replacer may get a slot another holder freed: the oldest
-- holder, not yet stopped, is then left to run, hence ARGV[4]. While the
-- token holds the key nobody else draws, so the number is above the
-- replaced holder's and below the next holder's.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return false
end
if ARGV[4] ~= '' then
  local r = redis.call('get', KEYS[3])
  if r and string.sub(r, 1, #ARGV[4]) == ARGV[4] then
    redis.call('del', KEYS[3])
  end
end
local f = 0
if ARGV[3] == '1' then
  local last = redis.call('get', KEYS[2]) or '0'
  if not string.match(last, '^%d+$') or #last > 16 or tonumber(last) >= 2^53 then
    return redis.error_reply('WRONGTYPE fence counter is not a number')
  end
  local t = redis.call('time')
  f = math.max(tonumber(last) + 1, t[1] * 1000000 + t[2])
  redis.call('set', KEYS[2], string.format('%.0f', f))
end
if tonumber(ARGV[2]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return f
