package withlock

// The fake backend KeepAlive's schedule is tested on
// (keepalive_synctest_test.go), and the answers its renewals can give: at
// once, slow, stuck, refused.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errDown is a fake renewal's failure, as a refused connection would be.
var errDown = errors.New("connection refused")

// fakeRenewals is a backend for KeepAlive's timing: extend records when
// each renewal was sent and answers with answer; acquire always succeeds.
// Nothing else of a backend is used by KeepAlive, and it has none of the
// optional capabilities (backend.go).
type fakeRenewals struct {
	// answer answers the nth renewal (from 1); nil means a success at once.
	// It may sleep (a slow Redis) or wait for ctx (a stuck one).
	answer func(ctx context.Context, n int) error
	// renewBy, set at acquire and cleared by a renewal, is a time since
	// acquisition at which the backend asks to be renewed early, as a
	// quorum does (Lock.renewBy).
	renewBy time.Duration

	mu       sync.Mutex
	sent     []time.Duration // when each renewal was sent, since acquisition
	ttls     []time.Duration // the TTL each renewal asked for
	inflight int             // renewals not yet answered
}

func (f *fakeRenewals) acquire(_ context.Context, l *Lock, _ *LockOptions) error {
	l.renewBy.Store(int64(f.renewBy))
	return nil
}

func (f *fakeRenewals) extend(ctx context.Context, l *Lock, ttl time.Duration) error {
	f.mu.Lock()
	f.sent = append(f.sent, time.Since(l.acquired))
	f.ttls = append(f.ttls, ttl)
	f.inflight++
	n := len(f.sent)
	f.mu.Unlock()
	var err error
	if f.answer != nil {
		err = f.answer(ctx, n)
	}
	f.mu.Lock()
	f.inflight--
	f.mu.Unlock()
	l.renewBy.Store(0)
	return err
}

// renewals returns when the renewals so far were sent and how many are
// unanswered.
func (f *fakeRenewals) renewals() (sent []time.Duration, inflight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent), f.inflight
}

func (f *fakeRenewals) release(context.Context, *Lock, time.Duration) error { panic("not used") }
func (f *fakeRenewals) ttl(context.Context, *Lock) (time.Duration, error)   { panic("not used") }
func (f *fakeRenewals) subscribe(context.Context) *redis.PubSub             { panic("not used") }

// keepAlive takes a lock with ttl on f and starts its KeepAlive with opts,
// stopped when the test ends. Call it inside the bubble.
func keepAlive(t *testing.T, f *fakeRenewals, ttl time.Duration, opts *KeepAliveOptions) (*Lock, *KeepAlive) {
	t.Helper()
	l, err := newClient(f, nil).TryAcquire(t.Context(), "job", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	ka := l.KeepAlive(context.Background(), opts)
	t.Cleanup(ka.Stop)
	return l, ka
}

// ms is a list of times in milliseconds, for readable wants.
func ms(m ...int) []time.Duration {
	d := make([]time.Duration, len(m))
	for i, v := range m {
		d[i] = time.Duration(v) * time.Millisecond
	}
	return d
}

// slow is an answer that takes d and then succeeds, whatever ctx says: a
// renewal in flight is always completed.
func slow(d time.Duration) func(context.Context, int) error {
	return func(context.Context, int) error { time.Sleep(d); return nil }
}

// stuck is an answer that never comes while the KeepAlive runs, as from a
// paused Redis: it waits for ctx.
func stuck(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() }
