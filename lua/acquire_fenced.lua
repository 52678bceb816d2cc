-- acquire_fenced.lua: take a lock and draw its fencing number in one
-- atomic step (acquireFencedScript).
-- KEYS[1]: the lock key; KEYS[2]: its fence counter, in the same slot.
-- ARGV[1]: our token; ARGV[2]: the TTL in ms.
-- Returns the number; false when the lock is held, which draws nothing.
--
-- The number is max(counter+1, the server's TIME in microseconds), and is
-- stored back as the counter. So it strictly increases on one server, and
-- it keeps increasing when the counter is lost, by a restart without
-- persistence or a failover to a replica that missed the last draws, as
-- long as the new server's clock is not behind the old one's by more than
-- the time between the last draw there and the next one here.
-- Microseconds since 1970 stay below 2^53 (until the year 2255), so Lua's
-- doubles hold them exactly; %.0f writes them without an exponent.
--
-- The counter is checked before anything is written: a counter that is
-- not a decimal integer below 2^53 (another program's key) fails the
-- script with a WRONGTYPE error, as a counter of another type already does
-- at its GET, and leaves the lock free.
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
