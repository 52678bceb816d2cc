-- slots_acquire.lua: take a free slot of a semaphore (slotsAcquireScript).
-- KEYS[1]: the name's key K, holding the marker "#slots=N"; KEYS[2], when
-- fencing: its fence counter.
-- ARGV[1]: the base B; ARGV[2]: the number of slots N; ARGV[3]: our token;
-- ARGV[4]: the TTL in ms.
-- Returns {-1, K's value} when K holds a plain token or another marker;
-- {0, token, pttl} of the holder whose slot frees first when all are
-- taken; else {slot, fence or 0}, after setting the slot and the marker
-- (SET PX when missing, PEXPIRE GT otherwise).
--
-- It builds the slot keys "B:s:<i>" itself: undeclared keys, but in K's
-- Cluster slot, as B is K's hash tag. A slot already holding our token (an
-- earlier attempt that landed) is ours. The fence counter is checked
-- first, as acquire_fenced.lua does.
local k, b, n, tok, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local want = '#slots=' .. n
local m = redis.call('get', k)
if m and m ~= want then
  return {-1, m}
end
local last
if KEYS[2] then
  last = redis.call('get', KEYS[2]) or '0'
  if not string.match(last, '^%d+$') or #last > 16 or tonumber(last) >= 2^53 then
    return redis.error_reply('WRONGTYPE fence counter is not a number')
  end
end
local ks = {}
for i = 1, n do
  ks[i] = b .. ':s:' .. i
end
local v = redis.call('mget', unpack(ks))
local i
for j = 1, n do
  if v[j] == tok then
    i = j
    break
  elseif not v[j] and not i then
    i = j
  end
end
if not i then
  local bi, bt = 1, 0
  for j = 1, n do
    local t = redis.call('pttl', ks[j])
    if t > 0 and (bt == 0 or t < bt) then
      bi, bt = j, t
    end
  end
  return {0, v[bi] or '', bt}
end
if v[i] ~= tok and not redis.call('set', ks[i], tok, 'NX', 'PX', ttl) then
  return redis.error_reply('WRONGTYPE slot key ' .. ks[i] .. ' is not a string')
end
if m then
  redis.call('pexpire', k, ttl, 'GT')
else
  redis.call('set', k, want, 'PX', ttl)
end
local f = 0
if last then
  local t = redis.call('time')
  f = math.max(tonumber(last) + 1, t[1] * 1000000 + t[2])
  redis.call('set', KEYS[2], string.format('%.0f', f))
end
return {i, f}
