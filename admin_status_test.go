package withlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestStatusOfALock(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()

	st, err := locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held || st.Holder != "" || st.TTL != 0 || st.Fence != 0 || st.Key != "lock:st" {
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
	if !st.Held || st.Holder != withlock.HolderOf(l.Token()) || st.TTL <= 0 || st.TTL > 5*time.Second || st.Fence != l.Fence() {
		t.Errorf("held lock: %+v, want holder %s, TTL in (0,5s], fence %d", st, withlock.HolderOf(l.Token()), l.Fence())
	}
	if strings.Contains(st.Holder, l.Token()[len(st.Holder):]) {
		t.Errorf("holder %q shows the token's secret part", st.Holder)
	}
	host, pid, ok := strings.Cut(st.Holder, ":")
	if !ok || host == "" || pid == "" {
		t.Errorf("holder %q is not host:pid", st.Holder)
	} else if _, err := strconv.Atoi(pid); err != nil {
		t.Errorf("holder %q: pid not a number", st.Holder)
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
	if !st.Held || st.Holder != "unknown" || st.TTL != -1 || st.Fence != l.Fence() {
		t.Errorf("foreign key without expiry: %+v", st)
	}
}
