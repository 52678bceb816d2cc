-- Acquire a lock and draw its fencing number in one atomic step (see
-- acquireFencedScript). KEYS[1]: lock key. KEYS[2]: fence counter, same
-- slot. ARGV[1]: token. ARGV[2]: TTL in ms. Returns the number, or false
-- when held. The counter is checked before anything is written.
local last = redis.call('get', KEYS[2]) or '0'
if not string.match(last, '^%d+$') or #last > 16 or tonumber(last) >= 2^53 then
  return redis.error_reply('WRONGTYPE fence counter is not a number')
end
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return false
end
local t = redis.call('time')
local n = math.max(tonumber(last) + 1, t[1] * 1000000 + t[2])
redis.call('set', KEYS[2], string.format('%.0f', n))
return n
