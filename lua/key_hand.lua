-- key_hand.lua: a part of the scripts that hand a plain lock over
-- (release.lua, line_check.lua, break.lua), never sent alone. It defines
-- handKey(k, b, cid): it pops entries "<client id>|<ttl ms>|<token>" off
-- the fair line "<b>:q" until one can take the key k, sets k to it and
-- returns it.
-- KEYS: none read; the caller passes k (the lock key), b (its line's base)
-- and cid (the releasing Client's id, or nil).
-- ARGV: none read.
-- Returns the token it set (and true for a pause); nil when nobody live
-- waits (the line is then empty).
--
-- An entry can take the key when it belongs to a live Client: the
-- releaser's own (cid), or one whose liveness key "<b>:c:<id>" exists and
-- whose sharded channel "<b>:w:<id>" has a subscriber to take the token
-- published on it; the key then gets that waiter's TTL. A Client without a
-- liveness key but with a far key "<b>:f:<id>" (its waiters far back,
-- wait_fair_far.go) was alive lately: its waiter gets the lock for at most
-- 3000 ms, published as "~<token>" so that it renews it, and the entry now
-- at the head is published "?<its token>", so that it checks the line once
-- that much has passed, should the other be frozen. An entry
-- "0|0|<pause>" that a pause put first in line (pause.lua) takes the key
-- for the rest of the pause.
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
