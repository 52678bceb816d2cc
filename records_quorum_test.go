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
// reads the run; with two down, the error matches ErrNotRecorded (and the
// release's ErrNoQuorum).
func TestQuorumRecordIsStoredWhenAMajorityStoresIt(t *testing.T) {
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "rec", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	servers[2].Kill()
	if err := l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 4}, recordTTL); err != nil {
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
	if !errors.Is(err, withlock.ErrNotRecorded) || !errors.Is(err, withlock.ErrNoQuorum) {
		t.Errorf("ReleaseAndRecord with 1 of 3 nodes up = %v, want ErrNotRecorded and ErrNoQuorum", err)
	}
	// The one node up has it all the same: a record is written wherever it can be.
	if v := admins[0].Exists(ctx, "{lock:rec}:last").Val(); v != 1 {
		t.Errorf("the node that was up has no record")
	}
}
