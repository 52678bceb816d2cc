-- The fair line's check (see lineCheckScript). KEYS[1]: key. ARGV: the
-- line's base, our Client id, ms its liveness key and the waiting mark
-- live, ms its far key and the mark live instead (0: the liveness key),
-- then entries to look for. handKey comes before (key_hand.lua).
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
-- Handing on a key that expired: a lease mark left says so ('2').
if redis.call('exists', k) == 0 and handKey(k, b) then
  redis.call('set', b .. ':lease', '2', 'XX')
end
-- A key in its last millisecond reads PTTL 0: say 1, so the head checks again.
local p = redis.call('pttl', k)
local out = {redis.call('get', k) or '', p == 0 and 1 or p}
for i = 5, #ARGV do
  out[#out + 1] = redis.call('lpos', b .. ':q', ARGV[i]) or -1
end
return out
