package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// --check <name>: the fleet-wide records of a lock judged as a monitoring
// plugin (Nagios, Icinga, Sensu, Zabbix and friends), with their exit codes
// and one line on stdout: "WITH-LOCK OK - nightly-report succeeded on db1
// 3h12m ago in 4m10s".

// The plugin convention's exit codes, which --check uses and no other.
const (
	checkOK       = 0
	checkWarning  = 1
	checkCritical = 2
	checkUnknown  = 3
)

var checkStates = [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}

// verdict is what --check concludes.
type verdict struct {
	code int
	msg  string
}

// checkJSON is --check --json's output: the verdict and what it was drawn
// from.
type checkJSON struct {
	Status      string         `json:"status"` // OK, WARNING, CRITICAL, UNKNOWN
	Code        int            `json:"code"`
	Message     string         `json:"message"` // the verdict's message, without "WITH-LOCK <status> - "
	Name        string         `json:"name"`
	Key         string         `json:"key,omitempty"`
	AgeSeconds  *float64       `json:"last_success_age_seconds,omitempty"`
	LastRun     *runJSON       `json:"last_run,omitempty"`
	LastSuccess *runJSON       `json:"last_success,omitempty"`
	Running     *checkRunning  `json:"running,omitempty"`
	Thresholds  checkThreshold `json:"thresholds"`
	// EvictionPolicy: the server may evict the lock (eviction.go), which
	// makes the verdict at least WARNING.
	EvictionPolicy string `json:"eviction_policy,omitempty"`
	// Paused: --pause's, which makes the verdict at least WARNING.
	Paused *pauseJSON `json:"paused,omitempty"`
	// PriorSuccesses: how long the successes before the last took, as
	// --duration-outlier judges it (durations.go); read with a duration
	// judgement only.
	PriorSuccesses *durationsJSON `json:"prior_successes,omitempty"`
}

type checkRunning struct {
	Holder string     `json:"holder"`
	Since  *time.Time `json:"since,omitempty"`
}

type checkThreshold struct {
	MaxAgeSeconds    float64 `json:"max_age_seconds,omitempty"`
	WarnAgeSeconds   float64 `json:"warn_age_seconds,omitempty"`
	RunningOKSeconds float64 `json:"running_ok_seconds,omitempty"`
	MinDurationSecs  float64 `json:"min_duration_seconds,omitempty"`
	MaxDurationSecs  float64 `json:"max_duration_seconds,omitempty"`
	DurationOutlier  bool    `json:"duration_outlier,omitempty"`
}

// check reads the lock's records and prints the verdict; its exit code is
// the verdict's. Redis unreachable or refusing is UNKNOWN: nothing is
// known of the job then.
func (r *runner) check() int {
	var st *withlock.Status
	var prior durationRange
	locker, closeRedis, err := newLocker(r.cfg)
	if err == nil {
		defer closeRedis()
		ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.RedisTimeout)
		defer cancel()
		st, err = locker.Status(ctx, r.cfg.Name)
		if err == nil && r.judgesDuration() && lastSuccess(st) != nil {
			prior, err = priorSuccesses(ctx, locker, r.cfg.Name, lastSuccess(st))
		}
	}
	v := verdict{checkUnknown, ""}
	switch {
	case err != nil && redisExit(err) == exitUnavailable:
		v.msg = "Redis unreachable: " + r.inUserWords(err)
	case err != nil:
		v.msg = "cannot read the records: " + r.inUserWords(err)
	default:
		v = mayEvict(whilePaused(r.judge(st, prior, time.Now()), st), st) // pause.go
	}
	if !r.cfg.JSON {
		fmt.Printf("WITH-LOCK %s - %s\n", checkStates[v.code], escapeBreaks(v.msg))
		return v.code
	}
	if err := printJSON(r.checkJSON(v, st, prior, time.Now())); err != nil {
		fmt.Printf("WITH-LOCK UNKNOWN - %v\n", err)
		return checkUnknown
	}
	return v.code
}

