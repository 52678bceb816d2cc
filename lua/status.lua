-- status.lua: read keys at one moment, for Status (statusScript,
-- admin_status.go).
-- KEYS: the keys to read.
-- ARGV[1]: how many of them, from the first, to read the PTTL of too;
-- ARGV[2]: '1' to add the server's INFO memory.
-- Returns, per key, its value (nil when missing, an error reply for a key
-- of another type) and, for the first ARGV[1], its PTTL; then INFO
-- memory's text, or an error reply where the ACL refuses INFO (the server
-- then says nothing of its eviction policy).
--
-- A script and not MULTI/EXEC: Redis refuses to queue any command of a
-- transaction while its used memory is above maxmemory (each queued GET
-- answers OOM and EXEC then EXECABORT), yet still runs reads and scripts
-- that only read. So Status answers when Redis is out of memory.
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
