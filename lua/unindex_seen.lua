-- unindex_seen.lua: prune a prefix's index of names a client found out of
-- use (unindexSeenScript, admin_index_cluster.go).
-- KEYS[1]: the index.
-- ARGV[1]: the ms a name must have been seen out of use before it goes;
-- then pairs of a lock key and the entry the client saw before it looked
-- at the name's keys.
-- Returns how many entries it removed.
--
-- Each entry still as it was seen is marked with Redis's time in ms, or
-- removed when its mark is ARGV[1] ms old or older: a name written since
-- (a write clears the mark) stays.
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = 0
for i = 2, #ARGV, 2 do
  local seen = redis.call('hget', KEYS[1], ARGV[i])
  if seen == ARGV[i + 1] then
    if not tonumber(seen) then
      redis.call('hset', KEYS[1], ARGV[i], now)
    elseif now - tonumber(seen) >= tonumber(ARGV[1]) then
      n = n + redis.call('hdel', KEYS[1], ARGV[i])
    end
  end
end
return n
