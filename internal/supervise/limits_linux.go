package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The job's limits are its group's: memory.max and cpu.max, which the
// kernel enforces on every process of the job together. In a scope
// systemd writes them (MemoryMax=, CPUQuota=); in a group of with-lock's
// own with-lock does, once it enabled the controllers in the group's
// parent. A job followed by the subreaper alone has no group to limit,
// and a hierarchy without the controller (a hybrid host whose memory
// controller is cgroup v1's) cannot: either way the run is refused,
// saying why, rather than run unlimited.

// controllers are the cgroup controllers the limits need.
func (l Limits) controllers() []string {
	var c []string
	if l.MemoryMax > 0 {
		c = append(c, "memory")
	}
	if l.CPUQuotaPercent > 0 {
		c = append(c, "cpu")
	}
	return c
}

// flags names the settings of the limits, for messages.
func (l Limits) flags() string {
	var f []string
	if l.MemoryMax > 0 {
		f = append(f, "--memory-max")
	}
	if l.CPUQuotaPercent > 0 {
		f = append(f, "--cpu-quota")
	}
	return strings.Join(f, " and ")
}

// controllersFor checks that the hierarchy at mount offers the limits'
// controllers.
func (p *Prepared) controllersFor(mount string) error {
	l := p.opts.Limits
	if !l.set() {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	have := strings.Fields(string(b))
	for _, c := range l.controllers() {
		if !slices.Contains(have, c) {
			return fmt.Errorf("%w: %s: the cgroup2 hierarchy at %s has no %s controller (it has: %s)",
				ErrNoLimits, l.flags(), mount, c, orNone(have))
		}
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, " ")
}

// limit applies the limits to the job's group, or says why it cannot.
func (p *Prepared) limit() error {
	l := p.opts.Limits
	if !l.set() {
		return nil
	}
	if p.cg == nil {
		why := p.place.why
		if why == "" {
			why = "it is followed by the subreaper alone"
		}
		verb := "needs"
		if strings.Contains(l.flags(), " and ") {
			verb = "need"
		}
		return fmt.Errorf("%w: %s %s the job in a cgroup of its own: %s", ErrNoLimits, l.flags(), verb, why)
	}
	if p.cg.scope != "" {
		// systemd wrote them: make sure the files are there.
		for _, c := range l.controllers() {
			if _, err := os.Stat(filepath.Join(p.cg.dir, c+".max")); err != nil {
				return fmt.Errorf("%w: %s: systemd did not enable the %s controller for %s", ErrNoLimits, l.flags(), c, p.cg.scope)
			}
		}
		return nil
	}
	parent := filepath.Dir(p.cg.dir)
	if err := p.controllersFor(p.place.mount); err != nil {
		return err
	}
	for _, c := range l.controllers() {
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			return fmt.Errorf("%w: %s: enable the %s controller in %s: %w%s", ErrNoLimits, l.flags(), c, parent, err, busyHint(err))
		}
	}
	writes := map[string]string{}
	if l.MemoryMax > 0 {
		writes["memory.max"] = strconv.FormatUint(l.MemoryMax, 10)
		writes["memory.swap.max"] = "0" // a limit that swap would stretch is none
	}
	if l.CPUQuotaPercent > 0 {
		writes["cpu.max"] = strconv.Itoa(l.CPUQuotaPercent*1000) + " 100000"
	}
	for file, v := range writes {
		err := os.WriteFile(filepath.Join(p.cg.dir, file), []byte(v), 0)
		if err != nil && !(file == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) { // no swap accounting
			return fmt.Errorf("%w: %s: write %s to %s: %w", ErrNoLimits, l.flags(), v, filepath.Join(p.cg.dir, file), err)
		}
	}
	return nil
}

// busyHint explains EBUSY from cgroup.subtree_control: a group with
// processes of its own (with-lock's) cannot pass controllers down.
func busyHint(err error) string {
	if errors.Is(err, os.ErrExist) || strings.Contains(err.Error(), "device or resource busy") {
		return " (with-lock itself is in that group; under systemd, a unit without Delegate= gives the job a scope, where systemd applies the limits)"
	}
	return ""
}
