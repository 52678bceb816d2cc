package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	withlock "github.com/with-lock/with-lock"
	"golang.org/x/sys/unix"
)

// --metrics-dir: at the end of every run with-lock writes
// DIR/with-lock-<name>.prom for node_exporter's textfile collector. The
// samples carry no timestamps (the collector refuses them); the counters
// and the last success are carried over from the file the previous run on
// this host wrote, so the file is also the only state this needs.

// runMetrics is one lock's metrics on this host after a run.
type runMetrics struct {
	lock, host   string
	start, end   time.Time
	held, waited time.Duration
	exitCode     int
	outcome      string
	lastSuccess  float64            // Unix seconds; 0: no success known on this host
	runs         map[string]float64 // with_lock_runs_total by outcome
	waitTotal    float64            // with_lock_wait_seconds_total
	success      successMetrics     // this host's last success's duration, and the successes before it
}

// successMetrics are the gauges that judge a success's duration, as
// --check --duration-outlier does (durations.go): how long this host's last
// success held the lock, and how long the successes before it took, by
// the name's history in Redis (every host's). An alert compares the first
// with the median.
type successMetrics struct {
	known bool    // a run succeeded on this host; else none of these is written
	took  float64 // with_lock_last_success_duration_seconds
	// The successes the history kept from before it: how many, and the
	// shortest, median and longest duration; NaN when there were none,
	// which no comparison in an alert's expression is true of.
	prior                    float64
	priorMin, median, maxDur float64
}

// newSuccessMetrics is the gauges of a success that held the lock for held,
// against the successes before it (prior).
func newSuccessMetrics(held time.Duration, prior durationRange) successMetrics {
	m := successMetrics{known: true, took: held.Seconds(), prior: float64(prior.n),
		priorMin: math.NaN(), median: math.NaN(), maxDur: math.NaN()}
	if prior.n > 0 {
		m.priorMin, m.median, m.maxDur = prior.min.Seconds(), prior.median.Seconds(), prior.max.Seconds()
	}
	return m
}

// newRunMetrics is what the run that began at begun, ended at end as res
// says, says of itself; prior is the range of the successes before it, for
// a success (priorForMetrics).
func (r *runner) newRunMetrics(res result, begun, end time.Time, prior durationRange) *runMetrics {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	m := &runMetrics{lock: r.cfg.Name, host: host, start: begun, end: end, exitCode: res.code, outcome: res.outcome,
		runs: map[string]float64{}}
	if res.acquired.IsZero() {
		m.waited = end.Sub(begun)
	} else {
		m.waited, m.held = res.acquired.Sub(begun), end.Sub(res.acquired)
	}
	if res.outcome == outcomeOK {
		m.success = newSuccessMetrics(m.held, prior)
	}
	return m
}

