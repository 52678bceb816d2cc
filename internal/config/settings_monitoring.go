package config

// monitoringSettings declares the settings of monitoring.
func monitoringSettings(c *Config) group {
	return group{"Monitoring", []setting{
		{name: "metrics-dir", env: "WITH_LOCK_METRICS_DIR", field: &c.MetricsDir,
			help: "after every run write with-lock-<name>.prom for node_exporter's textfile collector into `DIR`",
			man: `At the end of every run, ran or not, write
.IB DIR /with-lock- name .prom
for node_exporter's textfile collector: the last run's start, end, duration,
wait, exit code and outcome (ok, failed, lost, timed-out, busy, done, error),
this host's last success, and counters by outcome carried over from the
previous file. Written atomically; a failure is one warning and leaves the
exit code alone.`},
		{name: "metrics-push", env: "WITH_LOCK_METRICS_PUSH", field: &c.MetricsPush,
			help: "after every run POST its metrics to the Prometheus Pushgateway at `URL` (a pod has no textfile directory); a skip (busy, paused, window done) pushes nothing",
			man: `At the end of every run POST the run's metrics (those of
\-\-metrics\-dir but the counters; the last success only when the run is
one) to the Prometheus Pushgateway at URL, in the group job="with\-lock"
and the lock's name: for a Kubernetes CronJob's pod, which has no textfile
directory. A run that skipped the command (busy, paused, its window done)
pushes nothing, so that the group keeps the last run that did the work. A
Pushgateway that does not answer within 5 s costs a warning (not with \-q).`},
		{name: "ping", env: "WITH_LOCK_PING_URL", field: &c.PingURL,
			help: "the run that holds the lock GETs `URL`/start?rid=ID, then URL/<exit code>?rid=ID (healthchecks.io)",
			man: `The healthchecks.io protocol: the run that holds the lock sends
.IB URL /start?rid= ID
when the command starts, without waiting for it, and
.IB URL / code ?rid= ID
with its exit code once the lock is released, as a POST of the end of the
command's output (\-\-ping\-output). A run refused as busy or done
sends nothing. One retry; a failure is one warning and leaves the exit code
alone. The URL is never printed whole.`},
		{name: "ping-timeout", env: "WITH_LOCK_PING_TIMEOUT", field: &c.PingTimeout, def: DefaultPingTimeout,
			help: "give up on a ping, its one retry included, after `DUR`",
			man: `Give up on a ping, its retry included, after DUR: the exit
waits at most this long for the end ping.`},
		{name: "ping-skips", env: "WITH_LOCK_PING_SKIPS", field: &c.PingSkips,
			help: "with --ping, also report a run not made (lock busy, or done) to URL/log",
			man: `With \-\-ping, also POST a line to
.IB URL /log
for a run refused as busy or done.`},
		{name: "ping-output", env: "WITH_LOCK_PING_OUTPUT", field: &c.PingOutput, def: DefaultPingOutput,
			help: "with --ping, POST the last `N` KiB of the command's output with the end ping (0: a GET without it)",
			man: `With \-\-ping, the end ping is a POST whose body is the last N KiB of the
command's stdout and stderr, byte for byte (at most 1024;
healthchecks.io keeps 100 KB of it). 0 sends none: a GET, for output that
must not leave the host. At a terminal the command keeps it, and nothing is
sent.`},
	}}
}
