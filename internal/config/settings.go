package config

// A setting is one flag: its names, default, help and environment
// variable, bound to the field of Config it fills. Every flag is declared
// in settings, and only there. The man page's OPTIONS and ENVIRONMENT are
// generated from it (manpage.go; the longer descriptions in mantext_*.go).
// How a setting becomes a flag and reads its variable is in flagset.go,
// --help in usage.go.
type setting struct {
	name  string // the long flag, without "--"
	short string // the one-letter flag, or ""
	env   string // the WITH_LOCK_* variable; "" for an action, which no environment should turn on
	cli   bool   // set only by its flag or variable, never by a key of the config file
	list  bool   // repeatable; its variable holds the values separated by spaces
	field any    // pointer to the Config field
	def   any    // the default, of the field's type; nil for the zero value
	help  string // pflag takes the `QUOTED` word as the value's name; FILE and DIR complete as paths
	// choices are the values it takes, offered by the shells' completions;
	// nil for any (a path when the value's name is FILE or DIR).
	choices []string
}

// A group is the settings of one concept, shown together in --help.
type group struct {
	title    string
	settings []setting
}

// settings declares every flag of c, grouped by what it configures.
func settings(c *Config) []group {
	return []group{
		{"Redis connection", []setting{
			{name: "redis", env: EnvRedis, list: true, field: &c.RedisURLs, def: []string{DefaultRedisURL},
				help: "Redis `URL`; repeat for a quorum of independent masters, or the seeds of --cluster"},
			{name: "redis-timeout", env: "WITH_LOCK_REDIS_TIMEOUT", field: &c.RedisTimeout, def: DefaultRedisTimeout,
				help: "give up on connecting to or hearing from Redis after `DUR`"},
			// tls-*, as their variables: a bare "key" or "cert" reads as the
			// lock's key (WITH_LOCK_KEY is the lock's key, set for the command).
			// The old names still work as hidden flags (tlsalias.go).
			{name: "tls-cacert", env: "WITH_LOCK_TLS_CACERT", field: &c.TLSCACert,
				help: "verify the server's TLS certificate against the CAs in `FILE` (rediss://)"},
			{name: "tls-cert", env: "WITH_LOCK_TLS_CERT", field: &c.TLSCert, help: "TLS client certificate `FILE` (PEM, with --tls-key)"},
			{name: "tls-key", env: "WITH_LOCK_TLS_KEY", field: &c.TLSKey, help: "TLS client private key `FILE` (PEM)"},
			{name: "tls-insecure", env: "WITH_LOCK_TLS_INSECURE", field: &c.TLSInsecure,
				help: "do not verify the server's TLS certificate (testing only)"},
			{name: "password-file", env: "WITH_LOCK_PASSWORD_FILE", field: &c.PasswordFile,
				help: "read the Redis password from `FILE` (mode 0600 or stricter)"},
			{name: "sentinel", env: "WITH_LOCK_SENTINEL", list: true, field: &c.Sentinels,
				help: "Sentinel `HOST:PORT` (repeat for each sentinel)"},
			{name: "sentinel-master", env: "WITH_LOCK_SENTINEL_MASTER", field: &c.SentinelMaster,
				help: "`NAME` of the master the sentinels monitor"},
			{name: "sentinel-user", env: "WITH_LOCK_SENTINEL_USER", field: &c.SentinelUser, help: "ACL `USER` for the sentinels"},
			{name: "sentinel-password-file", env: "WITH_LOCK_SENTINEL_PASSWORD_FILE", field: &c.SentinelPasswordFile,
				help: "read the sentinels' password from `FILE`"},
			{name: "cluster", env: "WITH_LOCK_CLUSTER", field: &c.Cluster, help: "the --redis URLs are seeds of a Redis Cluster"},
		}},
		{"Lock", []setting{
			{name: "prefix", env: "WITH_LOCK_PREFIX", field: &c.Prefix, def: DefaultPrefix, help: "the key is `STR`<name>"},
			{name: "ttl", env: "WITH_LOCK_TTL", field: &c.TTL, def: DefaultTTL,
				help: "the lock expires `DUR` (at least " + MinTTL.String() + ") after it was last set or renewed"},
			{name: "wait", short: "w", env: "WITH_LOCK_WAIT", field: &c.Wait,
				help: "wait up to `DUR` for a busy lock instead of failing"},
			{name: "jitter", env: "WITH_LOCK_JITTER", field: &c.Jitter,
				help: "first wait a random time up to `DUR`, so that hosts whose cron fires together do not reach Redis at once"},
			{name: "nonblock", short: "n", field: &c.nonblock, help: "fail at once when the lock is busy (the default)"},
			{name: "replace", env: "WITH_LOCK_REPLACE", field: &c.Replace,
				help: "stop the run holding the lock (with --slots the oldest holder; as on a lost lock: 125, \"replaced by host:pid\"), wait first in line until it is gone, then run; -w defaults to --ttl + --kill-after + 5s"},
			{name: "conflict-exit-code", short: "E", env: "WITH_LOCK_CONFLICT_EXIT_CODE", field: &c.ConflictExit, def: DefaultConflictExit,
				help: "exit with `N` (0-255) when the lock is busy"},
			{name: "min-hold", env: "WITH_LOCK_MIN_HOLD", field: &c.MinHold,
				help: "keep the lock at least `DUR` after acquiring it, even if the command ends sooner"},
			{name: "once-per", env: "WITH_LOCK_ONCE_PER", field: &c.OncePer,
				help: "run the command at most once per `DUR` window (UTC, from the Unix epoch) that it succeeds in; later runs exit at once"},
			{name: "once-per-offset", env: "WITH_LOCK_ONCE_PER_OFFSET", field: &c.OncePerOffset,
				help: "start every --once-per window `DUR` later (e.g. 2h: days from 02:00 UTC)"},
			{name: "done-exit-code", env: "WITH_LOCK_DONE_EXIT_CODE", field: &c.DoneExit,
				help: "exit with `N` (0-255) when --once-per's window is already done"},
			// Not WITH_LOCK_FENCE: that is the number given to the command.
			{name: "fence", env: "WITH_LOCK_FENCING", field: &c.Fence,
				help: "give the command a fencing number, increasing per acquisition, in " + EnvLockFence},
			{name: "slots", env: "WITH_LOCK_SLOTS", field: &c.Slots, def: 1,
				help: "let up to `N` holders run at once (a semaphore); every run of a name must use the same N"},
			{name: "min-replicas", env: "WITH_LOCK_MIN_REPLICAS", field: &c.MinReplicas,
				help: "after acquiring, wait until `N` replicas have the lock, else exit 69"},
			{name: "lock-delay", env: "WITH_LOCK_LOCK_DELAY", field: &c.LockDelay,
				help: "when the last holder's lease expired unreleased (it crashed or stalled; its job may still run), hold the lock `DUR` before the command starts"},
		}},
		{"Command supervision", []setting{
			{name: "no-renew", env: "WITH_LOCK_NO_RENEW", field: &c.NoRenew, help: "do not renew the lock while the command runs"},
			{name: "on-lost", env: "WITH_LOCK_ON_LOST", field: &c.OnLost, def: OnLostTerm, choices: []string{OnLostTerm, OnLostIgnore, OnLostReacquire},
				help: "`MODE` on a lost lock: term stops the command (exit 125), ignore only warns, reacquire takes a vanished key again (else term)"},
			{name: "kill-after", env: "WITH_LOCK_KILL_AFTER", field: &c.KillAfter, def: DefaultKillAfter,
				help: "SIGKILL what is left of the job `DUR` after --stop-signal, on --max-run, a lost lock and --leftovers kill"},
			{name: "stop-timeout", env: "WITH_LOCK_STOP_TIMEOUT", field: &c.StopTimeout,
				help: "SIGKILL the whole job `DUR` after forwarding it SIGTERM, SIGINT or SIGHUP, and release the lock (0: wait for it)"},
			{name: "stop-signal", env: "WITH_LOCK_STOP_SIGNAL", field: &c.StopSignal, def: DefaultStopSignal, choices: stopSignalNames(),
				help: "`SIG` to stop the job with on --max-run, a lost lock and --leftovers kill (TERM, INT, USR1...)"},
			{name: "leftovers", env: "WITH_LOCK_LEFTOVERS", field: &c.Leftovers, def: LeftoversWait, choices: []string{LeftoversWait, LeftoversKill},
				help: "`MODE` for the job's processes left when the command exits: wait holds the lock until they end, kill stops them"},
			{name: "max-run", env: "WITH_LOCK_MAX_RUN", field: &c.MaxRun,
				help: "stop the whole job after `DUR` (--stop-signal, SIGKILL after --kill-after) and exit 124"},
			{name: "no-cgroup", env: "WITH_LOCK_NO_CGROUP", field: &c.NoCgroup,
				help: "on Linux, follow the job by the subreaper alone, not in a cgroup v2 group of its own (--tracking subreaper)"},
			{name: "tracking", env: "WITH_LOCK_TRACKING", field: &c.Tracking, def: TrackingAuto,
				choices: []string{TrackingAuto, TrackingScope, TrackingCgroup, TrackingSubreaper},
				help:    "follow the job by `MODE`: auto, scope (a systemd scope of its own), cgroup (a group below with-lock's own), subreaper"},
			{name: "memory-max", env: "WITH_LOCK_MEMORY_MAX", field: &c.MemoryMax,
				help: "limit the whole job's memory to `SIZE` (512M, 2G), as systemd's MemoryMax=; refused where it cannot apply"},
			{name: "cpu-quota", env: "WITH_LOCK_CPU_QUOTA", field: &c.CPUQuota,
				help: "limit the whole job's CPU time to `PCT` of one CPU (50%, 200%), as systemd's CPUQuota=; refused where it cannot apply"},
			{name: "record-ttl", env: "WITH_LOCK_RECORD_TTL", field: &c.RecordTTL, def: DefaultRecordTTL,
				help: "keep the record of the last run (host, pid, times, exit code) for `DUR`"},
			{name: "no-record", env: "WITH_LOCK_NO_RECORD", field: &c.NoRecord, help: "do not store a record of the run"},
			{name: "history-size", env: "WITH_LOCK_HISTORY_SIZE", field: &c.HistorySize, def: DefaultHistorySize,
				help: "keep the last `N` runs of the name for --history (0: none), for as long as --record-ttl"},
			{name: "record-output", env: "WITH_LOCK_RECORD_OUTPUT", field: &c.RecordOutput,
				help: "keep the last `N` KiB of the command's output in the run's record, for --status and --history (0: none)"},
		}},
		{"Monitoring", []setting{
			{name: "metrics-dir", env: "WITH_LOCK_METRICS_DIR", field: &c.MetricsDir,
				help: "after every run write with-lock-<name>.prom for node_exporter's textfile collector into `DIR`"},
			{name: "metrics-push", env: "WITH_LOCK_METRICS_PUSH", field: &c.MetricsPush,
				help: "after every run POST its metrics to the Prometheus Pushgateway at `URL` (a pod has no textfile directory); a skip (busy, paused, window done) pushes nothing"},
			{name: "ping", env: "WITH_LOCK_PING_URL", field: &c.PingURL,
				help: "the run that holds the lock GETs `URL`/start?rid=ID, then URL/<exit code>?rid=ID (healthchecks.io)"},
			{name: "ping-timeout", env: "WITH_LOCK_PING_TIMEOUT", field: &c.PingTimeout, def: DefaultPingTimeout,
				help: "give up on a ping, its one retry included, after `DUR`"},
			{name: "ping-skips", env: "WITH_LOCK_PING_SKIPS", field: &c.PingSkips,
				help: "with --ping, also report a run not made (lock busy, or done) to URL/log"},
			{name: "ping-output", env: "WITH_LOCK_PING_OUTPUT", field: &c.PingOutput, def: DefaultPingOutput,
				help: "with --ping, POST the last `N` KiB of the command's output with the end ping (0: a GET without it)"},
		}},
		{"Configuration", []setting{
			{name: "config", env: EnvConfig, cli: true, field: &c.File, def: defaultFile,
				help: "read settings from the TOML `FILE`; keys are the long flags' names"},
		}},
		{"Output", []setting{
			{name: "quiet", short: "q", env: "WITH_LOCK_QUIET", field: &c.Quiet,
				help: "print errors only: nothing when the lock is busy, no warnings"},
			{name: "verbose", short: "v", env: "WITH_LOCK_VERBOSE", field: &c.Verbose,
				help: "print one line per event on stderr: acquired, waiting, slow renewal, lost, released, exited"},
			{name: "log-format", env: "WITH_LOCK_LOG_FORMAT", field: &c.LogFormat, def: LogText, choices: []string{LogText, LogJSON},
				help: "`FORMAT` of what with-lock prints on stderr: text, or json (one object per line)"},
			{name: outputOnFailureFlag, env: "WITH_LOCK_OUTPUT_ON_FAILURE", field: &c.OutputOnFailure,
				help: "hold the command's output back and print it only if the run failed (for cron's MAILTO)"},
		}},
		{"Actions (run no command)", []setting{
			{name: "status", field: &c.Status, help: "print who holds lock <name> and exit: 0 held, 1 free (no command)"},
			{name: "list", field: &c.List, help: "list the locks held under the prefix and exit (no name, no command)"},
			{name: "all", field: &c.All, help: "with --list, also the last runs of names not held now"},
			{name: "scan", field: &c.Scan, help: "with --list, scan the keyspace instead of reading the index of names (also finds keys other programs set)"},
			{name: "history", field: &c.History, help: "print the last runs of lock <name>, newest first, and exit (no command)"},
			{name: "break", field: &c.Break, help: "remove lock <name> whoever holds it and exit: 0 removed, 1 nothing held; the holder stops with 125"},
			{name: "json", field: &c.JSON, help: "with --status, --list, --history, --check, --doctor or --print-config, print JSON"},
			{name: "pause", field: &c.Pause,
				help: "pause lock <name> on every host and exit: runs refuse with the busy code until --resume; a running holder is not stopped"},
			{name: "for", cli: true, field: &c.PauseFor, help: "with --pause, end the pause by itself after `DUR`"},
			{name: "reason", cli: true, field: &c.PauseReason, help: "with --pause, why: every refused run prints this `TEXT`"},
			{name: "resume", field: &c.Resume, help: "end the pause of lock <name> and exit: 0 resumed, 1 it was not paused"},
			{name: "check", field: &c.Check,
				help: "judge the records of lock `NAME` as a Nagios plugin and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN"},
			{name: "max-age", field: &c.MaxAge, help: "with --check, CRITICAL when no run succeeded in the last `DUR`"},
			{name: "warn-age", field: &c.WarnAge, help: "with --check, WARNING when no run succeeded in the last `DUR`"},
			{name: "running-ok", field: &c.RunningOK, help: "with --check, a run going on for less than `DUR` is OK"},
			{name: "min-duration", field: &c.MinDuration,
				help: "with --check, CRITICAL when the last success took less than `DUR`, as a run that did nothing may"},
			{name: "max-duration", field: &c.MaxDuration, help: "with --check, CRITICAL when the last success took longer than `DUR`"},
			{name: "duration-outlier", field: &c.DurationOutlier,
				help: "with --check, WARNING when the last success took under a third or over 3 times the median of the successes before it in --history, once there are 5"},
			{name: "doctor", field: &c.Doctor,
				help: "check that the Redis deployment can hold locks (of lock [NAME]: its keys, ACL, Cluster slot) and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN"},
			{name: "print-config", field: &c.PrintConfig, help: "print the effective settings, where each came from, and exit"},
			{name: "version", field: &c.Version, help: "print the version and exit"},
			{name: "help", short: "h", field: new(bool), help: "show this help"},
		}},
	}
}
