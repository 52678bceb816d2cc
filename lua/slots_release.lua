-- Release a semaphore's slot if it holds our token (see slotsReleaseScript).
-- KEYS[1]: the name's key. ARGV: token, ms to keep, base, slots, slot (0:
-- find ours), our Client id or ''. Slot keys and the waiting mark are
-- built here from the base.
local k, b, n, i = KEYS[1], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local want = '#slots=' .. n
-- The marker lives as long as the longest slot, and goes with the last.
local function settle()
  local most = 0
  for j = 1, n do
    local t = redis.call('pttl', b .. ':s:' .. j)
    if t == -1 then
      return
    end
    most = math.max(most, t)
  end
  if redis.call('get', k) == want then
    if most > 0 then
      redis.call('pexpire', k, most)
    else
      redis.call('del', k)
    end
  end
end
if i == 0 then
  for j = 1, n do
    if redis.call('get', b .. ':s:' .. j) == ARGV[1] then
      i = j
      break
    end
  end
  if i == 0 then
    return 0
  end
end
local s = b .. ':s:' .. i
if redis.call('get', s) ~= ARGV[1] then
  return 0
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('pexpire', s, keep)
  settle()
  return 1
end
-- The slot is free: the marker goes with the last slot, or lives as long
-- as the longest.
local function freed()
  local ks = {}
  for j = 1, n do
    ks[j] = b .. ':s:' .. j
  end
  if redis.call('exists', unpack(ks)) == 0 then
    if redis.call('get', k) == want then
      redis.call('del', k)
    end
  else
    settle()
  end
end
local m, gone = b .. ':w', false
if ARGV[6] == '' then
  if redis.call('del', s, m) == 1 then
    freed()
    return 2
  end
  gone = true
end
while true do
  local e = redis.pcall('lpop', b .. ':q')
  if type(e) ~= 'string' then
    break
  end
  local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
  if id and (id == ARGV[6] or redis.call('exists', b .. ':c:' .. id) == 1 and redis.call('spublish', b .. ':w:' .. id, i .. ':' .. tok) > 0) then
    redis.call('set', s, tok, 'PX', ttl)
    redis.call('pexpire', k, ttl, 'GT')
    if gone then
      redis.call('set', m, 1, 'PX', 3000)
    end
    return i .. ':' .. tok
  end
end
if not gone then
  redis.call('del', s)
end
freed()
redis.call('publish', k, '')
return 1
