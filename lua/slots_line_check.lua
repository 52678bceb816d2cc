-- slots_line_check.lua: the fair line's check for a semaphore
-- (slotsLineCheckScript). slots_hand.lua comes before.
-- KEYS[1]: the name's key K.
-- ARGV[1]: its base B; ARGV[2]: the number of slots N; ARGV[3]: the
-- Client's id; ARGV[4]: the life in ms of its liveness key and of the
-- waiting mark, both refreshed; ARGV[5] on: entries of its waiters.
-- Returns {the holder whose slot frees first ('' if none), its PTTL, then
-- for each entry its position, -1 when absent, or "<slot>:<token>" when
-- it holds a slot}; {-1, K's value} when K holds a plain token or another
-- marker.
--
-- It hands each free slot to the first live waiter in line (handSlot; the
-- message carries "<slot>:<token>"). Slot and line keys are built from the
-- base.
local k, b, n = KEYS[1], ARGV[1], tonumber(ARGV[2])
redis.call('set', b .. ':c:' .. ARGV[3], 1, 'PX', ARGV[4])
redis.call('set', b .. ':w', 1, 'PX', ARGV[4])
local want = '#slots=' .. n
local m = redis.call('get', k)
if m and m ~= want then
  return {-1, m}
end
local ks = {}
for i = 1, n do
  ks[i] = b .. ':s:' .. i
end
local v = redis.call('mget', unpack(ks))
for i = 1, n do
  if not v[i] then
    v[i] = handSlot(k, b, i, want)
    if not v[i] then
      break -- nobody live in line
    end
  end
end
local holder, pttl = '', 0
for i = 1, n do
  local t = v[i] and redis.call('pttl', ks[i]) or -2
  if t == 0 then
    t = 1 -- in its last millisecond: the head checks again
  end
  if t > 0 and (pttl == 0 or t < pttl) then
    holder, pttl = v[i], t
  end
end
local out = {holder, pttl}
for j = 5, #ARGV do
  local r = redis.call('lpos', b .. ':q', ARGV[j]) or -1
  local tok = string.match(ARGV[j], '^%x+|%d+|(.+)$')
  for i = 1, n do
    if v[i] == tok then
      r = i .. ':' .. tok
    end
  end
  out[#out + 1] = r
end
return out
