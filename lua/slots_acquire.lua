-- Take a free slot of a semaphore (see slotsAcquireScript). KEYS[1]: the
-- name's key, holding the marker; KEYS[2], when fencing: its counter. ARGV:
-- base, slots, token, TTL in ms. Slot keys are built here from the base.
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
