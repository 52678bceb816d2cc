-- extend.lua: extend a plain lock only if it is still ours; it never
-- recreates a missing key (extendScript). A first renewal sends it with
-- extend_index.lua after it.
-- KEYS[1]: the lock key; KEYS[2], when sent: its replace marker
-- (keys.Replaced).
-- ARGV[1]: our token; ARGV[2]: the new TTL in ms; ARGV[3], when sent: any
-- value, to have the server's TIME too.
-- Returns 1 when extended, 0 when the lock is gone or someone else's;
-- extended, and the replacer's "<host>:<pid>" when the marker names our
-- token. With ARGV[3]: {that, TIME's seconds, TIME's microseconds}.
local r = 0
if redis.call('get', KEYS[1]) == ARGV[1] then
  r = redis.call('pexpire', KEYS[1], ARGV[2])
  local m = KEYS[2] and redis.call('get', KEYS[2])
  if m and string.sub(m, -40) == redis.sha1hex(ARGV[1]) then
    r = string.sub(m, 1, -42)
  end
end
if ARGV[3] then
  local t = redis.call('time')
  return {r, t[1], t[2]}
end
return r
