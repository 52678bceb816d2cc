package main_test

// A held lock is kept: renewals ride out short pauses of Redis and keep the
// lock of a job that runs longer than its TTL.

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Short CLIENT PAUSEs, each shorter than TTL/3, keep delaying renewals:
// no false loss.
func TestShortClientPausesCauseNoFalseLoss(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	const ttl = 1500 * time.Millisecond
	const pause = ttl/3 - 100*time.Millisecond
	const run = 3 * time.Second
	p, _ := startTree(t, srv, "client-pauses", "--ttl", ttl.String())
	admin := srv.Client()
	ctx := context.Background()
	pauses := 0
	for end := time.Now().Add(run); time.Now().Before(end); pauses++ {
		if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause + 50*time.Millisecond)
	}
	st := lookAt(admin, "lock:client-pauses")
	if st.err != nil || !tokenRE.MatchString(st.val) || st.pttl <= 0 || st.pttl > ttl {
		t.Errorf("after %s of pauses the key is %+v, want still held by with-lock with TTL ≤ %s", run, st, ttl)
	}
	p.Signal(syscall.SIGTERM) // the tree dies of it; with-lock passes on 143
	res := p.Wait(10 * time.Second)
	t.Logf("%d CLIENT PAUSEs of %s over %s (TTL %s): exit %d, stderr %q", pauses, pause, run, ttl, res.Code, res.Stderr)
	if res.Code != 128+int(syscall.SIGTERM) || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q; want 143 (our SIGTERM) and no loss", res.Code, res.Stderr)
	}
	if n := admin.Exists(ctx, "lock:client-pauses").Val(); n != 0 {
		t.Error("lock not released")
	}
}

// A job three times as long as its TTL keeps its lock throughout, the
// key's TTL never above --ttl, and the lock is released at the end.
func TestLongJobKeepsLockPastItsTTL(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	rdb := srv.Client()
	const ttl, run = 2 * time.Second, 6 * time.Second
	finished := filepath.Join(t.TempDir(), "finished")
	p := clitest.Start(t, redisEnv(srv), "--ttl", ttl.String(), "long-job",
		"sh", "-c", `sleep "$1" && touch "$0"`, finished, strconv.Itoa(int(run/time.Second)))
	clitest.Eventually(t, 10*time.Second, "lock taken", func() bool {
		return rdb.Exists(context.Background(), "lock:long-job").Val() == 1
	})
	first := lookAt(rdb, "lock:long-job")
	samples := 0
	minTTL, maxTTL := time.Hour, time.Duration(0)
	for done := false; !done; time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.Done():
			done = true
			continue
		default:
		}
		st := lookAt(rdb, "lock:long-job")
		if errors.Is(st.err, redis.Nil) {
			if !exists(finished) {
				t.Fatalf("key gone while the job ran (sample %d)", samples)
			}
			done = true // released at the end
			continue
		}
		if st.err != nil || st.val != first.val || st.pttl <= 0 || st.pttl > ttl {
			t.Fatalf("sample %d: key %+v, want our token with TTL in (0, %s]", samples, st, ttl)
		}
		samples++
		minTTL, maxTTL = min(minTTL, st.pttl), max(maxTTL, st.pttl)
	}
	res := p.Wait(10 * time.Second)
	t.Logf("job of %s with --ttl %s: %d samples, PTTL between %s and %s; exit %d in %s",
		run, ttl, samples, minTTL, maxTTL, res.Code, res.Duration.Round(time.Millisecond))
	if res.Code != 0 || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", res.Code, res.Stderr)
	}
	if samples < 50 {
		t.Errorf("only %d samples of the key during the run", samples)
	}
	if n := rdb.Exists(context.Background(), "lock:long-job").Val(); n != 0 {
		t.Error("lock not released at the end")
	}
}
