package withlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
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

// A Redis whose used memory is above its maxmemory (noeviction) refuses
// writes, but still answers reads: Status (a plain lock's and a
// semaphore's), List, and a holder's renewal and release all work, while a
// new acquisition is refused with Redis's OOM error.
func TestStatusAnswersWhenRedisIsOutOfMemory(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "maxmemory", "4mb", "maxmemory-policy", "noeviction")
	locker := withlock.New(srv.Client(), nil)
	sem, err := withlock.NewSemaphore(srv.Client(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := locker.TryAcquire(ctx, "job", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := sem.TryAcquire(ctx, "backup", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.FillUntilOOM()

	if _, err := locker.TryAcquire(ctx, "other", time.Minute, nil); !redis.IsOOMError(err) {
		t.Errorf("TryAcquire when out of memory: %v, want Redis's OOM error", err)
	}
	st, err := locker.Status(ctx, "job")
	if err != nil || !st.Held || st.Holder.ID != withlock.HolderOf(l.Token()) || st.Holder.TTL <= 0 {
		t.Errorf("Status of a held lock: %+v, %v; want it held by %s", st, err, withlock.HolderOf(l.Token()))
	}
	st, err = sem.Status(ctx, "backup")
	if err != nil || st.Slots != 2 || len(st.Holders) != 1 || st.Holders[0].Slot != sl.Slot() {
		t.Errorf("Status of a semaphore: %+v, %v; want 2 slots, slot %d held", st, err, sl.Slot())
	}
	if ls, err := locker.List(ctx, nil); err != nil || len(ls) != 2 {
		t.Errorf("List: %d locks, %v; want 2", len(ls), err)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if err := sl.Release(ctx); err != nil {
		t.Errorf("Release of a slot: %v", err)
	}
	if st, err := locker.Status(ctx, "job"); err != nil || st.Held {
		t.Errorf("Status after the release: %+v, %v; want free", st, err)
	}
}
