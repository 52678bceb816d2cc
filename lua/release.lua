-- Release if still ours, handing the lock to the first live waiter in line
-- (see releaseScript). KEYS[1]: key. ARGV: token, ms to keep, the line's
-- base or ''[, our Client id].
local k = KEYS[1]
if redis.call('get', k) ~= ARGV[1] then
  return 0
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('pexpire', k, keep)
  return 1
end
local b = ARGV[3] or ''
while b ~= '' do
  local e = redis.pcall('lpop', b .. ':q')
  if type(e) ~= 'string' then
    break
  end
  local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
  if id and (id == ARGV[4] or redis.call('exists', b .. ':c:' .. id) == 1 and redis.call('spublish', b .. ':w:' .. id, tok) > 0) then
    redis.call('set', k, tok, 'PX', ttl)
    return tok
  end
end
redis.call('del', k)
redis.call('publish', k, '')
return 1
