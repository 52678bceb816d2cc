-- line_check.lua: the fair line's check (lineCheckScript, wait_fair.go).
-- key_hand.lua comes before.
-- KEYS[1]: the lock key.
-- ARGV[1]: the base of its line (lineArg); ARGV[2]: the Client's id;
-- ARGV[3]: the life in ms of its liveness key and of the key's waiting
-- mark, which it refreshes both; ARGV[4]: 0, or when the Client's waiters
-- are all far back (wait_fair_far.go) the life in ms of its far key, which
-- it then refreshes with the mark instead; ARGV[5] on: entries of that
-- Client's waiters.
-- Returns {the key's holder ('' if free), its PTTL, then each entry's
-- position in the line (-1 when absent)}. The PTTL is 1, not 0, in the
-- key's last millisecond, so that the head waiter checks again rather than
-- wait for the poll.
--
-- If the key is free (its holder crashed or a min-hold ran out, so no
-- release served the line) it hands the lock to the first live waiter as
-- release.lua does (handKey), publishing to it even when that is the
-- caller, and turns the key's lease mark, if one was left, into '2'
-- (lease.go: the lease lapsed). A waiting mark 'p' (a pause's, pause.lua)
-- is kept as it is.
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
