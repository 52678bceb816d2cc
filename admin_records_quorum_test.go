package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// On a quorum a run's record counts as stored when a majority of the nodes
// stored it: with one of three down, ReleaseAndRecord succeeds and Status
// reads the run; with two down, both the release's and the record's errors
// match ErrNoQuorum.
func TestQuorumRecordIsStoredWhenAMajorityStoresIt(t *testing.T) {
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "rec", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
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

	l, err = c.TryAcquire(ctx, "rec", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	_, admins, c := quorumNodes(t)
	ctx := context.Background()
	var older string
	for code := range 2 {
		l, err := c.TryAcquire(ctx, "newest", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
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
