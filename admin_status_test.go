package withlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

func TestStatusOfALock(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()

	st, err := locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held || st.Holder.ID != "" || st.Holder.TTL != 0 || st.Fence != 0 || st.Key != "lock:st" {
		t.Errorf("free lock: %+v", st)
	}

	l, err := locker.TryAcquire(ctx, "st", 5*time.Second, &withlock.LockOptions{Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err = locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Holder.ID != withlock.HolderOf(l.Token()) || st.Holder.TTL <= 0 || st.Holder.TTL > 5*time.Second || st.Fence != l.Fence() {
		t.Errorf("held lock: %+v, want holder %s, TTL in (0,5s], fence %d", st, withlock.HolderOf(l.Token()), l.Fence())
	}
	if strings.Contains(st.Holder.ID, l.Token()[len(st.Holder.ID):]) {
		t.Errorf("holder %q shows the token's secret part", st.Holder.ID)
	}
	host, pid, ok := strings.Cut(st.Holder.ID, ":")
	if !ok || host == "" || pid == "" {
		t.Errorf("holder %q is not host:pid", st.Holder.ID)
	} else if _, err := strconv.Atoi(pid); err != nil {
		t.Errorf("holder %q: pid not a number", st.Holder.ID)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A key written by someone else, without expiry.
	if err := rdb.Set(ctx, "lock:st", "no-format", 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, err = locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Holder.ID != "unknown" || st.Holder.TTL != -1 || st.Fence != l.Fence() {
		t.Errorf("foreign key without expiry: %+v", st)
	}
}
