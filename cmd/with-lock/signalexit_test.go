package main_test

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A signal passed on to the command that kills it kills with-lock too,
// once the lock is released: systemd then counts `systemctl stop` as a
// clean end (the unit ends inactive, not failed with status 143), and a
// shell reports 128+N as before. SIGQUIT, whose default action dumps core,
// is exited with 131 instead; a command that handles the signal and exits
// passes its own code on; and with-lock as PID 1 of a PID namespace, whom
// no signal can kill (a container's entrypoint), exits 128+N.
func TestForwardedSignalEndsWithLockAsItEndedTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	for i, tc := range []struct {
		name    string
		sig     syscall.Signal
		prefix  []string
		command []string
		code    int            // with-lock's code, as a shell reports it
		diedOf  syscall.Signal // the signal that killed with-lock; 0 when it exited
	}{
		{"SIGTERM", syscall.SIGTERM, nil, []string{"sleep", "100"}, 143, syscall.SIGTERM},
		{"SIGINT", syscall.SIGINT, nil, []string{"sleep", "100"}, 130, syscall.SIGINT},
		{"SIGHUP", syscall.SIGHUP, nil, []string{"sleep", "100"}, 129, syscall.SIGHUP},
		{"SIGQUIT", syscall.SIGQUIT, nil, []string{"sleep", "100"}, 131, 0},
		{"handled by the command", syscall.SIGTERM, nil, []string{"sh", "-c", "trap 'exit 3' TERM; sleep 100 & wait"}, 3, 0},
		{"as PID 1", syscall.SIGTERM, []string{"unshare", "--pid", "--fork", "--mount-proc"}, []string{"sleep", "100"}, 143, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "forwarded-" + strconv.Itoa(i)
			p := clitest.Spec{Env: redisEnv(srv), Args: append([]string{name}, tc.command...), Prefix: tc.prefix}.Start(t)
			clitest.Eventually(t, 10*time.Second, "lock:"+name+" taken", func() bool {
				return srv.Client().Exists(t.Context(), "lock:"+name).Val() == 1
			})
			time.Sleep(100 * time.Millisecond) // the command's trap set
			withLock := p.Pid()
			if tc.prefix != nil {
				withLock = childOf(p.Pid()) // unshare's child
			}
			signalPid(withLock, tc.sig)
			res := p.Wait(10 * time.Second)
			if tc.prefix != nil && res.Signal == 0 {
				// unshare exits as its child did, 128+N after signal N.
				res.Signal = map[bool]syscall.Signal{true: tc.diedOf}[res.Code == 128+int(tc.diedOf)]
			}
			if res.Code != tc.code || res.Signal != tc.diedOf {
				t.Errorf("with-lock ended %d (killed by %v), want %d (killed by %v); stderr %q", res.Code, res.Signal, tc.code, tc.diedOf, res.Stderr)
			}
			if srv.Client().Exists(t.Context(), "lock:"+name).Val() != 0 {
				t.Errorf("lock:%s still held: with-lock ended before releasing it", name)
			}
		})
	}
}
