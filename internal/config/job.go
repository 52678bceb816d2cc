package config

import (
	"fmt"
	"strconv"
	"strings"
)

// What --tracking can say: how the job's processes are followed.
const (
	TrackingAuto      = "auto"      // the best the surroundings offer
	TrackingScope     = "scope"     // a systemd scope of the job's own, or the run fails
	TrackingCgroup    = "cgroup"    // a group below with-lock's own, under systemd too
	TrackingSubreaper = "subreaper" // the subreaper alone (as --no-cgroup)
)

// Job is how the job is followed and what it may use.
type Job struct {
	Tracking  string // TrackingAuto, TrackingScope, TrackingCgroup or TrackingSubreaper
	MemoryMax string // --memory-max as given: "512M", "2G", bytes
	CPUQuota  string // --cpu-quota as given: "50%", "200%"

	MemoryMaxBytes  uint64 // MemoryMax in bytes, once validated; 0: none
	CPUQuotaPercent int    // CPUQuota in percent of one CPU, once validated; 0: none
}

// validateJob checks --tracking and the limits, and reads the limits.
func (c *Config) validateJob() error {
	switch c.Tracking {
	case TrackingAuto, TrackingScope, TrackingCgroup, TrackingSubreaper:
	default:
		return c.bad("tracking", "%q: expected %s, %s, %s or %s", c.Tracking, TrackingAuto, TrackingScope, TrackingCgroup, TrackingSubreaper)
	}
	if c.NoCgroup && c.Tracking != TrackingAuto && c.Tracking != TrackingSubreaper {
		return fmt.Errorf("%s and %s contradict each other", c.origin("no-cgroup"), c.origin("tracking"))
	}
	if c.NoCgroup {
		c.Tracking = TrackingSubreaper
	}
	var err error
	if c.MemoryMax != "" {
		if c.MemoryMaxBytes, err = parseBytes(c.MemoryMax); err != nil {
			return c.bad("memory-max", "%q: %v", c.MemoryMax, err)
		}
	}
	if c.CPUQuota != "" {
		if c.CPUQuotaPercent, err = parsePercent(c.CPUQuota); err != nil {
			return c.bad("cpu-quota", "%q: %v", c.CPUQuota, err)
		}
	}
	if (c.MemoryMaxBytes > 0 || c.CPUQuotaPercent > 0) && c.Tracking == TrackingSubreaper {
		return fmt.Errorf("--memory-max and --cpu-quota need the job in a cgroup of its own, which %s gives up", c.origin("tracking"))
	}
	return nil
}

// parseBytes reads a size as systemd's MemoryMax= does: bytes, or a
// number with K, M, G or T (powers of 1024), at least a megabyte.
func parseBytes(s string) (uint64, error) {
	num, mult := s, uint64(1)
	if i := strings.IndexAny(s, "KMGTkmgt"); i >= 0 && i == len(s)-1 {
		num = s[:i]
		mult = 1 << (10 * (strings.IndexByte("KMGT", byte(strings.ToUpper(s[i:])[0])) + 1))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("expected a size such as 512M, 2G or a number of bytes")
	}
	b := uint64(v * float64(mult))
	if b < 1<<20 {
		return 0, fmt.Errorf("below 1M: the job could not even start")
	}
	return b, nil
}

// parsePercent reads a CPU quota as systemd's CPUQuota= does: a percentage
// of one CPU, "50%", "200%" for two.
func parsePercent(s string) (int, error) {
	num, ok := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 1 || v > 100000 {
		return 0, fmt.Errorf("expected a percentage of one CPU such as 50%% or 200%%")
	}
	return v, nil
}
