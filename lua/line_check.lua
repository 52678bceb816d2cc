-- The fair line's check (see lineCheckScript). KEYS[1]: key. ARGV: the
-- line's base, our Client id, ms its liveness key and the waiting mark
-- live, ms its far key and the mark live instead (0: the liveness key),
-- then entries to look for.
local k, b, far = KEYS[1], ARGV[1], ARGV[4]
local life = ARGV[3]
if far == '0' then
  redis.call('set', b .. ':c:' .. ARGV[2], 1, 'PX', life)
else
  life = far
  redis.call('set', b .. ':f:' .. ARGV[2], 1, 'PX', life)
end
if redis.call('set', b .. ':w', 1, 'PX', life, 'GET') == 'p' then
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
    elseif id then
      local px, msg = ttl, tok
      if redis.call('exists', b .. ':c:' .. id) == 0 then
        px, msg = redis.call('exists', b .. ':f:' .. id) == 1 and math.min(ttl, 3000), '~' .. tok
      end
      if px and redis.call('spublish', b .. ':w:' .. id, msg) > 0 then
        redis.call('set', k, tok, 'PX', px)
        if msg ~= tok then
          local n = redis.pcall('lrange', b .. ':q', 0, 0)
          local nid, nt = string.match(type(n) == 'table' and n[1] or '', '^(%x+)|%d+|(.+)$')
          if nid then
            redis.call('spublish', b .. ':w:' .. nid, '?' .. nt)
          end
        end
        break
      end
    end
  end
end
-- A key in its last millisecond reads PTTL 0: say 1, so the head checks again.
local p = redis.call('pttl', k)
local out = {redis.call('get', k) or '', p == 0 and 1 or p}
for i = 5, #ARGV do
  out[#out + 1] = redis.call('lpos', b .. ':q', ARGV[i]) or -1
end
return out
