-- break.lua: remove a lock whatever its token (breakScript, admin_list.go).
-- slots_hand.lua and key_hand.lua come before.
-- KEYS[1]: the lock key; KEYS[2]: its break marker (keys.Broken).
-- ARGV[1]: the key's line base ('' for none; its fair line and a
-- semaphore's slot keys are built from it); ARGV[2]: who breaks it,
-- "<host>:<pid>"; ARGV[3]: a pause's prefix.
-- Returns the token it removed ({marker, each slot's token or ''} for a
-- semaphore's); nil when the key was missing; a pause's value, left as it
-- is.
--
-- Like the line's check it hands a plain lock to the first live waiter of
-- the fair line (handKey; a lease mark left then reads '2', lapsed:
-- lease.go), and a semaphore's slots to the first live waiters
-- (handSlot), and publishes on the key's channel, so that waiters outside
-- the line try at once. When it removed a token it sets the marker to
-- "<ARGV[2]> <SHA-1 of each token removed>..." for the key's remaining
-- life plus a second (a minute more for a key without expiry): the
-- holder's next renewal comes within that life.
local token = redis.call('get', KEYS[1])
if not token then
  return token
end
-- A pause is no holder: it is left for its end or Resume.
if string.sub(token, 1, #ARGV[3]) == ARGV[3] then
  return token
end
local ttl = redis.call('pttl', KEYS[1])
local out = token
local sums = {redis.sha1hex(token)}
local n = string.match(token, '^#slots=(%d+)$')
if n and ARGV[1] ~= '' then
  out = {token}
  for i = 1, tonumber(n) do
    local s = ARGV[1] .. ':s:' .. i
    local v = redis.call('get', s)
    out[i + 1] = v or ''
    if v then
      sums[#sums + 1] = redis.sha1hex(v)
    end
    redis.call('del', s)
  end
end
redis.call('del', KEYS[1])
if ttl < 0 then
  ttl = 60000
end
redis.call('set', KEYS[2], ARGV[2] .. ' ' .. table.concat(sums, ' '), 'PX', ttl + 1000)
-- A semaphore's slots go to the first live waiters in line at once, as
-- its line's check hands them (handSlot, slots_hand.lua, comes before).
if n and ARGV[1] ~= '' then
  for i = 1, tonumber(n) do
    if not handSlot(KEYS[1], ARGV[1], i, token) then
      break
    end
  end
end
-- A plain lock goes to the first live waiter in the fair line at once, as
-- the release script hands it over (handKey, key_hand.lua, comes before).
-- Its holder may still run: a lease mark left says so ('2').
if not n and ARGV[1] ~= '' and handKey(KEYS[1], ARGV[1]) then
  redis.call('set', ARGV[1] .. ':lease', '2', 'XX')
end
redis.call('publish', KEYS[1], '')
return out
