package withlock_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// slowTimeout is the nodes' read timeout in the slow-member tests: a call
// that waited for the stopped member would take that long.
const slowTimeout = 3 * time.Second

// A quorum does not wait for a member that does not answer once a majority
// has: acquiring, renewing and releasing each return in well under the
// member's timeout. Its claim, which the member runs when it resumes, does
// not leave our key there: a claim answering after the lock was released,
// or after the acquisition failed, removes its key, and a release the
// member did not confirm is queued for it.
func TestQuorumSlowMemberCostsNothingAndKeepsNoKeyOfOurs(t *testing.T) {
	for _, tc := range []struct {
		name string
		warm bool // the member already has a connection: the claim itself reaches it, not a handshake
		busy bool // another owner holds the other two: the acquisition fails
	}{
		{"stopped before its first connection", false, false},
		{"stopped with a connection open", true, false},
		{"stopped with a connection open, while the others refuse", true, true},
		// The clean-up queued for the member runs before the claim, which
		// waits behind the handshake of its new connection: only the
		// claim's own clean-up, on its late answer, removes its key.
		{"stopped before its first connection, while the others refuse", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			servers, admins, c := quorumNodesWith(t, slowTimeout)
			if tc.warm {
				if err := mustAcquire(t, c, "warm-up", time.Minute).Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tc.busy {
				for _, a := range admins[:2] {
					a.Set(ctx, "lock:job", foreignToken, time.Minute)
				}
			}
			slow := servers[2]
			mon := slow.Monitor()
			slow.Signal(syscall.SIGSTOP)
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					slow.Signal(syscall.SIGCONT)
				}
			}
			defer resume()

			took := func(what string, f func() error) error {
				t.Helper()
				start := time.Now()
				err := f()
				if d := time.Since(start); d >= slowTimeout/2 {
					t.Errorf("%s took %s with one member stopped; want under %s", what, d, slowTimeout/2)
				}
				return err
			}
			var l *withlock.Lock
			err := took("TryAcquire", func() (err error) {
				l, err = c.TryAcquire(ctx, "job", time.Minute, nil)
				return err
			})
			var token string
			switch {
			case tc.busy && !errors.Is(err, withlock.ErrNotObtained):
				t.Fatalf("TryAcquire with two members held by another owner: %v; want ErrNotObtained", err)
			case tc.busy:
			case err != nil:
				t.Fatalf("TryAcquire with one member stopped: %v", err)
			default:
				token = l.Token()
				if err := took("Extend", func() error { return l.Extend(ctx, time.Minute) }); err != nil {
					t.Errorf("Extend: %v", err)
				}
				if err := took("Release", func() error { return l.Release(ctx) }); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			resume()

			// The member runs our claim once it resumes, and then removes
			// it again: by the release queued for it, or by the claim's
			// own clean-up when its late answer comes.
			deadline := time.Now().Add(2 * slowTimeout)
			var claimed, key string
			for {
				for _, cmd := range mon.Commands() {
					// EVAL script 1 lock:job token 60000: a claim for a
					// minute (a release's second argument is 0).
					a := cmd.Args
					if len(a) == 6 && strings.EqualFold(a[0], "eval") && a[3] == "lock:job" && a[5] == "60000" {
						claimed = a[4]
					}
				}
				key, _ = admins[2].Get(ctx, "lock:job").Result()
				if claimed != "" && key != claimed || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if claimed == "" {
				t.Fatal("the stopped member never ran our claim once resumed: this tested nothing")
			}
			if token != "" && claimed != token {
				t.Fatalf("the member ran a claim for %q, not our lock's token", claimed)
			}
			if key == claimed {
				t.Errorf("the member that answered late keeps our key, PTTL %s", admins[2].PTTL(ctx, "lock:job").Val())
			}
			if tc.busy {
				for i, a := range admins[:2] {
					if v := a.Get(ctx, "lock:job").Val(); v != foreignToken {
						t.Errorf("node %d: the other owner's key became %q", i+1, v)
					}
				}
			}
		})
	}
}
