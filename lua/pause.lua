-- pause.lua: pause a name (pauseScript, pause.go).
-- KEYS[1]: the lock key; KEYS[2]: its pause (keys.Pause); KEYS[3]: its
-- waiting mark; KEYS[4]: its fair line.
-- ARGV[1]: the pause's value; ARGV[2]: the ms it lasts (0: until resumed);
-- ARGV[3]: the pause value's prefix (pausePrefix); ARGV[4]: a semaphore
-- marker's prefix (markerPrefix).
-- Returns {1, ''} when the pause holds at once; {0, holder's token} when
-- it waits for that holder; {-1, marker} for a semaphore's name, which it
-- leaves alone.
--
-- It stores the value at the pause key (which Status reads) and, when the
-- lock key is free or paused, in the lock key, where every acquisition's
-- SET NX collides with it. With a holder, it puts the entry "0|0|<value>"
-- at the head of the fair line and sets the waiting mark to 'p' without
-- expiry: the holder's release then takes release.lua's slow path, which
-- serves the line, and the pause's entry, first in line, takes the key for
-- the rest of the pause (the line's check does the same when it finds the
-- key free: a holder that crashed). The line's check, which refreshes the
-- mark for those waiting, keeps a 'p' as it is.
local k, v, ms = KEYS[1], ARGV[1], tonumber(ARGV[2])
local cur = redis.call('get', k)
if cur and string.sub(cur, 1, #ARGV[4]) == ARGV[4] then
  return {-1, cur}
end
local old = redis.call('get', KEYS[2])
if old then
  redis.call('lrem', KEYS[4], 0, '0|0|' .. old)
end
local px = ms > 0 and {'PX', ms} or {}
redis.call('set', KEYS[2], v, unpack(px))
if not cur or string.sub(cur, 1, #ARGV[3]) == ARGV[3] then
  redis.call('set', k, v, unpack(px))
  return {1, ''}
end
redis.call('set', KEYS[3], 'p')
redis.call('lpush', KEYS[4], '0|0|' .. v)
return {0, cur}
