-- release.lua: release a plain lock only if it is still ours, in one
-- atomic step, and hand it to the first live waiter of its fair line
-- (wait_fair.go) when one waits (releaseScript). key_hand.lua comes before.
-- KEYS[1]: the lock key.
-- ARGV[1]: our token; ARGV[2]: the key's waiting mark (keys.Mark:
-- "<base>:w", where the base is "{key}" or the key itself when it has a
-- hash tag; '' for a key with '}' but no hash tag, which has no line);
-- ARGV[3], when sent: the ms the key must still live (min-hold), or 0;
-- ARGV[4], sent only by a Client with waiters of its own for the key: that
-- Client's id in the fair line, or ownWaitersOutsideTheLine. A plain
-- release sends the first two (releaseArgs).
-- Returns 0 when the lock was not ours (the key is left untouched); 1 when
-- released (or kept for the min-hold); 2 (releasedUnwatched) when nobody
-- waited; the waiter's token when it handed the lock over.
--
-- With a min-hold left, a short job keeps the key until it passes, so a
-- server whose cron fires late does not run the same job again.
--
-- A release deletes the key's lease mark "<base>:lease" (keys.Lease;
-- lease.go), which says a lease is out: one found when the lock is taken
-- tells of a lease that lapsed. With ARGV[4] a hand-over leaves it for the
-- waiter to read, which costs that frequent hand-over no command; a
-- release that hands nothing deletes it with the key.
--
-- Otherwise, without ARGV[4], one DEL removes the key, its mark and its
-- lease mark: when there were neither, nobody waits, and it returns 2
-- having run only GET and DEL, as a bare compare-and-delete does; a lease
-- mark alone costs an empty line's LPOP and the release message, as a mark
-- does. Every waiter keeps the mark while it waits: one in the fair line
-- with its liveness key, one outside it with each try (Lock.announce).
--
-- With a mark, or with ARGV[4], it serves the fair line (handKey): the
-- lock never comes free while a live waiter is queued. It sets the mark
-- again, for aliveFor (3000 ms), for those still waiting if its DEL took
-- it. With nobody live in line it deletes the key, publishes on a channel
-- named exactly like the key (which wakes waiters that do not queue:
-- quorum Clients, fenced acquisitions, names without a line) and returns
-- 1. With ARGV[4] the mark is left as it is: the Client's own waiters are
-- not marking it while one of them is handed the lock. A pause first in
-- line (pause.lua) takes the key for the rest of the pause instead, and
-- the script publishes and returns 1. The line's keys are built from the
-- base, not declared in KEYS, as they depend on the entries popped; the
-- base puts them in the key's Cluster slot.
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
