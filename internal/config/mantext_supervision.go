package config

// manSupervisionText returns the man page's descriptions of the settings of the command's job while it runs and how it ends,
// by flag name (manText).
func manSupervisionText() map[string]string {
	return map[string]string{
		"no-renew": `Do not renew the lock while the command runs; it expires after \-\-ttl even if
the command still runs.`,
		"on-lost": `What to do when the lock is lost while the command runs \(em a renewal finds
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
\-\-no\-renew or a quorum of \-\-redis masters (exit 64).`,
		"kill-after": `SIGKILL what is left of the job DUR after the \-\-stop\-signal with which
.B with-lock
stopped it: when \-\-max\-run runs out, when the lock is lost (\-\-on\-lost
term) and for \-\-leftovers kill. Not for a signal
.B with-lock
forwards (systemctl stop, Ctrl-C): that is \-\-stop\-timeout's.`,
		"stop-timeout": `After forwarding SIGTERM, SIGINT or SIGHUP to the job (systemctl stop, a
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
still releases the lock itself.`,
		"stop-signal": `The signal
.B with-lock
stops the job with when it decides to: when \-\-max\-run runs out, when the
lock is lost (\-\-on\-lost term) and for \-\-leftovers kill; SIGKILL follows
after \-\-kill\-after. HUP, INT, QUIT, TERM, USR1, USR2, ALRM or
KILL, with or without SIG, or its number. A signal sent to
.B with-lock
is forwarded as it is.`,
		"leftovers": `What to do with the job's processes still running when the command exits
(a background child, a daemon it started):
.B wait
keeps the lock, renewed, until the last of them ends, says so in
one warning line, then releases it and exits with the command's code;
.B kill
stops them at once (\-\-stop\-signal, SIGKILL after \-\-kill\-after).
On Linux and 64-bit FreeBSD the job is every process the command started,
wherever it went (with-lock is a child subreaper, on FreeBSD a reaper);
elsewhere it is the command's process group,
and with-lock waits for the command alone.`,
		"max-run": `Stop the whole job after DUR (\-\-stop\-signal, SIGKILL after \-\-kill\-after),
release the lock, record the run as timed out, and exit 124, as
.BR timeout (1)
does. Default: no limit.`,
		"no-cgroup": `The same as \-\-tracking subreaper: the subreaper alone follows the
job, in with\-lock's own cgroup.`,
		"tracking": `How the job's processes are followed on Linux.
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
followed the job.`,
		"memory-max": `Limit the memory of the whole job together to SIZE (bytes, or with K, M, G,
T), as systemd's MemoryMax= does: a job over it is killed by the kernel
(exit 137). It needs the job in a cgroup of its own and the cgroup2
hierarchy's memory controller; where either is missing the run is refused,
exit 78, with the reason, and the command is not run.`,
		"cpu-quota": `Limit the CPU time of the whole job together to PCT of one CPU (50%, or
200% for two), as systemd's CPUQuota= does. Refused where it cannot
apply, as \-\-memory\-max.`,
		"record-ttl": `Keep the record of the last run (host, pid, times, exit code, fence) in
.BI {lock: name }:last
for DUR.`,
		"no-record": `Store no record of the run.`,
		"history-size": `Keep the last N runs of the name (0: none) in
.BI {lock: name }:runs
for \-\-history, trimmed and kept for \-\-record\-ttl by the release. The
last successful run is kept apart in
.BI {lock: name }:ok\fR,
so that a later failure does not hide it from \-\-status.`,
		"record-output": `Keep the last N KiB (at most 64; default 0, none) of the command's stdout and
stderr, from the start of a line, in the run's record and its history entry,
in Redis, for \-\-status, \-\-history and their \-\-json. It costs N KiB of
Redis memory per run kept; leave it off for output that holds secrets.`,
	}
}
