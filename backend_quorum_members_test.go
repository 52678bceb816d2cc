package withlock_test

// A quorum whose members differ: a slow or stopped member, and records on a
// majority.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	t.Parallel()
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

// On a quorum a run's record counts as stored when a majority of the nodes
// stored it: with one of three down, ReleaseAndRecord succeeds and Status
// reads the run; with two down, both the release's and the record's errors
// match ErrNoQuorum.
func TestQuorumRecordIsStoredWhenAMajorityStoresIt(t *testing.T) {
	t.Parallel()
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	l := onEveryNode(t, admins, mustAcquire(t, c, "rec", time.Minute))
	servers[2].Kill()
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 4}, recordTTL)); err != nil {
		t.Errorf("ReleaseAndRecord with 2 of 3 nodes up = %v, want it stored", err)
	}
	st, err := c.Status(ctx, "rec")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRun == nil || st.LastRun.ExitCode != 4 {
		t.Errorf("Status after recording on 2 of 3 nodes: last run %+v, want exit 4", st.LastRun)
	}

	l = onEveryNode(t, admins[:2], mustAcquire(t, c, "rec", time.Minute))
	servers[1].Kill()
	err = l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 5}, recordTTL)
	if !errors.Is(err, withlock.ErrNoQuorum) || !errors.Is(err, withlock.ErrNotReleased) || !errors.Is(err, withlock.ErrNotRecorded) {
		t.Errorf("ReleaseAndRecord with 1 of 3 nodes up = %v; want ErrNoQuorum for both the release (ErrNotReleased) and the record (ErrNotRecorded)", err)
	}
	// The one node up has it all the same: a record is written wherever it can be.
	if v := admins[0].Exists(ctx, "{lock:rec}:last").Val(); v != 1 {
		t.Errorf("the node that was up has no record")
	}
}

// On a quorum Status shows the newest record of the nodes: a node that kept
// an older run's record (it missed the last one) does not hide the last run.
func TestQuorumStatusShowsTheNewestRecord(t *testing.T) {
	t.Parallel()
	_, admins, c := quorumNodes(t)
	ctx := context.Background()
	var older string
	for code := range 2 {
		l := mustAcquire(t, c, "newest", time.Minute)
		if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: code}, recordTTL)); err != nil {
			t.Fatal(err)
		}
		if code == 0 {
			older = admins[2].Get(ctx, "{lock:newest}:last").Val()
		}
	}
	for _, i := range []int{0, 2} { // the first and the last node missed the last run
		if err := admins[i].Set(ctx, "{lock:newest}:last", older, recordTTL).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Status(ctx, "newest")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRun == nil || st.LastRun.ExitCode != 1 {
		t.Errorf("Status with the last run's record on one node of three: last run %+v, want the newest, exit 1", st.LastRun)
	}
}

// quorumAdminTimeout is the nodes' read timeout in the admin tests with a
// stopped member: a call that waited for it would take that long.
// quorumAdminBound is how long each call may take: generous for a loaded
// machine, and still well under the timeout.
const (
	quorumAdminTimeout = 20 * time.Second
	quorumAdminBound   = 10 * time.Second
)

// within runs f and fails the test unless it returns within
// quorumAdminBound.
func within[T any](t *testing.T, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(quorumAdminBound):
		t.Fatalf("%s did not return within %s with one member stopped", what, quorumAdminBound)
	}
	panic("unreachable")
}

// With one of three members stopped, Status, List and Break answer from
// the other two without waiting for it, as with every member up, and
// name it in Status.Unanswered, which is empty while every member answers.
func TestQuorumAdminAnswersFromAMajorityWithAMemberStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	servers, admins, c := quorumNodesWith(t, quorumAdminTimeout)
	mustAcquire(t, c, "job", time.Minute)
	me := holder(t)
	if st, err := c.Status(ctx, "job"); err != nil {
		t.Fatalf("Status with every member up: %v", err)
	} else if st.Unanswered != nil {
		t.Fatalf("Status with every member up: Unanswered %v, want none", st.Unanswered)
	}
	servers[2].Signal(syscall.SIGSTOP)
	defer servers[2].Signal(syscall.SIGCONT) // a second SIGCONT does nothing
	check := func(what string, st *withlock.Status, held bool) {
		t.Helper()
		if st.Held != held || held && st.Holder.ID != me {
			t.Errorf("%s: held %v by %q, want held %v by %q", what, st.Held, st.Holder.ID, held, me)
		}
		if !slices.Equal(st.Unanswered, []int{3}) {
			t.Errorf("%s: Unanswered %v, want [3]", what, st.Unanswered)
		}
	}

	st, err := within(t, "Status", func() (*withlock.Status, error) { return c.Status(ctx, "job") })
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	check("Status", st, true)

	list, err := within(t, "List", func() ([]*withlock.Status, error) { return c.List(ctx, nil) })
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].Key != "lock:job" {
		t.Fatalf("List: %d locks, want lock:job only", len(list))
	}
	check("List", list[0], true)

	st, err = within(t, "Break", func() (*withlock.Status, error) { return c.Break(ctx, "job") })
	if err != nil {
		t.Fatalf("Break: %v", err)
	}
	check("Break", st, true)
	if got := onNodes(admins[:2], "lock:job"); !slices.Equal(got, []string{"", ""}) {
		t.Errorf("after Break the members that answered hold %q", got)
	}

	st, err = within(t, "Status after Break", func() (*withlock.Status, error) { return c.Status(ctx, "job") })
	if err != nil {
		t.Fatalf("Status after Break: %v", err)
	}
	check("Status after Break", st, false)
	servers[2].Signal(syscall.SIGCONT)
}

// onEveryNode returns l once its key is on each of admins' nodes. An
// acquisition needs only a majority, and a node that answers after the
// race's grace (a loaded machine) is left without the key until a renewal
// repairs it, as KeepAlive would: a test that then stops a node that holds
// it must first know that the others do.
func onEveryNode(t *testing.T, admins []*redis.Client, l *withlock.Lock) *withlock.Lock {
	t.Helper()
	ctx := context.Background()
	eventually(t, "the lock's key on every node", func() bool {
		if count(onNodes(admins, l.Key()), l.Token()) == len(admins) {
			return true
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		return false
	})
	return l
}

// A contender that finds one node down, the lock held on another, and the
// third slower to answer than the race's grace waits for the third
// (settleGrace): held on two of three is busy (ErrNotObtained, the CLI's
// 75), not a quorum that cannot be reached (ErrNoQuorum, 69).
func TestQuorumContenderTellsBusyFromUnreachableWithANodeDownAndOneSlow(t *testing.T) {
	t.Parallel()
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	for _, a := range admins[1:] {
		if err := a.Set(ctx, "lock:split", foreignToken, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	servers[0].Kill()
	// The third node answers 120 ms late: past lateGrace, within settleGrace.
	if err := admins[2].Do(ctx, "CLIENT", "PAUSE", 120, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TryAcquire(ctx, "split", time.Minute, nil)
	if !errors.Is(err, withlock.ErrNotObtained) || errors.Is(err, withlock.ErrNoQuorum) {
		t.Errorf("TryAcquire with the lock held on the two nodes up, one slow: %v; want ErrNotObtained, not ErrNoQuorum", err)
	}
}