// judge draws the verdict from the lock's records at now (a server that
// may evict the lock makes it at least WARNING: mayEvict):
//   - a run going on for less than --running-ok is OK;
//   - a last run that failed, or lost the lock, is CRITICAL;
//   - no success kept, or none within --max-age, is CRITICAL;
//   - none within --warn-age is WARNING;
//   - else OK;
//   - and then the last success's duration, against the thresholds and
//     the successes before it (prior): judgeDuration.
func (r *runner) judge(st *withlock.Status, prior durationRange, now time.Time) verdict {
	name := r.cfg.Name
	if ok := r.cfg.RunningOK; ok > 0 && st.Held && !st.KeptByMinHold && !st.Holder.Since.IsZero() && now.Sub(st.Holder.Since) < ok {
		host, _ := splitHolder(st.Holder.ID)
		return verdict{checkOK, fmt.Sprintf("%s running on %s for %s (--running-ok %s)", name, host, age(now.Sub(st.Holder.Since)), age(ok))}
	}
	success := lastSuccess(st)
	if run := st.LastRun; run != nil && !succeeded(run) {
		host, _ := splitHolder(run.Holder)
		how := fmt.Sprintf("exit %d", run.ExitCode)
		switch {
		case run.Lost:
			how += ", lock lost"
		case run.Outcome == outcomeTimedOut:
			how += ", stopped by --max-run"
		}
		msg := fmt.Sprintf("last run of %s failed on %s (%s) %s ago", name, host, how, age(now.Sub(run.Finished)))
		if success != nil {
			shost, _ := splitHolder(success.Holder)
			msg += fmt.Sprintf("; last success on %s %s ago", shost, age(now.Sub(success.Finished)))
		}
		return verdict{checkCritical, msg}
	}
	if success == nil {
		return verdict{checkCritical, fmt.Sprintf("no run of %s recorded (records are kept for --record-ttl)", name)}
	}
	host, _ := splitHolder(success.Holder)
	ago := now.Sub(success.Finished)
	v := verdict{checkOK, fmt.Sprintf("%s succeeded on %s %s ago in %s", name, host, age(ago), age(success.Finished.Sub(success.Started)))}
	switch {
	case r.cfg.MaxAge > 0 && ago > r.cfg.MaxAge:
		v = verdict{checkCritical, fmt.Sprintf("no success of %s for %s (--max-age %s); last on %s", name, age(ago), age(r.cfg.MaxAge), host)}
	case r.cfg.WarnAge > 0 && ago > r.cfg.WarnAge:
		v = verdict{checkWarning, fmt.Sprintf("no success of %s for %s (--warn-age %s); last on %s", name, age(ago), age(r.cfg.WarnAge), host)}
	}
	return r.judgeDuration(v, v.code == checkOK, success, prior)
}

// judgesDuration reports whether --check judges the last success's
// duration: --min-duration, --max-duration or --duration-outlier.
func (r *runner) judgesDuration() bool {
	return r.cfg.MinDuration > 0 || r.cfg.MaxDuration > 0 || r.cfg.DurationOutlier
}

// priorSuccesses reads the history of name for the range of the successes
// recorded before success.
func priorSuccesses(ctx context.Context, locker *withlock.Client, name string, success *withlock.Run) (durationRange, error) {
	runs, err := locker.History(ctx, name, 0)
	if err != nil {
		return durationRange{}, err
	}
	return successRange(runs, success.Finished, success), nil
}

