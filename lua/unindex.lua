-- unindex.lua: prune a prefix's index of names out of use (unindexScript,
-- admin_index.go).
-- KEYS[1]: the index; then for each name four keys: its lock key, record,
-- last success and fair line.
-- ARGV[1]: the ms a name must have been seen out of use before it goes.
-- Returns how many entries it removed.
--
-- A name with none of its four keys has its entry marked with Redis's time
-- in ms, or removed when its mark is ARGV[1] ms old or older. Checked and
-- changed in one step, so that a name taken or written after List read it
-- stays.
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = 0
for i = 2, #KEYS, 4 do
  if redis.call('exists', KEYS[i], KEYS[i + 1], KEYS[i + 2], KEYS[i + 3]) == 0 then
    local seen = redis.call('hget', KEYS[1], KEYS[i])
    if seen and not tonumber(seen) then
      redis.call('hset', KEYS[1], KEYS[i], now)
    elseif seen and now - tonumber(seen) >= tonumber(ARGV[1]) then
      n = n + redis.call('hdel', KEYS[1], KEYS[i])
    end
  end
end
return n
