-- Break a lock whatever its token (see breakScript). KEYS[1]: the lock key.
local token = redis.call('get', KEYS[1])
if token then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[1], '')
end
return token
