-- record.lua: a part of the finish scripts (finish.lua, slots_finish.lua),
-- never sent alone. It defines record(released, at): the writes that store
-- a finished run's record after its release, whose reply is released.
-- KEYS[1]: the lock key; KEYS[2]: its record ("{key}:last"); KEYS[3]: its
-- history ("{key}:runs"); KEYS[4]: its last success ("{key}:ok"); KEYS[5]:
-- its once-per window's marker ("{key}:done"); KEYS[6]: its leftovers note
-- ("{key}:left"); KEYS[7], where the deployment keeps an index of the
-- prefix's names (admin_index.go): that index. The release's own KEYS are
-- KEYS[1] alone.
-- ARGV[at]: the record, JSON; ARGV[at + 1]: the retention in ms;
-- ARGV[at + 2]: how many runs the history keeps (0: none); ARGV[at + 3]:
-- "1" if the run succeeded; ARGV[at + 4]: the once-per window's marker;
-- ARGV[at + 5]: when it expires, Unix ms by this server's clock (0: no
-- marker). The release's ARGV come before, ARGV[1] to ARGV[at - 1]
-- (recordWrite.args, admin_records.go).
-- Returns {released, "OK" or the first write's error}.
--
-- It stores the record, pushes it onto the history trimmed to its size,
-- and when the run succeeded also stores it as the last success and, with
-- a marker's expiry, the once-per window's marker (onceper.go) until that
-- expiry by the server's TIME. When the release gave the lock up (released
-- is not 0) it deletes the holder's leftovers note (lock.go). Every key
-- lives for the retention, the marker until its expiry; every key but the
-- index is in the lock's Cluster slot. The writes are pcalls after the
-- release, so that none can stop the release or hide its reply. Last, it
-- adds the lock's key to the index.
local function record(released, at)
  local rec, ms = ARGV[at], ARGV[at + 1]
  local function w(...)
    local s = redis.pcall(...)
    if type(s) == 'table' and s.err then
      return s.err
    end
  end
  local e = w('set', KEYS[2], rec, 'PX', ms)
  local h = tonumber(ARGV[at + 2])
  if not e and h > 0 then
    e = w('lpush', KEYS[3], rec) or w('ltrim', KEYS[3], 0, h - 1) or w('pexpire', KEYS[3], ms)
  end
  if not e and ARGV[at + 3] == '1' then
    e = w('set', KEYS[4], rec, 'PX', ms)
    if not e and ARGV[at + 5] ~= '0' then
      local t = redis.call('time')
      local left = tonumber(ARGV[at + 5]) - (t[1] * 1000 + math.floor(t[2] / 1000))
      if left > 0 then
        e = w('set', KEYS[5], ARGV[at + 4], 'PX', left)
      end
    end
  end
  if not e and released ~= 0 then
    e = w('del', KEYS[6])
  end
  if not e and KEYS[7] then
    e = w('hset', KEYS[7], KEYS[1], '')
  end
  return {released, e or 'OK'}
end
