-- handSlot (see slotsHand): hand slot i of the semaphore with key k, line
-- base b and marker want to the first live waiter in its fair line, the
-- message carrying "<i>:<token>"; its token, or nil when nobody live waits.
local function handSlot(k, b, i, want)
  while true do
    local e = redis.pcall('lpop', b .. ':q')
    if type(e) ~= 'string' then
      return nil
    end
    local id, ttl, tok = string.match(e, '^(%x+)|(%d+)|(.+)$')
    if id and redis.call('exists', b .. ':c:' .. id) == 1 and redis.call('spublish', b .. ':w:' .. id, i .. ':' .. tok) > 0 then
      redis.call('set', b .. ':s:' .. i, tok, 'PX', ttl)
      if redis.call('get', k) == want then
        redis.call('pexpire', k, ttl, 'GT')
      else
        redis.call('set', k, want, 'PX', ttl)
      end
      return tok
    end
  end
end