// judgeDuration is v, made worse when the last success's duration is out
// of bounds: CRITICAL under --min-duration or over --max-duration, WARNING
// for --duration-outlier (durations.go), its message saying why and how
// long the successes before it (prior) took; and how long the success
// took, unless v's message says so (said).
func (r *runner) judgeDuration(v verdict, said bool, success *withlock.Run, prior durationRange) verdict {
	if !r.judgesDuration() {
		return v
	}
	took := success.Finished.Sub(success.Started)
	code, why := checkOK, ""
	switch {
	case r.cfg.MinDuration > 0 && took < r.cfg.MinDuration:
		code, why = checkCritical, "under --min-duration "+age(r.cfg.MinDuration)
	case r.cfg.MaxDuration > 0 && took > r.cfg.MaxDuration:
		code, why = checkCritical, "over --max-duration "+age(r.cfg.MaxDuration)
	case r.cfg.DurationOutlier && prior.outlier(took) == "under":
		code, why = checkWarning, "under a third of its usual time (--duration-outlier)"
	case r.cfg.DurationOutlier && prior.outlier(took) == "over":
		code, why = checkWarning, fmt.Sprintf("over %d times its usual time (--duration-outlier)", outlierFactor)
	}
	v.code = max(v.code, code)
	if why != "" && !said {
		why = fmt.Sprintf("it took %s, %s", age(took), why)
	}
	switch {
	case why != "" && prior.n > 0:
		v.msg += fmt.Sprintf("; %s: the %s before it took %s", why, successes(prior.n), prior)
	case why != "":
		v.msg += "; " + why
	case prior.n > 0:
		v.msg += fmt.Sprintf("; the %s before it took %s", successes(prior.n), prior)
	}
	if r.cfg.DurationOutlier && prior.n < outlierMinRuns {
		v.msg += fmt.Sprintf("; too few successes recorded before it to judge its duration (%d; --duration-outlier needs %d)",
			prior.n, outlierMinRuns)
	}
	return v
}

// mayEvict is v for a lock whose server may evict it (Status.EvictionPolicy):
// at least WARNING, its message saying so after the verdict's own.
func mayEvict(v verdict, st *withlock.Status) verdict {
	if st.EvictionPolicy == "" {
		return v
	}
	v.code = max(v.code, checkWarning)
	v.msg += "; " + evictionWords(st.Key, st.EvictionPolicy)
	return v
}

// lastSuccess is the newest run of the name that succeeded and that the
// records keep: Status.LastSuccess, or the last run when it succeeded (a
// record written before last successes were kept apart).
func lastSuccess(st *withlock.Status) *withlock.Run {
	if st.LastSuccess != nil {
		return st.LastSuccess
	}
	if run := st.LastRun; run != nil && succeeded(run) {
		return run
	}
	return nil
}

// succeeded reports whether run ended well: exit 0 with the lock held to
// the end, as its record's outcome says.
func succeeded(run *withlock.Run) bool { return run.Outcome == withlock.OutcomeOK }

func (r *runner) checkJSON(v verdict, st *withlock.Status, prior durationRange, now time.Time) checkJSON {
	out := checkJSON{Status: checkStates[v.code], Code: v.code, Message: v.msg, Name: r.cfg.Name,
		Thresholds: checkThreshold{r.cfg.MaxAge.Seconds(), r.cfg.WarnAge.Seconds(), r.cfg.RunningOK.Seconds(),
			r.cfg.MinDuration.Seconds(), r.cfg.MaxDuration.Seconds(), r.cfg.DurationOutlier},
		PriorSuccesses: newDurationsJSON(prior)}
	if st == nil {
		return out
	}
	out.Key, out.EvictionPolicy, out.Paused = st.Key, st.EvictionPolicy, newPauseJSON(st.Paused)
	if st.Held && !st.KeptByMinHold {
		out.Running = &checkRunning{Holder: st.Holder.ID}
		if !st.Holder.Since.IsZero() {
			out.Running.Since = &st.Holder.Since
		}
	}
	out.LastRun = newRunJSON(st.LastRun)
	if s := lastSuccess(st); s != nil {
		out.LastSuccess = newRunJSON(s)
		a := now.Sub(s.Finished).Seconds()
		out.AgeSeconds = &a
	}
	return out
}

// age is d as a person says it: "3h12m", "4m10s", "26h", "40m", "12s",
// "250ms".
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s" // another host's clock is ahead
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return units(int(d/time.Minute), "m", int(d%time.Minute/time.Second), "s")
	}
	d = d.Round(time.Minute)
	return units(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "m")
}

// units is "3h12m", or "26h" when the smaller unit is 0.
func units(big int, bigUnit string, small int, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d%s", big, bigUnit)
	}
	return fmt.Sprintf("%d%s%d%s", big, bigUnit, small, smallUnit)
}

// escapeBreaks keeps a message on one line.
func escapeBreaks(s string) string { return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s) }
