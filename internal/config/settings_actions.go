package config

// actionSettings declares the settings of the actions, which run no command.
func actionSettings(c *Config) group {
	return group{"Actions (run no command)", []setting{
		{name: "status", field: &c.Status, help: "print who holds lock <name> and exit: 0 held, 1 free (no command)",
			man: `Run no command: print who holds the lock
.I name
(host:pid), its remaining time (or that it has no expiry), the last fencing
number and the last run (with \-\-json also since when it is held), and the
last success when a later run failed; exit 0 if it is held, 1 if it is free.
During \-\-min\-hold after the command ended it says the run finished; after
a \-\-once\-per success, "done for the window starting ...".`},
		{name: "list", field: &c.List, help: "list the locks held under the prefix and exit (no name, no command)",
			man: `Run no command: print every lock held under the prefix, one line each (name,
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
majority).`},
		{name: "all", field: &c.All, help: "with --list, also the last runs of names not held now",
			man: `With \-\-list, also the last runs of names not held now.`},
		{name: "scan", field: &c.Scan, help: "with --list, scan the keyspace instead of reading the index of names (also finds keys other programs set)",
			man: `With \-\-list, find the locks with SCAN over the whole keyspace instead of
reading the index of names
.BI {lock:}:names
(see \-\-list): this also finds keys that other programs or older versions
set under the prefix, at a cost that grows with every key in Redis.`},
		{name: "history", field: &c.History, help: "print the last runs of lock <name>, newest first, and exit (no command)",
			man: `Run no command: print the last runs of the lock
.I name
that are kept, newest first (finished, how long ago, holder, duration,
outcome \- ok, failed, lost or timed\-out \- and exit code); exit 0, also
when there is none. With \-\-json, one object per line.`},
		{name: "break", field: &c.Break, help: "remove lock <name> whoever holds it and exit: 0 removed, 1 nothing held; the holder stops with 125",
			man: `Run no command: remove the lock
.I name
whoever holds it, say whose it was, and wake waiters; exit 0 when a lock was
removed, 1 when none was held. The former holder stops its command with 125
at its next renewal, saying who broke it (a marker left beside the key for
as long as the key had left); \-\-on\-lost reacquire does not take it back.`},
		{name: "json", field: &c.JSON, help: "with --status, --list, --history, --check, --doctor or --print-config, print JSON",
			man: `Print JSON instead of text, with \-\-status, \-\-list, \-\-history,
\-\-check, \-\-doctor or \-\-print\-config.
With \-\-status, one line: key, held, holder, host, pid, ttl_ms
(\-1: no expiry), fence, since, finished, last_run, last_success, done_window
(start and end of the \-\-once\-per window already done), leftovers (while
the command has exited and processes of its job hold the lock: exit_code,
exited, processes), and for \-\-slots slots
and holders; eviction_policy when the server may evict the lock (its
maxmemory\-policy, not noeviction); paused while \-\-pause holds (by, since, until, reason,
pending); success_durations (successes, min_ms, median_ms, max_ms: how long
the successes the history keeps took; \-\-status only). With \-\-list, one
such object per line for each lock, with its name. With \-\-history,
\-\-check and \-\-doctor, see those. With \-\-print\-config, one object:
config_file, config_file_source, config_file_read, redis_is_default, settings (name, value, source) and secrets.`},
		{name: "pause", field: &c.Pause,
			help: "pause lock <name> on every host and exit: runs refuse with the busy code until --resume; a running holder is not stopped",
			man: `Run no command: pause the lock
.I name
on every host until \-\-resume (or \-\-for): every run of it refuses at once
with the busy code (75, or \-E's) and one line naming who paused it (host
and $USER), since when, why (\-\-reason) and until when; a \-w waiter stops
waiting. A holder that runs is not stopped: the pause takes effect at its
release, as \-\-pause says. The pause is a value in the lock's key, which
every run's SET NX meets anyway: it costs runs nothing. \-\-status,
\-\-list, \-\-check (WARNING) and the metrics (outcome paused) show it.
One deployment only: not a quorum, not a \-\-slots name.`},
		{name: "for", cli: true, field: &c.PauseFor, help: "with --pause, end the pause by itself after `DUR`",
			man: `With \-\-pause: the pause ends by itself after DUR (its key expires).`},
		{name: "reason", cli: true, field: &c.PauseReason, help: "with --pause, why: every refused run prints this `TEXT`",
			man: `With \-\-pause: why, on one line; every refused run prints it.`},
		{name: "resume", field: &c.Resume, help: "end the pause of lock <name> and exit: 0 resumed, 1 it was not paused",
			man: `Run no command: end the pause of the lock
.IR name ;
runs take it again. Exit 0 when it was paused, 1 when it was not.`},
		{name: "check", field: &c.Check,
			help: "judge the records of lock `NAME` as a Nagios plugin and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN",
			man: `Run no command: judge the records of lock
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
max_ms) are those before the last success.`},
		{name: "max-age", field: &c.MaxAge, help: "with --check, CRITICAL when no run succeeded in the last `DUR`",
			man: `With \-\-check, CRITICAL when no run succeeded in the last DUR.`},
		{name: "warn-age", field: &c.WarnAge, help: "with --check, WARNING when no run succeeded in the last `DUR`",
			man: `With \-\-check, WARNING when no run succeeded in the last DUR (below
\-\-max\-age).`},
		{name: "running-ok", field: &c.RunningOK, help: "with --check, a run going on for less than `DUR` is OK",
			man: `With \-\-check, a run going on for less than DUR is OK, whatever the
records say.`},
		{name: "min-duration", field: &c.MinDuration,
			help: "with --check, CRITICAL when the last success took less than `DUR`, as a run that did nothing may",
			man: `With \-\-check, CRITICAL when the last success took less than DUR: a job
that exits 0 in a tenth of its usual time has often done nothing.`},
		{name: "max-duration", field: &c.MaxDuration, help: "with --check, CRITICAL when the last success took longer than `DUR`",
			man: `With \-\-check, CRITICAL when the last success took longer than DUR.`},
		{name: "duration-outlier", field: &c.DurationOutlier,
			help: "with --check, WARNING when the last success took under a third or over 3 times the median of the successes before it in --history, once there are 5",
			man: `With \-\-check, WARNING when the last success took under a third, or over
3 times, the median duration of the successes recorded before it in the
name's history (\-\-history\-size); the message gives their
range. The median, unlike the range, is not moved by one odd run in the
history. Fewer than 5 earlier successes are too few to judge: OK, with a
note saying so.`},
		{name: "doctor", field: &c.Doctor,
			help: "check that the Redis deployment can hold locks (of lock [NAME]: its keys, ACL, Cluster slot) and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN",
			man: `Run no command: check that the deployment the settings name (one Redis,
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
message, deployment, name, key and checks (name, state, detail, advice).`},
		{name: "print-config", field: &c.PrintConfig, help: "print the effective settings, where each came from, and exit",
			man: `Print the effective settings and exit 0: one
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
fails as for a run.`},
		{name: "version", field: &c.Version, help: "print the version and exit",
			man: `Print the version.`},
		{name: "help", short: "h", field: new(bool), help: "show this help",
			man: `Print help with examples.`},
	}}
}
