package supervise

import (
	"errors"
	"syscall"
)

// GroupAlive reports whether any process of the child's process group is
// still there — the command's own children can outlive it. Processes that
// have exited but not yet been reaped by their new parent count as alive.
func (c *Child) GroupAlive() bool {
	return !errors.Is(syscall.Kill(-c.pgid, 0), syscall.ESRCH)
}
