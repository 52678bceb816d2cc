package supervise

import (
	"errors"
	"syscall"
)

// GroupAlive reports whether any process of the child's process group is
// still running — the command's own children can outlive it. On Linux,
// exited processes that their new parent has not reaped yet do not count:
// some init processes (in containers, say) reap orphans only now and then.
func (c *Child) GroupAlive() bool {
	if errors.Is(syscall.Kill(-c.pgid, 0), syscall.ESRCH) {
		return false // the cheap answer, when the group is gone entirely
	}
	return c.groupHasLiveProcess()
}
