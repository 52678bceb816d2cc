-- Release if still ours; when the waiting mark says someone waits, hand the
-- lock to the first live waiter in line (see releaseScript). KEYS[1]: key.
-- ARGV: token, the waiting mark or ''[, ms to keep[, our Client id, '*' or '']].
local k, m, keep, cid = KEYS[1], ARGV[2], ARGV[3], ARGV[4] or ''
if redis.call('get', k) ~= ARGV[1] then
  return 0
end
if keep and tonumber(keep) > 0 then
  redis.call('pexpire', k, keep)
  return 1
end
local gone = false
if m ~= '' and cid == '' then
  if redis.call('del', k, m) == 1 then
    return 2
  end
  gone = true
end
if m ~= '' then
  local b = string.sub(m, 1, -3)
  while true do
    local e = redis.pcall('lpop', b .. ':q')
    if type(e) ~= 'string' then
      break
    end
    local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
    local u = id == '0' and tonumber(string.match(tok, '^[^|]*|[^|]*|%d+|(%d+)|'))
    local px, msg = ttl, tok
    if id and not u and id ~= cid and redis.call('exists', b .. ':c:' .. id) == 0 then
      px, msg = redis.call('exists', b .. ':f:' .. id) == 1 and math.min(ttl, 3000), '~' .. tok
    end
    if u then
      local t = redis.call('time')
      u = u > 0 and u - (t[1] * 1000 + math.floor(t[2] / 1000))
      if not u or u > 0 then
        redis.call('set', k, tok, unpack(u and {'PX', u} or {}))
        redis.call('publish', k, '')
        return 1
      end
    elseif id and px and (id == cid or redis.call('spublish', b .. ':w:' .. id, msg) > 0) then
      redis.call('set', k, tok, 'PX', px)
      if msg ~= tok then
        local n = redis.pcall('lrange', b .. ':q', 0, 0)
        local nid, nt = string.match(type(n) == 'table' and n[1] or '', '^(%x+)|%d+|(.+)$')
        if nid then
          redis.call('spublish', b .. ':w:' .. nid, '?' .. nt)
        end
      end
      if gone then
        redis.call('set', m, 1, 'PX', 3000)
      end
      return tok
    end
  end
end
if not gone then
  redis.call('del', k)
end
redis.call('publish', k, '')
return 1
