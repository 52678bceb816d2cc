-- Ask the holder of a plain lock to stop (see replaceScript). KEYS[1]: the
-- lock key, KEYS[2]: its replace marker, KEYS[3]: its pause (pause.lua),
-- KEYS[4]: the line. ARGV[1]: who replaces it, "<host>:<pid>"; ARGV[2]: the
-- replacer's entry, just pushed at the line's head. Returns the holder's
-- token, or nil when the key is free.
local tok = redis.call('get', KEYS[1])
if not tok or string.match(tok, '^#slots=') then
  return tok
end
-- A pause waits for this holder's release: the holder is left to finish,
-- and the replacer goes behind the pause's entry, to meet the pause then
-- as every waiter does.
if redis.call('exists', KEYS[3]) == 1 then
  redis.call('lrem', KEYS[4], 1, ARGV[2])
  redis.call('rpush', KEYS[4], ARGV[2])
  return tok
end
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then
  ttl = 60000
end
redis.call('set', KEYS[2], ARGV[1] .. ' ' .. redis.sha1hex(tok), 'PX', ttl + 1000)
return tok
