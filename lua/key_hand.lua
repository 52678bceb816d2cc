-- handKey (see keyHand): hand the plain lock k to the first live waiter in
-- its fair line (base b), the releasing Client's own (cid) counted live, or
-- to a pause waiting at its head; the token it set (and true for a pause),
-- nil when nobody live waits (the line is then empty).
local function handKey(k, b, cid)
  while true do
    local e = redis.pcall('lpop', b .. ':q')
    if type(e) ~= 'string' then
      return nil
    end
    local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
    -- A pending pause (id 0) goes in for the rest of its life, if any.
    local u = id == '0' and tonumber(string.match(tok, '^[^|]*|[^|]*|%d+|(%d+)|'))
    if u then
      local t = redis.call('time')
      u = u > 0 and u - (t[1] * 1000 + math.floor(t[2] / 1000))
      if not u or u > 0 then
        redis.call('set', k, tok, unpack(u and {'PX', u} or {}))
        return tok, true
      end
    elseif id then
      -- A far waiter (its far key, no liveness key) for 3s, told to renew,
      -- and the next at the head told to check once that has passed.
      local px, msg = ttl, tok
      if id ~= cid and redis.call('exists', b .. ':c:' .. id) == 0 then
        px, msg = redis.call('exists', b .. ':f:' .. id) == 1 and math.min(ttl, 3000), '~' .. tok
      end
      if px and (id == cid or redis.call('spublish', b .. ':w:' .. id, msg) > 0) then
        redis.call('set', k, tok, 'PX', px)
        if msg ~= tok then
          local n = redis.pcall('lrange', b .. ':q', 0, 0)
          local nid, nt = string.match(type(n) == 'table' and n[1] or '', '^(%x+)|%d+|(.+)$')
          if nid then
            redis.call('spublish', b .. ':w:' .. nid, '?' .. nt)
          end
        end
        return tok
      end
    end
  end
end
