package config

// manText returns, by flag name, the description of each setting in the man
// page's OPTIONS: roff, longer than --help's one line. A setting without one
// is described by its help. The default and the variable are added from the
// settings table, so they cannot drift.
func manText() map[string]string {
	return map[string]string{
		"redis": `Redis URL, redis:// or rediss://, or
.IR host [: port ]
for
.BI redis:// host : port /0
(default
.BR redis://127.0.0.1:6379/0 ).
Repeat for a quorum of independent masters (an odd number), or for the seeds
of \-\-cluster.`,
		"redis-timeout": `Connect and command timeout (default 3s), so a dead Redis never hangs cron.`,
		"prefix": `Key prefix (default
.BR lock: ;
not empty).`,
		"ttl": `Lock time to live (default 30s; at least 200ms, so that renewal, every third
of it, has time to work). Whole seconds are set with EX, others with PX.`,
		"no-renew": `Do not renew the lock while the command runs; it expires after \-\-ttl even if
the command still runs.`,
		"on-lost": `What to do when the lock is lost while the command runs \(em a renewal finds
the key gone or someone else's, or no renewal succeeded by the local deadline,
which comes before the key can expire:
.B term
(default) sends \-\-stop\-signal (SIGTERM) to the command's process group, SIGKILL after
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
		"kill-after": `With \-\-on\-lost term, SIGKILL what is left of the command's process group
DUR after the \-\-stop\-signal (default 5s); the same after --max-run and
--leftovers kill. Not for a signal
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
after \-\-kill\-after. HUP, INT, QUIT, TERM (the default), USR1, USR2, ALRM or
KILL, with or without SIG, or its number. A signal sent to
.B with-lock
is forwarded as it is.`,
		"leftovers": `What to do with the job's processes still running when the command exits
(a background child, a daemon it started):
.B wait
(default) keeps the lock, renewed, until the last of them ends, says so in
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
.B auto
(default): under systemd a transient scope of the job's own,
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
run at once (a semaphore, 1\-1000; default 1, the plain lock): "at most two
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
		"status": `Run no command: print who holds the lock
.I name
(host:pid), its remaining time (or that it has no expiry), the last fencing
number and the last run (with \-\-json also since when it is held), and the
last success when a later run failed; exit 0 if it is held, 1 if it is free.
During \-\-min\-hold after the command ended it says the run finished; after
a \-\-once\-per success, "done for the window starting ...".`,
		"list": `Run no command: print every lock held under the prefix, one line each (name,
holder, time left, fence, last run); exit 0, also when none is held (a
terminal is then told so; a pipe gets nothing). A lock is listed from the
moment it is taken, whatever its flags. On one Redis, through Sentinel or on
a Cluster the names come from the index
.BI {lock:}:names
that every run writes its name to with its SET, so the cost grows with the
locks, not with the other keys; a key another program set under the prefix
is in no index, which a terminal is told in one last line, and
\-\-scan shows it. On a quorum, or with \-\-scan, the locks are found with
SCAN: on a Cluster on every master, on a quorum on every node (held = on a
majority).`,
		"all": `With \-\-list, also the last runs of names not held now.`,
		"scan": `With \-\-list, find the locks with SCAN over the whole keyspace instead of
reading the index of names
.BI {lock:}:names
(see \-\-list): this also finds keys that other programs or older versions
set under the prefix, at a cost that grows with every key in Redis.`,
		"history": `Run no command: print the last runs of the lock
.I name
that are kept, newest first (finished, how long ago, holder, duration,
outcome \- ok, failed, lost or timed\-out \- and exit code); exit 0, also
when there is none. With \-\-json, one object per line.`,
		"break": `Run no command: remove the lock
.I name
whoever holds it, say whose it was, and wake waiters; exit 0 when a lock was
removed, 1 when none was held. The former holder stops its command with 125
at its next renewal, saying who broke it (a marker left beside the key for
as long as the key had left); \-\-on\-lost reacquire does not take it back.`,
		"pause": `Run no command: pause the lock
.I name
on every host until \-\-resume (or \-\-for): every run of it refuses at once
with the busy code (75, or \-E's) and one line naming who paused it (host
and $USER), since when, why (\-\-reason) and until when; a \-w waiter stops
waiting. A holder that runs is not stopped: the pause takes effect at its
release, as \-\-pause says. The pause is a value in the lock's key, which
every run's SET NX meets anyway: it costs runs nothing. \-\-status,
\-\-list, \-\-check (WARNING) and the metrics (outcome paused) show it.
One deployment only: not a quorum, not a \-\-slots name.`,
		"for":    `With \-\-pause: the pause ends by itself after DUR (its key expires).`,
		"reason": `With \-\-pause: why, on one line; every refused run prints it.`,
		"resume": `Run no command: end the pause of the lock
.IR name ;
runs take it again. Exit 0 when it was paused, 1 when it was not.`,
		"record-output": `Keep the last N KiB (at most 64; default 0, none) of the command's stdout and
stderr, from the start of a line, in the run's record and its history entry,
in Redis, for \-\-status, \-\-history and their \-\-json. It costs N KiB of
Redis memory per run kept; leave it off for output that holds secrets.`,
		"record-ttl": `Keep the record of the last run (host, pid, times, exit code, fence) in
.BI {lock: name }:last
for DUR (default 720h, 30 days).`,
		"no-record": `Store no record of the run.`,
		"metrics-push": `At the end of every run POST the run's metrics (those of
\-\-metrics\-dir but the counters; the last success only when the run is
one) to the Prometheus Pushgateway at URL, in the group job="with\-lock"
and the lock's name: for a Kubernetes CronJob's pod, which has no textfile
directory. A run that skipped the command (busy, paused, its window done)
pushes nothing, so that the group keeps the last run that did the work. A
Pushgateway that does not answer within 5 s costs a warning (not with \-q).`,
		"metrics-dir": `At the end of every run, ran or not, write
.IB DIR /with-lock- name .prom
for node_exporter's textfile collector: the last run's start, end, duration,
wait, exit code and outcome (ok, failed, lost, timed-out, busy, done, error),
this host's last success, and counters by outcome carried over from the
previous file. Written atomically; a failure is one warning and leaves the
exit code alone.`,
		"history-size": `Keep the last N runs of the name (default 10; 0: none) in
.BI {lock: name }:runs
for \-\-history, trimmed and kept for \-\-record\-ttl by the release. The
last successful run is kept apart in
.BI {lock: name }:ok\fR,
so that a later failure does not hide it from \-\-status.`,
		"ping": `The healthchecks.io protocol: the run that holds the lock sends
.IB URL /start?rid= ID
when the command starts, without waiting for it, and
.IB URL / code ?rid= ID
with its exit code once the lock is released, as a POST of the end of the
command's output (\-\-ping\-output). A run refused as busy or done
sends nothing. One retry; a failure is one warning and leaves the exit code
alone. The URL is never printed whole.`,
		"ping-timeout": `Give up on a ping, its retry included, after DUR (default 10s): the exit
waits at most this long for the end ping.`,
		"ping-output": `With \-\-ping, the end ping is a POST whose body is the last N KiB of the
command's stdout and stderr, byte for byte (default 10, at most 1024;
healthchecks.io keeps 100 KB of it). 0 sends none: a GET, for output that
must not leave the host. At a terminal the command keeps it, and nothing is
sent.`,
		"ping-skips": `With \-\-ping, also POST a line to
.IB URL /log
for a run refused as busy or done.`,
		"check": `Run no command: judge the records of lock
.I NAME
in Redis as a Nagios plugin does and print one line on stdout; exit 0 OK,
1 WARNING (also when the server may evict the lock: its
maxmemory\-policy is not noeviction; or, with \-\-duration\-outlier, the last
success took far less or longer than the ones before it), 2 CRITICAL (the
last run failed or lost the lock, or no success within \-\-max\-age, or none
recorded, or the last success took less than \-\-min\-duration or longer
than \-\-max\-duration),
3 UNKNOWN (Redis unreachable). With \-\-json, the same as an object; with
a duration judgement, its prior_successes (successes, min_ms, median_ms,
max_ms) are those before the last success.`,
		"doctor": `Run no command: check that the deployment the settings name (one Redis,
Sentinel's master, each master of a Cluster or of a quorum) can hold locks,
and print one line per check, OK, WARNING, CRITICAL or UNKNOWN (the check
could not tell) with what to do, under a first line in \-\-check's form:
reachable (the round trip of PING), server (Redis or Valkey, its version),
eviction (maxmemory and maxmemory\-policy: WARNING when the server may evict
a lock, CRITICAL when it has evicted keys or is full), persistence (WARNING
with no AOF and no RDB snapshots: a restart forgets the locks), replication
(CRITICAL on a replica, or when \-\-min\-replicas waits for more replicas
than acknowledge), lua (CRITICAL when EVAL fails), acl (every command
with-lock sends, with the keys of
.IR NAME ,
asked of ACL DRYRUN or redis.acl_check_cmd without running it), clock (WARNING
past 1 s from this host's) and, with
.IR NAME ,
cluster\-slot (all its keys in one slot). Exit 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN, the worst line's. With \-\-json, one object: status, code,
message, deployment, name, key and checks (name, state, detail, advice).`,
		"max-age": `With \-\-check, CRITICAL when no run succeeded in the last DUR.`,
		"warn-age": `With \-\-check, WARNING when no run succeeded in the last DUR (below
\-\-max\-age).`,
		"running-ok": `With \-\-check, a run going on for less than DUR is OK, whatever the
records say.`,
		"min-duration": `With \-\-check, CRITICAL when the last success took less than DUR: a job
that exits 0 in a tenth of its usual time has often done nothing.`,
		"max-duration": `With \-\-check, CRITICAL when the last success took longer than DUR.`,
		"duration-outlier": `With \-\-check, WARNING when the last success took under a third, or over
3 times, the median duration of the successes recorded before it in the
name's history (\-\-history\-size, default 10); the message gives their
range. The median, unlike the range, is not moved by one odd run in the
history. Fewer than 5 earlier successes are too few to judge: OK, with a
note saying so.`,
		"json": `With \-\-status, print one line of JSON: key, held, holder, host, pid, ttl_ms
(\-1: no expiry), fence, since, finished, last_run, last_success, done_window
(start and end of the \-\-once\-per window already done), leftovers (while
the command has exited and processes of its job hold the lock: exit_code,
exited, processes), and for \-\-slots slots
and holders; eviction_policy when the server may evict the lock (its
maxmemory\-policy, not noeviction); paused while \-\-pause holds (by, since, until, reason,
pending); success_durations (successes, min_ms, median_ms, max_ms: how long
the successes the history keeps took; \-\-status only). With \-\-list, one
such object per line for each lock, with its name. With \-\-doctor, see \-\-doctor. With \-\-print\-config, one object: config_file, config_file_source,
config_file_read, redis_is_default, settings (name, value, source) and secrets.`,
		"config": `Read the settings from
.I FILE
instead of /etc/with-lock.conf.`,
		"print-config": `Print the effective settings and exit 0: one
.IB key " = " value
line per setting, followed by a comment saying where it came from
.RB ( default ,
.BI "file " PATH : LINE\fR,
.BI "env " VARIABLE\fR,
.BI "flag \-\-" NAME\fR).
The output is itself a valid config file. Passwords never show: one in a URL
reads ***, and those from variables are only named. Settings a run would
refuse (an even number of quorum masters, a TTL below the minimum) are
printed all the same, then the refusal is said on standard error with the
exit code a run would give (64, or 78 for the config file), so it also
checks a configuration; a flag, variable or file that cannot be read at all
fails as for a run.`,
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
		"conflict-exit-code": `Exit code when the lock is busy (0\(en255, default 75).
With
.B \-E 0
a busy lock is a silent skip.`,
		"output-on-failure": `Hold the command's stdout and stderr back, as one stream in the order they
were written, and print them on stdout only if the run did not succeed (an
exit code other than 0, a lost lock, \-\-max\-run, a signal): cron then mails
only failures. Up to 256 MiB are kept whole, in memory and then in an
unlinked temporary file in $TMPDIR; past that the first 256 MiB and the last
MiB, with a line saying how much was cut between them. Set by
WITH_LOCK_OUTPUT_ON_FAILURE or the config file it leaves a run at a terminal
alone; as a flag it holds a terminal's output back too.`,
		"quiet": `Print errors only: no message when the lock is busy, no warnings.`,
		"verbose": `One line per event on stderr, with a timestamp: acquired, waiting, renewed
(only when slow), lost, exited, released.`,
		"log-format": `.B text
(default) or
.BR json :
everything with-lock prints on stderr as one JSON object per line, with the
fields time, level, event, lock, key, msg and, where they apply, holder,
since, fence, duration_ms, ttl_ms, code, signal, error, tracking, and on release cpu_ms and max_rss_kb.
It holds from the first line: an error in the flags, a variable or the config
file is JSON too when any of the three asks for json, and every error line
carries the exit code in code.`,
		"tls-cacert": `Verify the server's TLS certificate against the CA certificates in FILE
instead of the system's.`,
		"tls-insecure": `Do not verify the server's TLS certificate (testing only; with-lock warns).
Required for skip_verify=true in a URL.
The old names \-\-cacert, \-\-cert, \-\-key and \-\-insecure (as redis-cli
spells them) still work on the command line; in the config file the keys are
tls-cacert, tls-cert, tls-key and tls-insecure, and the old keys are refused
with exit 78.`,
		"password-file": `Read the Redis password from FILE, which must not be accessible by group or
others. Otherwise the password comes from the URL, then
.BR WITH_LOCK_PASSWORD ,
then
.BR REDISCLI_AUTH .`,
		"sentinel":        `A Sentinel to ask for the master (repeatable); needs \-\-sentinel\-master.`,
		"sentinel-master": `Name of the master the sentinels monitor.`,
		"cluster":         `The \-\-redis URLs are seeds of a Redis Cluster.`,
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
		"version": `Print the version.`,
		"help":    `Print help with examples.`,
		"tls-cert": `TLS client certificate (PEM), presented with the key of
\-\-tls\-key (for a server with tls\-auth\-clients yes).`,
		"tls-key":       `The private key (PEM) of the \-\-tls\-cert client certificate.`,
		"sentinel-user": `ACL user for the sentinels.`,
		"sentinel-password-file": `Read the sentinels' password from FILE (or
.BR WITH_LOCK_SENTINEL_PASSWORD ).`,
	}
}
