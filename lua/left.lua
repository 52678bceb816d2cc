-- Note what a finished command left running (see leftScript). KEYS[1]:
-- the lock, KEYS[2]: its note. ARGV: token, note.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local t = redis.call('pttl', KEYS[1])
if t <= 0 then
  return 0
end
redis.call('set', KEYS[2], ARGV[2], 'PX', t)
return 1