// priorForMetrics is, for a run that succeeded, the range of the successes
// that the name's history kept from before it took the lock: one LRANGE,
// after the release. A run not recorded has none to read; a history that
// cannot be read is a warning, and a range of none. locker is nil when
// the run ended before it connected.
func (r *runner) priorForMetrics(res result, locker *withlock.Client) durationRange {
	if res.outcome != outcomeOK || r.cfg.NoRecord || r.cfg.HistorySize == 0 || locker == nil {
		return durationRange{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	runs, err := locker.History(ctx, r.cfg.Name, 0)
	if err != nil {
		r.log.warn("warning", fields{}, "the metrics of %s say nothing of the successes before this one: %s", r.cfg.Name, r.inUserWords(err))
		return durationRange{}
	}
	return successRange(runs, res.acquired, nil)
}

// writeMetrics writes the run's metrics file; a failure is one warning and
// changes nothing else.
func (r *runner) writeMetrics(res result, begun, end time.Time, prior durationRange) {
	m := r.newRunMetrics(res, begun, end, prior)
	if err := writeMetricsFile(r.cfg.MetricsDir, m); err != nil {
		r.log.warn("warning", fields{}, "metrics of %s not written: %v (--metrics-dir)", r.cfg.Name, metricsDirError(r.cfg.MetricsDir, err))
	}
}

// metricsDirError says, for a directory this user may not write to, which
// user that is: a crontab's runs are not root's, and node_exporter's
// directory often is.
func metricsDirError(dir string, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	name := strconv.Itoa(os.Geteuid())
	if u, uerr := user.LookupId(name); uerr == nil {
		name = u.Username + " (uid " + name + ")"
	}
	return fmt.Errorf("%w; %s may not write to %s: give it the directory, or a directory of its own", err, name, dir)
}

// writeMetricsFile adds m to what the lock's file in dir says and replaces
// the file, atomically: a temporary file in dir, renamed over it, so the
// collector never reads half a file. An flock on a hidden file beside it
// keeps runs of the same name on this host from losing each other's counts.
func writeMetricsFile(dir string, m *runMetrics) error {
	path := filepath.Join(dir, metricsFileName(m.lock))
	unlock, err := lockMetrics(filepath.Join(dir, "."+strings.TrimSuffix(filepath.Base(path), ".prom")+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	prev, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // counting from zero again would reset the counters
	}
	m.carry(prev)
	// Not "*.prom": the collector reads only those, so never this one.
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // once renamed, nothing is left to remove
	_, err = tmp.Write(m.render())
	if err == nil {
		err = tmp.Chmod(0o644) // node_exporter runs as another user
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// metricsLockWait bounds the wait for another run's write of the same file:
// a write takes milliseconds, and a job must never hang on its metrics.
const metricsLockWait = 2 * time.Second

// lockMetrics takes an exclusive flock on path and returns its release.
func lockMetrics(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(metricsLockWait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the flock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("another with-lock kept %s locked for %s", path, metricsLockWait)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricsFileName is the file of lock name: with-lock-<name>.prom, with
// every byte other than letters, digits, '.', '_' and '-' made '_'. A name
// that had to change, or is long, gets a digest of itself, so that "a/b"
// and "a_b" keep files of their own.
func metricsFileName(name string) string {
	safe := []byte(name)
	changed := len(name) > 100
	for i, c := range safe {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			safe[i], changed = '_', true
		}
	}
	if !changed {
		return "with-lock-" + name + ".prom"
	}
	sum := sha256.Sum256([]byte(name))
	return "with-lock-" + string(safe[:min(len(safe), 100)]) + "-" + hex.EncodeToString(sum[:4]) + ".prom"
}

// carry adds to m what the previous file of its lock says: the counters,
// and the last success and its duration unless this run is one. Lines it
// does not know are ignored; a missing file (nil) is a first run.
func (m *runMetrics) carry(prev []byte) {
	var success successMetrics // the previous file's
	sc := bufio.NewScanner(bytes.NewReader(prev))
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(line[:sp], "{")
		switch name {
		case "with_lock_runs_total":
			// The outcome is the last label; a quote inside the lock's
			// name is escaped, so `outcome="` cannot come from it.
			if i := strings.LastIndex(line[:sp], `outcome="`); i >= 0 {
				o, _, _ := strings.Cut(line[i+len(`outcome="`):sp], `"`)
				m.runs[o] += v
			}
		case "with_lock_wait_seconds_total":
			m.waitTotal += v
		case "with_lock_last_success_timestamp_seconds":
			m.lastSuccess = max(m.lastSuccess, v)
		case "with_lock_last_success_duration_seconds":
			success.known, success.took = true, v
		case "with_lock_prior_successes":
			success.prior = v
		case "with_lock_prior_success_duration_min_seconds":
			success.priorMin = v
		case "with_lock_prior_success_duration_median_seconds":
			success.median = v
		case "with_lock_prior_success_duration_max_seconds":
			success.maxDur = v
		}
	}
	if m.outcome != outcomeOK {
		m.success = success
	}
	m.runs[m.outcome]++
	m.waitTotal += m.waited.Seconds()
	if m.outcome == outcomeOK {
		m.lastSuccess = unixSeconds(m.end)
	}
}

// render is m in the Prometheus text format, as node_exporter's textfile
// collector reads it: # HELP and # TYPE before each family, no timestamps.
func (m *runMetrics) render() []byte { return m.renderFor(false) }

// renderFor is render; for a Pushgateway (push), without the counters
// (each push replaces the last, so nothing would count) and without the
// last success unless this run is one, which leaves the last success
// pushed in place (metrics_push.go).
func (m *runMetrics) renderFor(push bool) []byte {
	var b bytes.Buffer
	labels := `lock="` + escapeLabel(m.lock) + `",host="` + escapeLabel(m.host) + `"`
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name, extra string, v float64) {
		fmt.Fprintf(&b, "%s{%s%s} %s\n", name, labels, extra, strconv.FormatFloat(v, 'f', -1, 64))
	}
	one := func(name, typ, help string, v float64) {
		family(name, typ, help)
		sample(name, "", v)
	}
	one("with_lock_last_run_start_timestamp_seconds", "gauge",
		"When the last run of the lock on this host began, before acquiring it, in Unix seconds.", unixSeconds(m.start))
	one("with_lock_last_run_end_timestamp_seconds", "gauge",
		"When the last run of the lock on this host ended, after releasing it, in Unix seconds.", unixSeconds(m.end))
	one("with_lock_last_run_duration_seconds", "gauge",
		"How long the last run held the lock, from acquiring to releasing it; 0 when the command was not run.", m.held.Seconds())
	one("with_lock_last_run_wait_seconds", "gauge",
		"How long the last run spent acquiring the lock, or trying to.", m.waited.Seconds())
	one("with_lock_last_run_exit_code", "gauge",
		"with-lock's exit code for the last run: the command's, or with-lock's own when the command was not run.", float64(m.exitCode))
	family("with_lock_last_run_outcome", "gauge", "How the last run ended: 1 for its outcome, 0 for the others.")
	for _, o := range outcomes {
		sample("with_lock_last_run_outcome", `,outcome="`+o+`"`, bool01(o == m.outcome))
	}
	if push {
		if m.outcome == outcomeOK {
			one("with_lock_last_success_timestamp_seconds", "gauge",
				"When a run of the lock last succeeded (exit 0), in Unix seconds.", unixSeconds(m.end))
			m.success.render(one)
		}
		return b.Bytes()
	}
	one("with_lock_last_success_timestamp_seconds", "gauge",
		"When a run of the lock last succeeded (exit 0) on this host, in Unix seconds; 0 if it never did.", m.lastSuccess)
	m.success.render(one)
	family("with_lock_runs_total", "counter", "Runs of the lock on this host by outcome.")
	for _, o := range outcomes {
		sample("with_lock_runs_total", `,outcome="`+o+`"`, m.runs[o])
	}
	one("with_lock_wait_seconds_total", "counter", "Time the runs of the lock on this host spent acquiring it.", m.waitTotal)
	return b.Bytes()
}

// render writes s's gauges with one, nothing when no success is known.
func (s *successMetrics) render(one func(name, typ, help string, v float64)) {
	if !s.known {
		return
	}
	one("with_lock_last_success_duration_seconds", "gauge",
		"How long the last success of the lock held it, from acquiring to releasing it.", s.took)
	one("with_lock_prior_successes", "gauge",
		"How many successes of the lock, on any host, its history in Redis kept from before the last success: what the with_lock_prior_success_duration gauges summarise.", s.prior)
	for _, g := range []struct {
		name, what string
		v          float64
	}{{"min", "shortest", s.priorMin}, {"median", "median", s.median}, {"max", "longest", s.maxDur}} {
		one("with_lock_prior_success_duration_"+g.name+"_seconds", "gauge",
			"The "+g.what+" duration of the successes before the last success, by the history in Redis; NaN when there were none.", g.v)
	}
}

// escapeLabel escapes a label value for the text format.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
