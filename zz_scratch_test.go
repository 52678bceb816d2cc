package withlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

func BenchmarkScratch16(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client()
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			name := fmt.Sprintf("u%d", g)
			for range b.N / 16 {
				l, err := c.Acquire(ctx, name, 10*time.Second, nil)
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
