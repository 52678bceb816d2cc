package config

// supervisionSettings declares the settings of the command's supervision.
func supervisionSettings(c *Config) group {
	return group{"Command supervision", []setting{
		{name: "no-renew", env: "WITH_LOCK_NO_RENEW", field: &c.NoRenew, help: "do not renew the lock while the command runs",
			man: `Do not renew the lock while the command runs; it expires after \-\-ttl even if
the command still runs.`},
		{name: "on-lost", env: "WITH_LOCK_ON_LOST", field: &c.OnLost, def: OnLostTerm, choices: []string{OnLostTerm, OnLostIgnore, OnLostReacquire},
			help: "`MODE` on a lost lock: term stops the command (exit 125), ignore only warns, reacquire takes a vanished key again (else term)",
			man: `What to do when the lock is lost while the command runs \(em a renewal finds
the key gone or someone else's, or no renewal succeeded by the local deadline,
which comes before the key can expire:
.B term
sends \-\-stop\-signal to the command's process group, SIGKILL after
\-\-kill\-after, and exits 125;
.B ignore
prints a warning and lets the command finish;
.B reacquire
takes the lock again at once (SET NX with the run's own token, a new fencing
number with \-\-fence) when its key has vanished \(em Redis restarted empty,
or failed over to a replica that lacked it \(em prints a warning, and lets the
command go on; only if someone else holds the key, or broke the lock with
\-\-break, is the command stopped as with term. Another run may have held the
lock between the key vanishing and its reacquisition. Not with \-\-slots,
\-\-no\-renew or a quorum of \-\-redis masters (exit 64).`},
		{name: "kill-after", env: "WITH_LOCK_KILL_AFTER", field: &c.KillAfter, def: DefaultKillAfter,
			help: "SIGKILL what is left of the job `DUR` after --stop-signal, on --max-run, a lost lock and --leftovers kill",
			man: `SIGKILL what is left of the job DUR after the \-\-stop\-signal with which
.B with-lock
stopped it: when \-\-max\-run runs out, when the lock is lost (\-\-on\-lost
term) and for \-\-leftovers kill. Not for a signal
.B with-lock
forwards (systemctl stop, Ctrl-C): that is \-\-stop\-timeout's.`},
		{name: "stop-timeout", env: "WITH_LOCK_STOP_TIMEOUT", field: &c.StopTimeout,
			help: "SIGKILL the whole job `DUR` after forwarding it SIGTERM, SIGINT or SIGHUP, and release the lock (0: wait for it)",
			man: `After forwarding SIGTERM, SIGINT or SIGHUP to the job (systemctl stop, a
pod's termination, Ctrl-C), SIGKILL the whole job DUR later if it is still
running, and release the lock as soon as it has ended. Default 0: wait for the
job however long it takes, holding the lock, until something kills it and
.BR with-lock ,
and the lock expires after \-\-ttl. Set it below systemd's
.B TimeoutStopSec=
or the pod's
.BR terminationGracePeriodSeconds ,
so that
.B with-lock
still releases the lock itself.`},
		{name: "stop-signal", env: "WITH_LOCK_STOP_SIGNAL", field: &c.StopSignal, def: DefaultStopSignal, choices: stopSignalNames(),
			help: "`SIG` to stop the job with on --max-run, a lost lock and --leftovers kill (TERM, INT, USR1...)",
			man: `The signal
.B with-lock
stops the job with when it decides to: when \-\-max\-run runs out, when the
lock is lost (\-\-on\-lost term) and for \-\-leftovers kill; SIGKILL follows
after \-\-kill\-after. HUP, INT, QUIT, TERM, USR1, USR2, ALRM or
KILL, with or without SIG, or its number. A signal sent to
.B with-lock
is forwarded as it is.`},
		{name: "leftovers", env: "WITH_LOCK_LEFTOVERS", field: &c.Leftovers, def: LeftoversWait, choices: []string{LeftoversWait, LeftoversKill},
			help: "`MODE` for the job's processes left when the command exits: wait holds the lock until they end, kill stops them",
			man: `What to do with the job's processes still running when the command exits
(a background child, a daemon it started):
.B wait
keeps the lock, renewed, until the last of them ends, says so in
one warning line, then releases it and exits with the command's code;
.B kill
stops them at once (\-\-stop\-signal, SIGKILL after \-\-kill\-after).
On Linux and 64-bit FreeBSD the job is every process the command started,
wherever it went (with-lock is a child subreaper, on FreeBSD a reaper);
elsewhere it is the command's process group,
and with-lock waits for the command alone.`},
		{name: "max-run", env: "WITH_LOCK_MAX_RUN", field: &c.MaxRun,
			help: "stop the whole job after `DUR` (--stop-signal, SIGKILL after --kill-after) and exit 124",
			man: `Stop the whole job after DUR (\-\-stop\-signal, SIGKILL after \-\-kill\-after),
release the lock, record the run as timed out, and exit 124, as
.BR timeout (1)
does. Default: no limit.`},
		{name: "no-cgroup", env: "WITH_LOCK_NO_CGROUP", field: &c.NoCgroup,
			help: "on Linux, follow the job by the subreaper alone, not in a cgroup v2 group of its own (--tracking subreaper)",
			man: `The same as \-\-tracking subreaper: the subreaper alone follows the
job, in with\-lock's own cgroup.`},
		{name: "tracking", env: "WITH_LOCK_TRACKING", field: &c.Tracking, def: TrackingAuto,
			choices: []string{TrackingAuto, TrackingScope, TrackingCgroup, TrackingSubreaper},
			help:    "follow the job by `MODE`: auto, scope (a systemd scope of its own), cgroup (a group below with-lock's own), subreaper",
			man: `How the job's processes are followed on Linux.
.BR auto :
under systemd a transient scope of the job's own,
.IB with-lock- name - pid .scope
in the calling unit's slice, asked of the system manager (as root) or the
user's own manager over D\-Bus, as systemd\-run \-\-scope does; below
with\-lock's own cgroup where its unit delegated (Delegate=yes) or where no
systemd manages the tree; else the subreaper alone.
.B scope
fails the run (exit 78) where systemd gives no scope;
.B cgroup
makes a group below with\-lock's own under systemd too (no D\-Bus round
trip; systemd's delegation rules are then yours to mind);
.B subreaper
makes none. In a group of its own, stopping the job reaches every process
at once (cgroup.kill). \-v, \-\-status and the run's record say which
followed the job.`},
		{name: "memory-max", env: "WITH_LOCK_MEMORY_MAX", field: &c.MemoryMax,
			help: "limit the whole job's memory to `SIZE` (512M, 2G), as systemd's MemoryMax=; refused where it cannot apply",
			man: `Limit the memory of the whole job together to SIZE (bytes, or with K, M, G,
T), as systemd's MemoryMax= does: a job over it is killed by the kernel
(exit 137). It needs the job in a cgroup of its own and the cgroup2
hierarchy's memory controller; where either is missing the run is refused,
exit 78, with the reason, and the command is not run.`},
		{name: "cpu-quota", env: "WITH_LOCK_CPU_QUOTA", field: &c.CPUQuota,
			help: "limit the whole job's CPU time to `PCT` of one CPU (50%, 200%), as systemd's CPUQuota=; refused where it cannot apply",
			man: `Limit the CPU time of the whole job together to PCT of one CPU (50%, or
200% for two), as systemd's CPUQuota= does. Refused where it cannot
apply, as \-\-memory\-max.`},
		{name: "record-ttl", env: "WITH_LOCK_RECORD_TTL", field: &c.RecordTTL, def: DefaultRecordTTL,
			help: "keep the record of the last run (host, pid, times, exit code) for `DUR`",
			man: `Keep the record of the last run (host, pid, times, exit code, fence) in
.BI {lock: name }:last
for DUR.`},
		{name: "no-record", env: "WITH_LOCK_NO_RECORD", field: &c.NoRecord, help: "do not store a record of the run",
			man: `Store no record of the run.`},
		{name: "history-size", env: "WITH_LOCK_HISTORY_SIZE", field: &c.HistorySize, def: DefaultHistorySize,
			help: "keep the last `N` runs of the name for --history (0: none), for as long as --record-ttl",
			man: `Keep the last N runs of the name (0: none) in
.BI {lock: name }:runs
for \-\-history, trimmed and kept for \-\-record\-ttl by the release. The
last successful run is kept apart in
.BI {lock: name }:ok\fR,
so that a later failure does not hide it from \-\-status.`},
		{name: "record-output", env: "WITH_LOCK_RECORD_OUTPUT", field: &c.RecordOutput,
			help: "keep the last `N` KiB of the command's output in the run's record, for --status and --history (0: none)",
			man: `Keep the last N KiB (at most 64; default 0, none) of the command's stdout and
stderr, from the start of a line, in the run's record and its history entry,
in Redis, for \-\-status, \-\-history and their \-\-json. It costs N KiB of
Redis memory per run kept; leave it off for output that holds secrets.`},
	}}
}
