package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// What hold (hold.go) says, in the order a run may say it. Renewals' own
// reports are in renewals.go.

// sayExited says, with -v, how the command ended and after how long, and
// what follows the rest of its job.
func (h *holding) sayExited(code int) {
	r, child := h.r, h.child
	took := time.Since(child.Started())
	f := fields{Code: &code, DurationMs: ms(took), Tracking: child.Tracking()}
	if sig, ok := child.KilledBy(); ok {
		f.Signal = signalName(sig)
		r.log.info("exited", f, "command killed by %s after %s (exit %d; its job followed by %s)", f.Signal, round(took), code, f.Tracking)
		return
	}
	r.log.info("exited", f, "command exited with code %d after %s (its job followed by %s)", code, round(took), f.Tracking)
}

// sayStoppingLeftovers says, with -v, that --leftovers kill stops what the
// command that exited with code left running.
func (h *holding) sayStoppingLeftovers(code int, left []int) {
	r := h.r
	n, pids := processes(left)
	r.log.info("leftovers", fields{Code: &code}, "command exited %d; stopping its %s (%s; %s, SIGKILL after %s: --leftovers kill)",
		code, n, pids, signalName(r.cfg.StopWith()), r.cfg.KillAfter)
}

// sayLeftovers warns that the lock is held until what the command left
// running ends (--leftovers wait); under --output-on-failure only if the
// run then fails (heldLog).
func (h *holding) sayLeftovers(code int, left []int) {
	r := h.r
	n, pids := processes(left)
	h.out.heldLog(r.log).warn("leftovers", fields{Code: &code}, "command exited %d; holding %s until its %s %s (%s; --leftovers kill would stop %s)%s",
		code, h.lock.Key(), n, plural(len(left), "ends", "end"), pids, plural(len(left), "it", "them"), pid1Note())
}

// pid1Note adds, where with-lock is PID 1 (a container's entrypoint), that
// the container waits too: it ends with its PID 1, whose exit would have
// the kernel SIGKILL what is left, still running, before the lock is
// released.
func pid1Note() string {
	if os.Getpid() != 1 {
		return ""
	}
	return "; as PID 1 it keeps the container running until then"
}

// sayTimedOut says that --max-run ran out and the job is being stopped.
func (h *holding) sayTimedOut() {
	r := h.r
	r.log.error("timed_out", fields{DurationMs: ms(r.cfg.MaxRun)}, "job still running after --max-run %s; stopping it (%s, SIGKILL after %s), exit %d",
		r.cfg.MaxRun, signalName(r.cfg.StopWith()), r.cfg.KillAfter, exitTimedOut)
}

// sayStopTimeoutBegins says, with -v, that the job has --stop-timeout to
// end after the stop signal sig.
//
// --stop-timeout: a job told to stop by a signal with-lock forwarded
// (systemctl stop, a pod's termination, Ctrl-C) that is still running DUR
// later is killed whole with SIGKILL, and the lock released as its last
// process ends, rather than held until systemd or the kubelet kills
// with-lock too and the key expires by itself. Without it with-lock waits
// for the job, however long it takes.
func (h *holding) sayStopTimeoutBegins(sig syscall.Signal) {
	r := h.r
	d := r.cfg.StopTimeout
	r.log.info("stopping", fields{Signal: signalName(sig), DurationMs: ms(d)},
		"forwarded %s to the job; SIGKILL in %s unless it has ended (--stop-timeout)", signalName(sig), d)
}

// sayStopTimeoutRanOut warns that the job did not end within
// --stop-timeout of the stop signal sig, and is killed.
func (h *holding) sayStopTimeoutRanOut(sig syscall.Signal) {
	r := h.r
	d := r.cfg.StopTimeout
	r.log.warn("stop_timeout", fields{Signal: signalName(sig), DurationMs: ms(d)},
		"job still running --stop-timeout %s after %s; killing it (SIGKILL) to release the lock", d, signalName(sig))
}

// sayAbandoned warns that the processes left did not die of SIGKILL
// within killGrace, and that the hold ends without them.
func (h *holding) sayAbandoned(left []int) {
	r := h.r
	n, pids := processes(left)
	r.log.warn("warning", fields{}, "%s of the job still there %s after SIGKILL (%s); leaving them", n, killGrace, pids)
}

// processes says how many processes pids are, "2 remaining processes",
// and lists them, "pids 4711, 4712", at most a few.
func processes(pids []int) (count, list string) {
	const show = 5
	var b strings.Builder
	for i, pid := range pids[:min(len(pids), show)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(pid))
	}
	if len(pids) > show {
		b.WriteString(", …")
	}
	if len(pids) == 1 {
		return "1 remaining process", "pid " + b.String()
	}
	return fmt.Sprintf("%d remaining processes", len(pids)), "pids " + b.String()
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sayLost says why the lock was lost and what follows: the command goes
// on (--on-lost ignore) or is being stopped.
func (h *holding) sayLost() {
	r := h.r
	why, f := h.lostReason()
	why += h.notReacquired()
	if r.cfg.OnLost == config.OnLostIgnore {
		r.log.error("lost", f, "%s; --on-lost ignore: the command goes on without the lock", why)
		return
	}
	r.log.error("lost", f, "%s; stopping the command (%s, SIGKILL after %s), exit %d",
		why, signalName(r.cfg.StopWith()), r.cfg.KillAfter, exitLockLost)
}

