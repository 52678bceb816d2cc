package withlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// A release nobody waits for publishes nothing: waiters announce themselves
// beside the key, and the release's DEL finds no announcement. Once a
// waiter has announced itself, the release publishes and removes the
// announcement.
func TestReleaseNobodyWaitsForPublishesNothing(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	ctx := context.Background()

	l := mustAcquire(t, c, "job", time.Minute)
	resetStats(t, rdb)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if calls := commandCallsExceptSetup(t, rdb); calls["publish"] != 0 || calls["del"] != 1 || calls["get"] != 1 {
		t.Errorf("Release with nobody waiting ran %v, want one get and one del and no publish", calls)
	}

	l = mustAcquire(t, c, "job", time.Minute)
	announcement := "{" + l.Key() + "}:w"
	if err := rdb.Set(ctx, announcement, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	resetStats(t, rdb)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if calls := commandCallsExceptSetup(t, rdb); calls["publish"] != 1 {
		t.Errorf("Release after a waiter announced itself ran %v, want one publish", calls)
	}
	if n := rdb.Exists(ctx, announcement, l.Key()).Val(); n != 0 {
		t.Errorf("%d of the key and its announcement remain after the release, want none", n)
	}
}
