-- Read keys at one moment (see statusScript). KEYS: the keys to read.
-- ARGV[1]: how many of them, from the first, to read the PTTL of too.
-- ARGV[2]: '1' to add INFO memory.
local r = {}
for i, k in ipairs(KEYS) do
  r[#r + 1] = redis.pcall('get', k)
  if i <= tonumber(ARGV[1]) then
    r[#r + 1] = redis.call('pttl', k)
  end
end
if ARGV[2] == '1' then
  r[#r + 1] = redis.pcall('info', 'memory')
end
return r
