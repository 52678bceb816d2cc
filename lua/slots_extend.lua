-- Extend a semaphore's slot only if it is still ours (see slotsExtendScript).
-- KEYS[1]: the name's key, KEYS[2]: the slot's, KEYS[3]: the replace
-- marker[, KEYS[4]: the prefix's index, on a first renewal]. ARGV: token,
-- TTL in ms, marker. Returns 1, 0, or the replacer as extend.lua does.
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
