-- slots_release.lua: release.lua for a semaphore's slot
-- (slotsReleaseScript).
-- KEYS[1]: the name's key K.
-- ARGV[1]: our token; ARGV[2]: the ms to keep; ARGV[3]: the base B;
-- ARGV[4]: the number of slots N; ARGV[5]: the slot (0: find the slot
-- holding the token, for a clean-up); ARGV[6]: the fair line's Client id
-- or ''.
-- Returns 0 when the slot was not ours; 1 when released (or kept); 2 when
-- nobody waited; "<slot>:<token>" when it handed the slot over.
--
-- With keep it sets the slot's life to keep. Otherwise it hands the slot
-- to the first live waiter in line as release.lua hands the key (its
-- message, and the reply, read "<slot>:<token>"), or with nobody live in
-- line deletes the slot and publishes on K so that waiters outside the
-- line try; with nobody waiting (no waiting mark, see release.lua) it
-- deletes the slot and the mark in one DEL, and skips the line and the
-- message (reply 2). Unless it handed the slot over, it then sets the
-- marker's life to the longest remaining slot's (the PTTL of each), or
-- deletes it with the last: a name a semaphore used is free for other
-- users as soon as its last slot is. Slot keys and the waiting mark are
-- built from the base.
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
