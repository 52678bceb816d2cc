package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// --metrics-push URL: at the end of every run with-lock POSTs the run's
// metrics to a Prometheus Pushgateway, for where there is no textfile
// directory that lives longer than the run (a Kubernetes CronJob's pod).
// The group is job="with-lock" and the lock's name (base64url in the
// path, so any name fits): every run of the lock, wherever it ran,
// replaces the last one's gauges there, and the host label says where it
// ran. POST, not PUT, replaces only the families pushed: a run that
// failed pushes no last success, so the one pushed before stays. Counters
// are not pushed (each push replaces the last); alert on the last
// success's age, as docs/monitoring.md does.
//
// A run that skipped the job (busy, paused, its --once-per window done)
// pushes nothing: the group is the lock's last run, and a skip, which
// ran nothing, would replace the gauges of the run that did the work
// with an exit code and a duration of its own. It gets no group of its
// own either: one beside the lock's would give every query of it two
// series, and one per host (a pod's name, new every run) would grow
// without end, as a Pushgateway keeps every group until it is deleted.
// A run that could not run the job (an error: Redis unreachable, the
// command not found) is pushed: it is the lock's last run, and it
// failed.

// metricsPushTimeout bounds the push: a Pushgateway that does not answer
// must not keep the run's exit waiting.
const metricsPushTimeout = 5 * time.Second

// pushMetrics pushes the run's metrics; a failure is one warning and
// changes nothing else.
func (r *runner) pushMetrics(res result, begun, end time.Time, prior durationRange) {
	if skipped(res.outcome) {
		r.log.info("metrics", fields{}, "metrics of %s not pushed: the run was %s, and the last one that ran stays (--metrics-push)", r.cfg.Name, res.outcome)
		return
	}
	m := r.newRunMetrics(res, begun, end, prior)
	if err := pushMetricsTo(r.cfg.MetricsPush, m); err != nil {
		r.log.warn("warning", fields{}, "metrics of %s not pushed: %v (--metrics-push)", r.cfg.Name, err)
	}
}

// pushURL is the Pushgateway group of lock name at base.
func pushURL(base, name string) string {
	return strings.TrimSuffix(base, "/") + "/metrics/job/with-lock/lock@base64/" +
		base64.RawURLEncoding.EncodeToString([]byte(name))
}

func pushMetricsTo(base string, m *runMetrics) error {
	ctx, cancel := context.WithTimeout(context.Background(), metricsPushTimeout)
	defer cancel()
	url := pushURL(base, m.lock)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.renderFor(true)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s answered %s: %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
