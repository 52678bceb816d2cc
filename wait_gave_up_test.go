package withlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// A wait that its context ends says why in words, in the fair line and
// outside it, while errors.Is still matches the context's cause: the
// deadline, a cancel, or the caller's own cause. Go's "context deadline
// exceeded" reads as a fault of the library; it is the caller's limit.
func TestGivenUpWaitSaysWhyInWords(t *testing.T) {
	shutdown := errors.New("the service is shutting down")
	for _, tc := range []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		cause error
		words string
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, context.DeadlineExceeded, "gave up waiting: the wait's deadline passed"},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled, "gave up waiting: the wait was cancelled"},
		{"own cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 300*time.Millisecond, shutdown)
		}, shutdown, "gave up waiting: the service is shutting down"},
	} {
		for _, way := range []struct {
			name string
			opts *withlock.LockOptions
		}{{"fair line", nil}, {"outside the line", &withlock.LockOptions{Fence: true}}} {
			t.Run(tc.name+"/"+way.name, func(t *testing.T) {
				c, _ := waitSetup(t)
				holder := mustAcquire(t, c, "job", time.Minute)
				defer holder.Release(context.Background())
				ctx, cancel := tc.ctx()
				defer cancel()
				o := wait(t, acquireAsyncWith(ctx, c, "job", time.Minute, way.opts), promptly, tc.name)
				if o.err == nil {
					t.Fatal("Acquire of a held lock succeeded")
				}
				if !errors.Is(o.err, withlock.ErrNotObtained) || !errors.Is(o.err, tc.cause) {
					t.Errorf("Acquire = %v, want ErrNotObtained and %v", o.err, tc.cause)
				}
				msg := o.err.Error()
				if !strings.HasSuffix(msg, tc.words) || !strings.HasPrefix(msg, "lock:job is held by ") {
					t.Errorf("Acquire's error %q, want the holder then %q", msg, tc.words)
				}
			})
		}
	}

	t.Run("ended before the first try", func(t *testing.T) {
		c, _ := waitSetup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Acquire(ctx, "job", time.Minute, nil)
		want := "acquire lock:job: not tried: the wait was cancelled"
		if !errors.Is(err, context.Canceled) || err == nil || err.Error() != want {
			t.Errorf("Acquire with a cancelled context = %v, want %q matching context.Canceled", err, want)
		}
	})
}