// lostReason says exactly why the lock was lost, and the fields of the
// "lost" event, judged by this host's clock:
//   - Redis did not answer renewals until the key could have expired:
//     "Redis unreachable for longer than the TTL allows";
//   - --break removed it (the marker it leaves names the breaker):
//     "broken by host:pid with --break"; a broken lock is not taken again
//     by --on-lost reacquire, as breaking is an operator's decision;
//   - --replace asked it to stop (the marker names the replacer):
//     "replaced by host:pid with --replace"; the lock stays renewed while
//     the job stops, and its release hands it to the replacer;
//   - no renewal was even tried in time (with-lock was paused or starved):
//     taken over by host:pid if Redis says so, else "it expired";
//   - Redis said the lock is no longer ours: taken over by host:pid if
//     another owner holds it; else the key is gone, and it "expired" only
//     when the renewal that found it gone came within twice the margin of
//     the TTL (a clock running faster on Redis could then explain it);
//     earlier, the key "vanished": a restart without persistence, a
//     FLUSHALL, a DEL or --break, a failover to a replica that lacked it,
//     or, on a server whose maxmemory-policy may evict it (of which the
//     run warned), an eviction, which is then named.
func (h *holding) lostReason() (string, fields) {
	r, lock, err := h.r, h.lock, h.ka.Err()
	ttl := r.cfg.TTL
	lastOK, lastSent, margin := h.renew.snapshot()
	var lerr *withlock.LostError
	if errors.As(err, &lerr) && lerr.ReplacedBy != "" {
		return fmt.Sprintf("lock %s lost: replaced by %s with --replace", lock.Key(), lerr.ReplacedBy), fields{}
	}
	if errors.As(err, &lerr) && lerr.Err != nil && !errors.Is(err, withlock.ErrLockNotHeld) {
		// The job is being stopped already; asking Redis now would only
		// wait out another timeout.
		return fmt.Sprintf("lock %s presumed lost: Redis unreachable for longer than the TTL allows: no renewal succeeded for %s of its %s TTL (last attempt: %s)",
			lock.Key(), round(time.Since(lastOK)), ttl, r.inUserWords(lerr.Err)), fields{}
	}
	if errors.As(err, &lerr) && lerr.Promoted != "" {
		return fmt.Sprintf("lock %s lost: the sentinels are failing over to %s, which does not hold it (the replica had not received it: see --min-replicas)",
			lock.Key(), lerr.Promoted), fields{}
	}
	if errors.As(err, &lerr) && lerr.BrokenBy != "" {
		why := fmt.Sprintf("lock %s lost: broken by %s with --break", lock.Key(), lerr.BrokenBy)
		if r.cfg.OnLost == config.OnLostReacquire {
			why += " (a broken lock is not taken again)"
		}
		return why, fields{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	st, serr := r.locker.Status(ctx, r.cfg.Name)
	if serr == nil && st.Held {
		who := st.Holder.ID
		if s := since(st.Holder.Since, time.Now()); s != "" {
			who += " " + s
		}
		return fmt.Sprintf("lock %s lost: taken over by %s", lock.Key(), who), fields{Holder: st.Holder.ID, Since: rfc3339(st.Holder.Since)}
	}
	if !errors.Is(err, withlock.ErrLockNotHeld) {
		return fmt.Sprintf("lock %s lost: it expired: not renewed for %s of its %s TTL (was with-lock paused or starved of CPU?)",
			lock.Key(), round(time.Since(lastOK)), ttl), fields{}
	}
	if serr != nil {
		return fmt.Sprintf("lock %s lost: it expired or was taken over (asking Redis which failed: %s)", lock.Key(), r.inUserWords(serr)), fields{}
	}
	if lastSent.Sub(lastOK) >= ttl-2*margin {
		return fmt.Sprintf("lock %s lost: it expired: the renewal that found it gone came %s after the last success (TTL %s)",
			lock.Key(), round(lastSent.Sub(lastOK)), ttl), fields{}
	}
	early := round(max(lastOK.Add(ttl).Sub(lastSent), 0))
	if j := h.renew.jump(); j > 0 {
		return fmt.Sprintf("lock %s lost: the key expired %s before it was due by this host's clock: Redis's clock jumped %s ahead",
			lock.Key(), early, round(j)), fields{}
	}
	if policy := cmp.Or(st.EvictionPolicy, r.locker.EvictionPolicy()); policy != "" {
		// The run was warned of it already: the likeliest cause.
		return fmt.Sprintf("lock %s lost: the key vanished %s before it was due to expire (evicted? Redis may evict keys under memory pressure: maxmemory-policy %s; set noeviction)",
			lock.Key(), early, policy), fields{}
	}
	return fmt.Sprintf("lock %s lost: the key vanished %s before it was due to expire (Redis restarted or flushed, or the key deleted?)",
		lock.Key(), early), fields{}
}

// notReacquired says, with --on-lost reacquire, why a lock that Redis said
// is no longer ours was not taken again: someone held its key. It is ""
// otherwise, and after a break, which lostReason explains.
func (h *holding) notReacquired() string {
	r, err := h.r, h.ka.Err()
	var lerr *withlock.LostError
	if r.cfg.OnLost != config.OnLostReacquire || !errors.As(err, &lerr) ||
		lerr.BrokenBy != "" || !errors.Is(err, withlock.ErrLockNotHeld) {
		return ""
	}
	return " (--on-lost reacquire takes back only a key nobody holds)"
}
