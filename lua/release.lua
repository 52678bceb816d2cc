-- Release if still ours; when the waiting mark says someone waits, hand the
-- lock to the first live waiter in line (handKey, key_hand.lua, comes
-- before; see releaseScript). KEYS[1]: key.
-- ARGV: token, the waiting mark or ''[, ms to keep[, our Client id, '*' or '']].
local k, m, keep, cid = KEYS[1], ARGV[2], ARGV[3], ARGV[4] or ''
if redis.call('get', k) ~= ARGV[1] then
  return 0
end
-- A release ends the lease: its lease mark (<base>:lease) goes, but for a
-- hand-over by a Client with waiters of its own (cid), which leaves it for
-- the waiter to read (lease.go).
local l = m ~= '' and string.sub(m, 1, -2) .. 'lease'
if keep and tonumber(keep) > 0 then
  redis.call('pexpire', k, keep)
  if l then
    redis.call('del', l)
  end
  return 1
end
local gone = false
if m ~= '' and cid == '' then
  if redis.call('del', k, m, l) == 1 then
    return 2
  end
  gone = true
end
if m ~= '' then
  local tok, paused = handKey(k, string.sub(m, 1, -3), cid)
  if paused then
    redis.call('publish', k, '')
    return 1
  elseif tok then
    if gone then
      redis.call('set', m, 1, 'PX', 3000)
    end
    return tok
  end
end
if l and not gone then
  redis.call('del', k, l)
elseif not gone then
  redis.call('del', k)
end
redis.call('publish', k, '')
return 1
