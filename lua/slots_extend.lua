-- slots_extend.lua: extend.lua for a semaphore's slot (slotsExtendScript).
-- KEYS[1]: the name's key K; KEYS[2]: the slot's key; KEYS[3]: the replace
-- marker (keys.Replaced); KEYS[4], on a first renewal: the prefix's index.
-- ARGV[1]: our token; ARGV[2]: the TTL in ms; ARGV[3]: the marker.
-- Returns 1, 0, or the replacer, as extend.lua does.
--
-- It refuses (0) when K holds anything but the marker or nothing. A failed
-- HSET into the index (an ACL without it) does not fail the renewal.
if redis.call('get', KEYS[2]) ~= ARGV[1] then
  return 0
end
local m = redis.call('get', KEYS[1])
if m and m ~= ARGV[3] then
  return 0
end
redis.call('pexpire', KEYS[2], ARGV[2])
if m then
  redis.call('pexpire', KEYS[1], ARGV[2], 'GT')
else
  redis.call('set', KEYS[1], ARGV[3], 'PX', ARGV[2])
end
if KEYS[4] then
  redis.pcall('hset', KEYS[4], KEYS[1], '')
end
local r = redis.call('get', KEYS[3])
if r and string.sub(r, -40) == redis.sha1hex(ARGV[1]) then
  return string.sub(r, 1, -42)
end
return 1
