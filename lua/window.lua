-- window.lua: read a lock's once-per marker and the server's TIME in one
-- step (windowScript, onceper.go).
-- KEYS[1]: the marker (keys.Window).
-- ARGV: none.
-- Returns {seconds, microseconds, the marker or nil}.
--
-- The window a run belongs to is taken from that clock, the one every host
-- shares, so hosts whose clocks disagree by seconds still agree on the
-- window.
local t = redis.call('time')
return {t[1], t[2], redis.call('get', KEYS[1])}
