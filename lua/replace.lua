-- replace.lua: mark the holder of a lock as replaced, asking it to stop
-- (replaceScript, replace.go; see keys.Replaced).
-- KEYS[1]: the lock key; KEYS[2]: its replace marker; KEYS[3]: its pause
-- (pause.lua); KEYS[4]: its fair line.
-- ARGV[1]: the replacer's "<host>:<pid>"; ARGV[2]: the replacer's entry,
-- just pushed at the line's head.
-- Returns the holder's token; nil when the key is free.
--
-- Of a semaphore's holders it marks the oldest, by the time in its token
-- (the Since of Status; a token without one is the oldest, and of equals
-- the lowest slot), and none while a slot is free: the line's check hands
-- that one to the replacer. Where a pause waits for the holder's release
-- (Client.Pause), the holder is not marked and the replacer's entry goes
-- behind the pause: a paused name starts no run, a replacing one neither.
local tok = redis.call('get', KEYS[1])
if not tok then
  return tok
end
local n = string.match(tok, '^#slots=(%d+)$')
local key = KEYS[1]
if n then
  -- A semaphore: the holder of the oldest token (its time, base 36 ms,
  -- before the random part; none: oldest), unless a slot is free.
  local b, age = string.sub(KEYS[4], 1, -3)
  for i = 1, tonumber(n) do
    local s = b .. ':s:' .. i
    local v = redis.call('get', s)
    if not v then
      return tok
    end
    local t = tonumber(string.match(v, ':(%w+)%.%x+$') or '0', 36) or 0
    if not age or t < age then
      key, age = s, t
    end
  end
  tok = redis.call('get', key)
elseif string.match(tok, '^#slots=') then
  return tok
elseif redis.call('exists', KEYS[3]) == 1 then
  -- A pause waits for this holder's release: the holder is left to finish,
  -- and the replacer goes behind the pause's entry, to meet the pause then
  -- as every waiter does.
  redis.call('lrem', KEYS[4], 1, ARGV[2])
  redis.call('rpush', KEYS[4], ARGV[2])
  return tok
end
local ttl = redis.call('pttl', key)
if ttl < 0 then
  ttl = 60000
end
redis.call('set', KEYS[2], ARGV[1] .. ' ' .. redis.sha1hex(tok), 'PX', ttl + 1000)
return tok
