-- slots_hand.lua: a part of the scripts that hand a semaphore's free slot
-- over (slots_line_check.lua, break.lua), never sent alone. It defines
-- handSlot(k, b, i, want): it pops entries off the fair line "<b>:q" until
-- one belongs to a live Client (its liveness key "<b>:c:<id>" exists and
-- its channel "<b>:w:<id>" has a subscriber, which is published
-- "<i>:<token>"), sets slot i ("<b>:s:<i>") to that token for its TTL and
-- the name's key k to the marker want for at least as long.
-- KEYS: none read; the caller passes k, b, i and want.
-- ARGV: none read.
-- Returns the token it set; nil when nobody live waits (the line is then
-- empty).
local function handSlot(k, b, i, want)
  while true do
    local e = redis.pcall('lpop', b .. ':q')
    if type(e) ~= 'string' then
      return nil
    end
    local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
    if id and redis.call('exists', b .. ':c:' .. id) == 1 and redis.call('spublish', b .. ':w:' .. id, i .. ':' .. tok) > 0 then
      redis.call('set', b .. ':s:' .. i, tok, 'PX', ttl)
      if redis.call('get', k) == want then
        redis.call('pexpire', k, ttl, 'GT')
      else
        redis.call('set', k, want, 'PX', ttl)
      end
      return tok
    end
  end
end
