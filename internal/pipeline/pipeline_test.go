package pipeline_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/pipeline"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A connection Redis refuses (a wrong password) gives every queued command
// that refusal, so that a SET NX never sent does not read as "held"; a
// pipeline Redis answered keeps each command's own reply.
func TestRefusedConnectionGivesEveryCommandItsError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "requirepass", "right-pw")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		password string
		wantErr  bool
	}{
		{"a wrong password", "wrong-pw", true},
		{"the right password", "right-pw", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := srv.ClientWith(&redis.Options{Password: tc.password})
			var set *redis.BoolCmd
			var get *redis.StringCmd
			err := pipeline.Send(ctx, rdb, func(p redis.Pipeliner) {
				set = p.SetNX(ctx, "k-"+tc.password, "v", 0)
				get = p.Get(ctx, "k-"+tc.password)
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Send: %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				if ok, err := set.Result(); !ok || err != nil {
					t.Errorf("SET NX: %v, %v; want true, nil", ok, err)
				}
				if v, err := get.Result(); v != "v" || err != nil {
					t.Errorf("GET: %q, %v; want \"v\", nil", v, err)
				}
				return
			}
			for _, c := range []redis.Cmder{set, get} {
				if c.Err() == nil {
					t.Errorf("%s has no error after the connection was refused (%v)", c.Name(), err)
				}
			}
		})
	}
}
