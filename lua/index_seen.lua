-- index_seen.lua: read the entries of names in a prefix's index, with the
-- time (indexSeenScript, admin_index_cluster.go).
-- KEYS[1]: the index.
-- ARGV: lock keys.
-- Returns {Redis's time in ms, then each key's entry or nil}: what the
-- entries were before List looks at the names' keys, by the clock that
-- marked them.
local t = redis.call('time')
local out = {t[1] * 1000 + math.floor(t[2] / 1000)}
for i = 1, #ARGV do
  out[i + 1] = redis.call('hget', KEYS[1], ARGV[i])
end
return out
