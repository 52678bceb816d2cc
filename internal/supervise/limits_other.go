//go:build !linux

package supervise

import "fmt"

// limit refuses limits: without cgroups there is nothing to apply them to.
func (p *Prepared) limit() error {
	if !p.opts.Limits.set() {
		return nil
	}
	return fmt.Errorf("%w: resource limits need Linux's cgroups", ErrNoLimits)
}
