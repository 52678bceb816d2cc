package config

// lockSettings declares the settings of the lock.
func lockSettings(c *Config) group {
	return group{"Lock", []setting{
		{name: "prefix", env: "WITH_LOCK_PREFIX", field: &c.Prefix, def: DefaultPrefix, help: "the key is `STR`<name>",
			man: `Key prefix; not empty.`},
		{name: "ttl", env: "WITH_LOCK_TTL", field: &c.TTL, def: DefaultTTL,
			help: "the lock expires `DUR` (at least " + MinTTL.String() + ") after it was last set or renewed",
			man: `Lock time to live: at least 200ms, so that renewal, every third of it, has
time to work. Whole seconds are set with EX, others with PX.`},
		{name: "wait", short: "w", env: "WITH_LOCK_WAIT", field: &c.Wait,
			help: "wait up to `DUR` for a busy lock instead of failing",
			man: `Wait up to
.I DUR
for a busy lock instead of failing; exit 75 if it is still busy then.`},
		{name: "jitter", env: "WITH_LOCK_JITTER", field: &c.Jitter,
			help: "first wait a random time up to `DUR`, so that hosts whose cron fires together do not reach Redis at once",
			man: `Before the first try, wait a random time between 0 and
.I DUR
(uniform; default 0), as systemd's RandomizedDelaySec does, so that a fleet
whose cron fires in the same second does not open all its connections, TLS
handshakes and SETs at once. Nothing is sent to Redis until then, and a
signal meanwhile ends the run at once (128+N) without running the command.
\-\-wait counts from the first try. The jitter delays the run's start:
with \-\-min\-hold, keep DUR plus the hosts' clock skew below the min-hold,
so that the last host to start still finds the lock held, and the min-hold
plus DUR below the period, so that the next run finds it free; with
\-\-once\-per, the window is the one of the first try, so keep DUR plus the
skew plus \-\-wait below half the period.`},
		{name: "nonblock", short: "n", field: &c.nonblock, help: "fail at once when the lock is busy (the default)",
			man: `Fail at once when the lock is busy. This is the default; accepted for
.BR flock (1)
habits. With \-\-wait on the same command line it is a usage error; it beats
a wait from the environment or the config file.`},
		{name: "replace", env: "WITH_LOCK_REPLACE", field: &c.Replace,
			help: "stop the run holding the lock (with --slots the oldest holder; as on a lost lock: 125, \"replaced by host:pid\"), wait first in line until it is gone, then run; -w defaults to --ttl + --kill-after + 5s"},
		{name: "conflict-exit-code", short: "E", env: "WITH_LOCK_CONFLICT_EXIT_CODE", field: &c.ConflictExit, def: DefaultConflictExit,
			help: "exit with `N` (0-255) when the lock is busy",
			man: `Exit code when the lock is busy (0\(en255).
With
.B \-E 0
a busy lock is a silent skip.`},
		{name: "min-hold", env: "WITH_LOCK_MIN_HOLD", field: &c.MinHold,
			help: "keep the lock at least `DUR` after acquiring it, even if the command ends sooner",
			man: `Keep the lock at least DUR after acquiring it: if the command ends sooner, the
key is left to expire when DUR is over instead of deleted, so a server whose
cron fires late does not run the job again (e.g. 55s for a job started every
minute on several servers).`},
		{name: "once-per", env: "WITH_LOCK_ONCE_PER", field: &c.OncePer,
			help: "run the command at most once per `DUR` window (UTC, from the Unix epoch) that it succeeds in; later runs exit at once",
			man: `Run the command at most once per window of DUR that it succeeds in. Windows
are aligned to multiples of DUR since the Unix epoch, in UTC (\-\-once\-per 1h:
each clock hour; 24h: each UTC day), by the Redis server's clock (TIME), which
every host shares, not the host's own. After acquiring the lock, with\-lock
reads the marker
.BI {lock: name }:done\fR;
when a run already exited 0 in the current window it releases the lock and
exits 0 at once, without running the command and without a word (\-v says
why; \-\-done\-exit\-code changes the code). A run that exits 0 stores the
marker in its release's EVAL, kept until the window ends plus DUR (at most an
hour more); a failed run stores nothing, so the next attempt retries. As the
marker is read only by the lock's holder and written before its release, two
servers arriving together run the command once; with \-w the later one
waits, then skips. A key kept by \-\-min\-hold after a success in the window is
a skip too, not busy. Not with \-\-slots or a quorum of masters (exit 64).`},
		{name: "once-per-offset", env: "WITH_LOCK_ONCE_PER_OFFSET", field: &c.OncePerOffset,
			help: "start every --once-per window `DUR` later (e.g. 2h: days from 02:00 UTC)",
			man: `Start every \-\-once\-per window DUR later: \-\-once\-per 24h
\-\-once\-per\-offset 2h makes the days run from 02:00 to 02:00 UTC; \-1h
from 23:00 UTC.`},
		{name: "done-exit-code", env: "WITH_LOCK_DONE_EXIT_CODE", field: &c.DoneExit,
			help: "exit with `N` (0-255) when --once-per's window is already done",
			man:  `Exit with N (default 0) when \-\-once\-per's window is already done.`},
		// Not WITH_LOCK_FENCE: that is the number given to the command.
		{name: "fence", env: "WITH_LOCK_FENCING", field: &c.Fence,
			help: "give the command a fencing number, increasing per acquisition, in " + EnvLockFence,
			man: `Draw a fencing number with the acquisition, greater than every earlier one for
this name, and give it to the command in
.BR WITH_LOCK_FENCE .
The acquisition is then one EVAL: SET NX PX, and the number is the larger of
the counter
.BI {lock: name }:fence
plus one and the server's clock in microseconds, stored back as the counter,
so it keeps increasing when Redis restarts empty or fails over (as long as
the servers' clocks agree within the time between two acquisitions).`},
		{name: "slots", env: "WITH_LOCK_SLOTS", field: &c.Slots, def: 1,
			help: "let up to `N` holders run at once (a semaphore); every run of a name must use the same N",
			man: `Let up to
.I N
holders of
.I name
run at once (a semaphore, 1\-1000; 1 is the plain lock): "at most two
backups across the fleet". Each holder takes one of the slots
.BI {lock: name }:s: i
and everything above holds for it: its own token, renewal, \-\-min\-hold,
\-\-fence (one number per acquisition), \-\-wait in arrival order. The key
.BI lock: name
then holds the marker
.BI #slots= N\fR,
and a run that names another number of slots (a plain lock is 1) is refused
with exit 78 rather than let either limit be exceeded. Not on a quorum of
masters (exit 64).`},
		{name: "min-replicas", env: "WITH_LOCK_MIN_REPLICAS", field: &c.MinReplicas,
			help: "after acquiring, wait until `N` replicas have the lock, else exit 69",
			man: `After acquiring, wait (Redis WAIT, up to half of \-\-redis\-timeout) until N
replicas have the lock. If fewer do, release it and exit 69 without running
the command.`},
		{name: "lock-delay", env: "WITH_LOCK_LOCK_DELAY", field: &c.LockDelay,
			help: "when the last holder's lease expired unreleased (it crashed or stalled; its job may still run), hold the lock `DUR` before the command starts",
			man: `When the lease before this run's expired without a release (its holder
crashed, was stopped, lost Redis or could not renew in time, so its job may
still be running), hold the lock DUR, renewed, before the command starts, as
consul lock's lock\-delay does. After a release there is no wait. What tells
the two apart is the lease mark
.BI {lock: name }:lease
beside the key: the acquisition sets it in its SET's round trip, every release
deletes it, and an expiry leaves it. A run handed the lock by the fair line
(\-w) sets it once it has the lock, one round trip more. The wait counts
neither against \-w nor against \-\-max\-run; a signal during it releases
the lock and the command is not run. Give every run of a name the same
\-\-lock\-delay: a run without it neither sets the mark nor waits. Refused,
exit 64, with \-\-slots, a quorum of \-\-redis masters, \-\-no\-renew, and a
name with '}' but no hash tag. 0, the default, turns it off.`},
	}}
}
