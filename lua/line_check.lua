-- The fair line's check (see lineCheckScript). KEYS[1]: key. ARGV: the
-- line's base, our Client id, ms its liveness key and the waiting mark
-- live, then entries to look for.
local k, b = KEYS[1], ARGV[1]
redis.call('set', b .. ':c:' .. ARGV[2], 1, 'PX', ARGV[3])
if redis.call('set', b .. ':w', 1, 'PX', ARGV[3], 'GET') == 'p' then
  redis.call('set', b .. ':w', 'p')
end
if redis.call('exists', k) == 0 then
  while true do
    local e = redis.call('lpop', b .. ':q')
    if not e then
      break
    end
    local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
    local u = id == '0' and tonumber(string.match(tok, '^[^|]*|[^|]*|%d+|(%d+)|'))
    if u then
      local t = redis.call('time')
      u = u > 0 and u - (t[1] * 1000 + math.floor(t[2] / 1000))
      if not u or u > 0 then
        redis.call('set', k, tok, unpack(u and {'PX', u} or {}))
        break
      end
    elseif id and redis.call('exists', b .. ':c:' .. id) == 1 and redis.call('spublish', b .. ':w:' .. id, tok) > 0 then
      redis.call('set', k, tok, 'PX', ttl)
      break
    end
  end
end
-- A key in its last millisecond reads PTTL 0: say 1, so the head checks again.
local p = redis.call('pttl', k)
local out = {redis.call('get', k) or '', p == 0 and 1 or p}
for i = 4, #ARGV do
  out[#out + 1] = redis.call('lpos', b .. ':q', ARGV[i]) or -1
end
return out
