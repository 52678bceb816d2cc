-- Remove stale names from a prefix's index (see unindexScript). KEYS[1]: the
-- index, then for each name its lock key, record and last success.
local n = 0
for i = 2, #KEYS, 3 do
  if redis.call('exists', KEYS[i], KEYS[i + 1], KEYS[i + 2]) == 0 then
    n = n + redis.call('srem', KEYS[1], KEYS[i])
  end
end
return n
