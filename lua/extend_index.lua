-- extend_index.lua: a plain lock's first renewal (extendIndexScript),
-- which also writes the lock's key into its prefix's index
-- (admin_index.go); later renewals send extend.lua alone. The script is
-- extend.lua run as the function extend(), then this.
-- KEYS[1]: the lock key; KEYS[2]: its replace marker; KEYS[3]: the index.
-- ARGV: as extend.lua's, ARGV[3] sent.
-- Returns extend.lua's reply.
--
-- Only a renewal that extended the lock writes its key; a failed HSET (an
-- ACL without it) does not fail the renewal.
local r = extend()
if (type(r) == 'table' and r[1] or r) ~= 0 then
  redis.pcall('hset', KEYS[3], KEYS[1], '')
end
return r
