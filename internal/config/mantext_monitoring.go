package config

// manMonitoringText returns the man page's descriptions of the settings of what a run reports: metrics, pings,
// by flag name (manText).
func manMonitoringText() map[string]string {
	return map[string]string{
		"metrics-dir": `At the end of every run, ran or not, write
.IB DIR /with-lock- name .prom
for node_exporter's textfile collector: the last run's start, end, duration,
wait, exit code and outcome (ok, failed, lost, timed-out, busy, done, error),
this host's last success, and counters by outcome carried over from the
previous file. Written atomically; a failure is one warning and leaves the
exit code alone.`,
		"metrics-push": `At the end of every run POST the run's metrics (those of
\-\-metrics\-dir but the counters; the last success only when the run is
one) to the Prometheus Pushgateway at URL, in the group job="with\-lock"
and the lock's name: for a Kubernetes CronJob's pod, which has no textfile
directory. A run that skipped the command (busy, paused, its window done)
pushes nothing, so that the group keeps the last run that did the work. A
Pushgateway that does not answer within 5 s costs a warning (not with \-q).`,
		"ping": `The healthchecks.io protocol: the run that holds the lock sends
.IB URL /start?rid= ID
when the command starts, without waiting for it, and
.IB URL / code ?rid= ID
with its exit code once the lock is released, as a POST of the end of the
command's output (\-\-ping\-output). A run refused as busy or done
sends nothing. One retry; a failure is one warning and leaves the exit code
alone. The URL is never printed whole.`,
		"ping-timeout": `Give up on a ping, its retry included, after DUR: the exit
waits at most this long for the end ping.`,
		"ping-skips": `With \-\-ping, also POST a line to
.IB URL /log
for a run refused as busy or done.`,
		"ping-output": `With \-\-ping, the end ping is a POST whose body is the last N KiB of the
command's stdout and stderr, byte for byte (at most 1024;
healthchecks.io keeps 100 KB of it). 0 sends none: a GET, for output that
must not leave the host. At a terminal the command keeps it, and nothing is
sent.`,
	}
}
