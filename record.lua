-- After the release's reply r: store the run (see recordScript). KEYS from
-- the end: record, history, last success, window marker. ARGV from the end:
-- record, retention ms, history size, "1" if it succeeded, marker, its ms.
local n, a = #KEYS, #ARGV
local rec, ms = ARGV[a - 5], ARGV[a - 4]
local function w(...)
  local s = redis.pcall(...)
  if type(s) == 'table' and s.err then
    return s.err
  end
end
local e = w('set', KEYS[n - 3], rec, 'PX', ms)
local h = tonumber(ARGV[a - 3])
if not e and h > 0 then
  e = w('lpush', KEYS[n - 2], rec) or w('ltrim', KEYS[n - 2], 0, h - 1) or w('pexpire', KEYS[n - 2], ms)
end
if not e and ARGV[a - 2] == '1' then
  e = w('set', KEYS[n - 1], rec, 'PX', ms)
  if not e and ARGV[a] ~= '0' then
    e = w('set', KEYS[n], ARGV[a - 1], 'PX', ARGV[a])
  end
end
return {r, e or 'OK'}
