package supervise

import "errors"

// How a job may be followed (Options.Tracking).
const (
	// TrackingAuto takes the best the surroundings offer: under systemd a
	// scope of the job's own, or a group below with-lock's where its unit
	// delegated; elsewhere a group below with-lock's where it may make
	// one; else the subreaper (Linux), the reaper (FreeBSD) or the
	// process group.
	TrackingAuto = "auto"
	// TrackingScope asks systemd for a scope, and fails the run where
	// there is no manager to ask.
	TrackingScope = "scope"
	// TrackingCgroup makes a group below with-lock's own, under systemd
	// too (systemd's rules are then the user's to mind): no D-Bus round
	// trip.
	TrackingCgroup = "cgroup"
	// TrackingSubreaper follows the job by the subreaper alone.
	TrackingSubreaper = "subreaper"
)

// Limits are the job's resource limits, which need a cgroup of its own
// with the controllers they use (memory, cpu).
type Limits struct {
	MemoryMax       uint64 // bytes (memory.max, MemoryMax=); 0: none
	CPUQuotaPercent int    // percent of one CPU (cpu.max, CPUQuota=); 0: none
}

func (l Limits) set() bool { return l.MemoryMax > 0 || l.CPUQuotaPercent > 0 }

// ErrNoLimits is a job whose limits cannot be applied where it runs: no
// cgroup of its own, or no controller for them. Start refuses to run it.
var ErrNoLimits = errors.New("the job's limits cannot be applied here")

// ErrNoScope is --tracking scope where systemd gives none.
var ErrNoScope = errors.New("no systemd scope for the job")

// TrackingMode says in one word what followed the job: "scope", "cgroup",
// "subreaper", "reaper" (FreeBSD) or "process group", for the run's
// record.
func (c *Child) TrackingMode() string { return c.mode }
