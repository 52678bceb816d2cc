-- Break a lock whatever its token (see breakScript). KEYS[1]: the lock key.
-- ARGV[1]: the base of a semaphore's slot keys, built here from it.
local token = redis.call('get', KEYS[1])
if not token then
  return token
end
local out = token
local n = string.match(token, '^#slots=(%d+)$')
if n and ARGV[1] ~= '' then
  out = {token}
  for i = 1, tonumber(n) do
    local s = ARGV[1] .. ':s:' .. i
    out[i + 1] = redis.call('get', s) or ''
    redis.call('del', s)
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[1], '')
return out
