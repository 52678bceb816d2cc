//go:build cronfleet

package cronfleet

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// cronLine is one job line of the README's crontab block.
type cronLine struct {
	text     string
	schedule []string // minute, hour, day of month, month, day of week
	args     []string // with-lock's arguments, as the line gives them
	job      string   // the job's path, the first absolute path in args
	window   *withlock.Window
}

// readmeCrontab returns the README's crontab block, the first code block of
// its "Cron and systemd" section, and its job lines.
func readmeCrontab(t *testing.T) (string, []cronLine) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Cron and systemd\n")
	_, block, ok2 := strings.Cut(section, "\n```\n")
	block, _, ok3 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no code block under \"## Cron and systemd\"")
	}
	block += "\n"
	var lines []cronLine
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "=") {
			continue
		}
		if len(f) < 7 || f[5] != "with-lock" {
			t.Fatalf("README crontab line %q: want five schedule fields, then with-lock and its arguments", sc.Text())
		}
		l := cronLine{text: sc.Text(), schedule: f[:5], args: f[6:]}
		for i, a := range l.args {
			switch {
			case strings.HasPrefix(a, "/") && l.job == "":
				l.job = a
			case a == "--once-per" && i+1 < len(l.args):
				l.window = &withlock.Window{Every: duration(t, l.args[i+1])}
			case a == "--once-per-offset" && i+1 < len(l.args) && l.window != nil:
				l.window.Offset = duration(t, l.args[i+1])
			}
		}
		if !strings.HasPrefix(l.job, "/opt/") {
			t.Fatalf("README crontab line %q: the test-bed stands in for jobs under /opt only", l.text)
		}
		lines = append(lines, l)
	}
	return block, lines
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("README crontab: %v", err)
	}
	return d
}

// name is the job's file name, which its stand-in records.
func (l *cronLine) name() string { return l.job[strings.LastIndexByte(l.job, '/')+1:] }

// firesAt tells whether cron fires the line at the minute t (UTC).
func (l *cronLine) firesAt(t time.Time) bool {
	for i, v := range []int{t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday())} {
		if !fieldMatches(l.schedule[i], v) {
			return false
		}
	}
	return true
}

// fieldMatches reads the crontab field forms the README uses: *, */N, N,
// A-B and lists of them.
func fieldMatches(field string, v int) bool {
	for _, part := range strings.Split(field, ",") {
		rng, step, _ := strings.Cut(part, "/")
		lo, hi := 0, 59
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			lo, _ = strconv.Atoi(a)
			hi = lo
			if isRange {
				hi, _ = strconv.Atoi(b)
			}
		}
		n := 1
		if step != "" {
			n, _ = strconv.Atoi(step)
		}
		if v >= lo && v <= hi && n > 0 && (v-lo)%n == 0 {
			return true
		}
	}
	return false
}

// host is one server of the fleet: its name and how far its clock is ahead
// of the shared one, Redis's.
type host struct {
	name string
	skew time.Duration
}

// fleet is three hosts whose clocks are 5 s apart: one ahead of Redis, one
// on it, one behind.
var fleet = []host{{"host1", 5 * time.Second}, {"host2", 0}, {"host3", -5 * time.Second}}

// plan is when the fleet runs and what it is expected to do.
type plan struct {
	// cronAhead is how far every cron's clock is set ahead of the shared
	// clock, before its host's skew: the README's nightly line fires at
	// night whatever time the test runs, and the shared clock, Redis's, is
	// the machine's own (libfaketime cannot move a redis-server, whose
	// jemalloc recurses into its clock at start-up). Whole multiples of
	// five minutes, so minutes and five-minute slots line up with Redis's
	// as on a real fleet.
	cronAhead time.Duration
	start     time.Time                 // when the crons start, a little before the first slot
	slots     []time.Time               // the minutes (shared clock) at which cron fires
	fires     map[string][]int64        // job -> Unix seconds of the slots its line fires in
	fails     map[string]map[int64]bool // job -> the slots whose first attempt fails
	until     time.Time                 // when the fleet is stopped
}

// planFleet places the night: the next five-minute boundary of the shared
// clock at least 35 s ahead becomes 02:00 for the crons, which start 15 s
// before the first minute at least 30 s ahead (time to set the fleet up),
// and the fleet runs until at least three minutes have fired and the night
// has passed. A night whose
// fires would straddle the edge of a line's --once-per window by the shared
// clock moves on by five minutes: only the nightly line's windows, which the
// test cannot align with cron's 02:00, can do so, as the others' edges lie
// half a period from cron's minutes. A line whose every fire straddles one
// (its windows' edges on cron's minutes) fails the test.
func planFleet(t *testing.T, lines []cronLine, now time.Time) plan {
	t.Helper()
	first := now.Add(30 * time.Second).Truncate(time.Minute).Add(time.Minute)
	night := now.Add(35 * time.Second).Truncate(5 * time.Minute).Add(5 * time.Minute)
	for try := 0; try < 24*12; try, night = try+1, night.Add(5*time.Minute) {
		p := plan{start: first.Add(-15 * time.Second), fires: map[string][]int64{}, fails: map[string]map[int64]bool{}}
		day := night.UTC().Truncate(24 * time.Hour)
		p.cronAhead = day.Add(2 * time.Hour).Sub(night)
		last := first.Add(2 * time.Minute)
		if night.After(last) {
			last = night
		}
		for s := first; !s.After(last); s = s.Add(time.Minute) {
			p.slots = append(p.slots, s)
		}
		p.until = last.Add(30 * time.Second)
		straddles := false
		for _, l := range lines {
			for _, s := range p.slots {
				if !l.firesAt(s.Add(p.cronAhead).UTC()) {
					continue
				}
				if l.window != nil && !l.window.At(s.Add(-15*time.Second)).Start.Equal(l.window.At(s.Add(20*time.Second)).Start) {
					straddles = true
				}
				p.fires[l.name()] = append(p.fires[l.name()], s.Unix())
			}
		}
		if straddles {
			continue
		}
		// A line's job fails once in its last window, and every second
		// one before it: failures and retries, and clean runs between.
		for job, fires := range p.fires {
			p.fails[job] = map[int64]bool{}
			for i := len(fires) - 1; i >= 0; i -= 2 {
				p.fails[job][fires[i]] = true
			}
		}
		return p
	}
	t.Fatal("every fire of a README crontab line straddles the edge of its --once-per window: " +
		"hosts a few seconds apart would put one run in two windows")
	return plan{}
}
