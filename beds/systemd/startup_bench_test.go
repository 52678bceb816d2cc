package systemd_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/beds/testbed"
)

// trackingScript runs `with-lock --tracking MODE NAME true` in batches,
// each mode's batch after the others' in every round, and prints the mean
// wall time of one run of each batch in nanoseconds: "mode ns". Timing a
// batch inside the machine leaves nsenter's and systemd-run's own costs
// out; sh's fork and exec of with-lock are in every mode alike.
const trackingScript = `#!/bin/sh
rounds=$1 batch=$2; shift 2
for r in $(seq "$rounds"); do
	for mode in "$@"; do
		s=$(date +%s%N)
		i=0
		while [ $i -lt "$batch" ]; do
			if [ "$mode" = version ]; then /usr/bin/with-lock --version >/dev/null
			else /usr/bin/with-lock --tracking "$mode" "bench-$mode" true || exit 1; fi
			i=$((i+1))
		done
		e=$(date +%s%N)
		echo "$mode $(( (e - s) / batch ))"
	done
done
`

// BenchmarkStartUpByTrackingUnderSystemd is what each way of following the
// job costs a run's start-up under a real systemd: `with-lock x true` in a
// service, with a scope of the job's own (auto: a D-Bus round trip to
// systemd and its start of the scope), with a group below the service's
// (--tracking cgroup, against systemd's rules), and with the subreaper
// alone; and in a service that delegated (Delegate=yes), where auto makes
// the group below it, beside the subreaper alone there. It reports each
// mode's median in ms (make bench's "tracking" table).
func BenchmarkStartUpByTrackingUnderSystemd(b *testing.B) {
	bd := boot(b, testbed.BootOptions{})
	bd.WriteFile("/opt/bench/tracking.sh", trackingScript, 0o755)
	const rounds, batch = 15, 10
	times := map[string][]time.Duration{}
	for b.Loop() {
		for _, unit := range []struct {
			name, delegate string
			modes          []string
		}{
			{"", "no", []string{"auto", "cgroup", "subreaper", "version"}},
			{"delegated ", "yes", []string{"auto", "subreaper"}},
		} {
			out := "/tmp/tracking-" + unit.delegate + ".out"
			_, err := bd.Exec(10*time.Minute, append([]string{"systemd-run", "--wait", "--quiet", "--collect",
				"--property=Delegate=" + unit.delegate, "--property=StandardOutput=file:" + out,
				"--setenv=WITH_LOCK_REDIS=" + bd.URL(), "/opt/bench/tracking.sh", strconv.Itoa(rounds), strconv.Itoa(batch)}, unit.modes...)...)
			if err != nil {
				b.Fatalf("%v\n%s", err, bd.ReadFile(out))
			}
			for _, line := range strings.Split(strings.TrimSpace(bd.ReadFile(out)), "\n") {
				mode, ns, _ := strings.Cut(line, " ")
				n, err := strconv.ParseInt(ns, 10, 64)
				if err != nil {
					b.Fatalf("%q: %v", line, err)
				}
				times[unit.name+mode] = append(times[unit.name+mode], time.Duration(n))
			}
		}
	}
	for _, mode := range []string{"auto", "cgroup", "subreaper", "version", "delegated auto", "delegated subreaper"} {
		ds := slices.Clone(times[mode])
		slices.Sort(ds)
		if len(ds) == 0 {
			b.Fatalf("no times for %s", mode)
		}
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, strings.ReplaceAll(mode, " ", "-")+"-ms")
	}
	fmt.Printf("runs of each: %d rounds of %d\n", rounds, batch)
}
