-- left.lua: note what a finished command left running, if the lock is
-- still ours, for the lock's remaining time (leftScript).
-- KEYS[1]: the lock key; KEYS[2]: its leftovers note.
-- ARGV[1]: our token; ARGV[2]: the note.
-- Returns 1 when stored, 0 when the lock is not ours (or has no expiry
-- left).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local t = redis.call('pttl', KEYS[1])
if t <= 0 then
  return 0
end
redis.call('set', KEYS[2], ARGV[2], 'PX', t)
return 1
