-- Release if still ours (see releaseScript). KEYS[1]: key. ARGV: token, ms to keep.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('pexpire', KEYS[1], keep)
  return 1
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[1], '')
return 1
