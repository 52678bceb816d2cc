-- After the release's reply r: store the run (see recordScript). KEYS[2..7]:
-- record, history, last success, window marker, leftovers note[, index]. ARGV from the end:
-- record, retention ms, history size, "1" if it succeeded, marker, its expiry
-- in Unix ms by this server's clock (0: none).
local a = #ARGV
local rec, ms = ARGV[a - 5], ARGV[a - 4]
local function w(...)
  local s = redis.pcall(...)
  if type(s) == 'table' and s.err then
    return s.err
  end
end
local e = w('set', KEYS[2], rec, 'PX', ms)
local h = tonumber(ARGV[a - 3])
if not e and h > 0 then
  e = w('lpush', KEYS[3], rec) or w('ltrim', KEYS[3], 0, h - 1) or w('pexpire', KEYS[3], ms)
end
if not e and ARGV[a - 2] == '1' then
  e = w('set', KEYS[4], rec, 'PX', ms)
  if not e and ARGV[a] ~= '0' then
    local t = redis.call('time')
    local left = tonumber(ARGV[a]) - (t[1] * 1000 + math.floor(t[2] / 1000))
    if left > 0 then
      e = w('set', KEYS[5], ARGV[a - 1], 'PX', left)
    end
  end
end
if not e and r ~= 0 then
  e = w('del', KEYS[6])
end
if not e and KEYS[7] then
  e = w('hset', KEYS[7], KEYS[1], '')
end
return {r, e or 'OK'}
