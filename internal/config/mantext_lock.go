package config

// manLockText returns the man page's descriptions of the settings of the lock: its key, time to live, waiting and what a run may do with it,
// by flag name (manText).
func manLockText() map[string]string {
	return map[string]string{
		"prefix": `Key prefix; not empty.`,
		"ttl": `Lock time to live: at least 200ms, so that renewal, every third of it, has
time to work. Whole seconds are set with EX, others with PX.`,
		"wait": `Wait up to
.I DUR
for a busy lock instead of failing; exit 75 if it is still busy then.`,
		"jitter": `Before the first try, wait a random time between 0 and
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
skew plus \-\-wait below half the period.`,
		"nonblock": `Fail at once when the lock is busy. This is the default; accepted for
.BR flock (1)
habits. With \-\-wait on the same command line it is a usage error; it beats
a wait from the environment or the config file.`,
		"conflict-exit-code": `Exit code when the lock is busy (0\(en255).
With
.B \-E 0
a busy lock is a silent skip.`,
		"min-hold": `Keep the lock at least DUR after acquiring it: if the command ends sooner, the
key is left to expire when DUR is over instead of deleted, so a server whose
cron fires late does not run the job again (e.g. 55s for a job started every
minute on several servers).`,
		"once-per": `Run the command at most once per window of DUR that it succeeds in. Windows
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
a skip too, not busy. Not with \-\-slots or a quorum of masters (exit 64).`,
		"once-per-offset": `Start every \-\-once\-per window DUR later: \-\-once\-per 24h
\-\-once\-per\-offset 2h makes the days run from 02:00 to 02:00 UTC; \-1h
from 23:00 UTC.`,
		"done-exit-code": `Exit with N (default 0) when \-\-once\-per's window is already done.`,
		"fence": `Draw a fencing number with the acquisition, greater than every earlier one for
this name, and give it to the command in
.BR WITH_LOCK_FENCE .
The acquisition is then one EVAL: SET NX PX, and the number is the larger of
the counter
.BI {lock: name }:fence
plus one and the server's clock in microseconds, stored back as the counter,
so it keeps increasing when Redis restarts empty or fails over (as long as
the servers' clocks agree within the time between two acquisitions).`,
		"slots": `Let up to
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
masters (exit 64).`,
		"min-replicas": `After acquiring, wait (Redis WAIT, up to half of \-\-redis\-timeout) until N
replicas have the lock. If fewer do, release it and exit 69 without running
the command.`,
		"lock-delay": `When the lease before this run's expired without a release (its holder
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
name with '}' but no hash tag. 0, the default, turns it off.`,
	}
}
