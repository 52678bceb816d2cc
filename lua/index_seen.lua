-- Read the entries of names in a prefix's index and the time (see
-- indexSeenScript). KEYS[1]: the index. ARGV: lock keys.
local t = redis.call('time')
local out = {t[1] * 1000 + math.floor(t[2] / 1000)}
for i = 1, #ARGV do
  out[i + 1] = redis.call('hget', KEYS[1], ARGV[i])
end
return out
