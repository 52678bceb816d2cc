package withlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// The token carries the time its acquisition began, so Status can say
// since when a lock is held; a token without it (an older version's)
// shows no time rather than a wrong one.
func TestStatusSinceIsWhenTheHolderAcquired(t *testing.T) {
	srv := redistest.Start(t)
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	before := time.Now().Truncate(time.Millisecond)
	l, err := locker.TryAcquire(ctx, "since", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	st, err := locker.Status(ctx, "since")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder.Since.Before(before) || st.Holder.Since.After(after) {
		t.Errorf("Since %v, want within the TryAcquire call [%v, %v]", st.Holder.Since, before, after)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{foreignToken, "otherhost:4242:zz.0123", "no-format"} {
		srv.Client().Set(ctx, "lock:since", old, time.Minute)
		if st, err := locker.Status(ctx, "since"); err != nil || !st.Held || !st.Holder.Since.IsZero() {
			t.Errorf("key holding %q: Status %+v, %v; want held with a zero Since", old, st, err)
		}
	}
}
