package withlock_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

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
	ctx := context.Background()
	servers, admins, c := quorumNodesWith(t, quorumAdminTimeout)
	mustAcquire(t, c, "job", time.Minute)
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s:%d", host, os.Getpid())
	if st, err := c.Status(ctx, "job"); err != nil {
		t.Fatalf("Status with every member up: %v", err)
	} else if st.Unanswered != nil {
		t.Fatalf("Status with every member up: Unanswered %v, want none", st.Unanswered)
	}
	servers[2].Signal(syscall.SIGSTOP)
	defer servers[2].Signal(syscall.SIGCONT) // a second SIGCONT does nothing
	check := func(what string, st *withlock.Status, held bool) {
		t.Helper()
		if st.Held != held || held && st.Holder.ID != holder {
			t.Errorf("%s: held %v by %q, want held %v by %q", what, st.Held, st.Holder.ID, held, holder)
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
