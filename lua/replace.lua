-- Ask the holder of a plain lock to stop (see replaceScript). KEYS[1]: the
-- lock key, KEYS[2]: its replace marker. ARGV[1]: who replaces it,
-- "<host>:<pid>". Returns the holder's token, or nil when the key is free.
local tok = redis.call('get', KEYS[1])
if not tok or string.match(tok, '^#slots=') then
  return tok
end
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then
  ttl = 60000
end
redis.call('set', KEYS[2], ARGV[1] .. ' ' .. redis.sha1hex(tok), 'PX', ttl + 1000)
return tok
