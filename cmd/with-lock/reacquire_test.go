package main_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --on-lost reacquire: a key that vanished under a running command (Redis
// flushed, or restarted without persistence) is taken again and the
// command goes on; one that someone else holds is not, and the command is
// stopped as with term.

// The command keeps running through the key's disappearance: with-lock
// warns that it took the lock again, the key is back with the run's own
// token (a higher fencing number with --fence), and the run ends with the
// command's exit code and releases the key.
func TestOnLostReacquireKeepsCommandRunningWhenKeyVanishes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fence bool
		fault func(srv *redistest.Server)
	}{
		{"flushall", false, func(srv *redistest.Server) {
			if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"flushall fenced", true, func(srv *redistest.Server) {
			if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"restart empty fenced", true, func(srv *redistest.Server) { srv.Restart() }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			name := "reacquire-" + strconv.Itoa(i)
			// A TTL long enough for a restart to fit inside the local deadline.
			args := []string{"--ttl", "3s", "--on-lost", "reacquire", name}
			if tt.fence {
				args = append([]string{"--fence"}, args...)
			}
			j := e.startJob(7, args...)
			ctx := context.Background()
			before, _ := e.rdb.Get(ctx, fenceKey(name)).Int64()
			tt.fault(e.srv)
			j.WaitStderr("took it again")
			rdb := e.srv.Client() // a fresh one: a restart broke the old one's connections
			if v := rdb.Get(ctx, j.key).Val(); v != j.token {
				t.Errorf("after the reacquisition the key holds %q, want the run's own token", v)
			}
			if tt.fence {
				after, _ := rdb.Get(ctx, fenceKey(name)).Int64()
				if after <= before || !strings.Contains(j.Stderr(), "new fence "+strconv.FormatInt(after, 10)) {
					t.Errorf("fence counter %d before, %d after; stderr %q: want a higher number, named in the warning", before, after, j.Stderr())
				}
			}
			time.Sleep(time.Second) // renewals go on under the reacquired key
			res := j.finish()
			if res.Code != 7 {
				t.Errorf("exit %d, want the command's 7; stderr %q", res.Code, res.Stderr)
			}
			if !hasLine(res.Stderr, "lock:"+name, "vanished (Redis restarted or failed over?)", "took it again", "another run may have held it") {
				t.Errorf("stderr %q: want the warning that the key vanished and was taken again", res.Stderr)
			}
			if strings.Contains(res.Stderr, " lost") {
				t.Errorf("stderr %q speaks of a loss", res.Stderr)
			}
			if n := rdb.Exists(ctx, j.key).Val(); n != 0 {
				t.Error("the reacquired key outlived the run")
			}
		})
	}
}

// Sentinel fails over to a replica that never got the key (deleted there
// before the master died): the run takes the lock again on the new master,
// its command goes on, and it ends with the command's exit code, released.
func TestOnLostReacquireSurvivesFailoverToReplicaWithoutKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := redistest.StartSentinels(t)
	args := []string{"--sentinel-master", redistest.MasterName, "--redis-timeout", "1s", "--ttl", "20s", "--on-lost", "reacquire"}
	for _, a := range g.Addrs() {
		args = append(args, "--sentinel", a)
	}
	replica := g.Replica.Client()
	j := startJob(t, nil, 4, append(args, "s-reacquire")...)
	clitest.Eventually(t, 10*time.Second, "the key reaches the replica", func() bool {
		return replica.Get(ctx, j.key).Val() == j.token
	})
	if err := replica.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Del(ctx, j.key).Err(); err != nil {
		t.Fatal(err)
	}
	g.Master.Kill()
	g.WaitMaster(g.Replica.Addr())
	j.WaitStderr("took it again")
	if v := replica.Get(ctx, j.key).Val(); v != j.token {
		t.Errorf("the new master holds %q, want the run's own token", v)
	}
	res := j.finish()
	if res.Code != 4 || !hasLine(res.Stderr, j.key, "vanished", "took it again") {
		t.Errorf("exit %d, stderr %q; want the command's 4 and the warning", res.Code, res.Stderr)
	}
	if n := replica.Exists(ctx, j.key).Val(); n != 0 {
		t.Error("the reacquired key outlived the run on the new master")
	}
}

// Someone else holds the key when with-lock finds its own gone — it took
// the key after it vanished, or overwrote it — so the command is stopped,
// with-lock exits 125, and the other owner's key is left alone.
func TestOnLostReacquireStopsCommandWhenAnotherOwnerHoldsKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, tt := range redistest.Takeovers {
		t.Run(tt.Name, func(t *testing.T) {
			name := "reacquire-taken-" + strconv.Itoa(i)
			p, pids := startTree(t, e.srv, name, "--redis", e.srv.URL(), "--ttl", "1500ms", "--on-lost", "reacquire")
			if err := tt.Do(context.Background(), e.rdb, "lock:"+name, foreign); err != nil {
				t.Fatal(err)
			}
			clitest.WaitDead(t, 10*time.Second, pids...)
			res := p.Wait(10 * time.Second)
			if res.Code != 125 || !hasLine(res.Stderr, "lock:"+name, "taken over by otherhost:4242", "takes back only a key nobody holds", "SIGTERM") {
				t.Errorf("exit %d, stderr %q; want 125 and why the lock was not taken again", res.Code, res.Stderr)
			}
			if strings.Contains(res.Stderr, "took it again") {
				t.Errorf("stderr %q: with-lock claims to have taken another owner's lock", res.Stderr)
			}
			untouched(t, e.rdb, "lock:"+name, foreign)
		})
	}
}

// --on-lost reacquire is refused, with 64 and the reason, where it has no
// meaning.
func TestOnLostReacquireRefusedWhereItCannotWork(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cmd, ran := marker(t)
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"--slots", "2"}, "a semaphore's slot is not taken back"},
		{[]string{"--no-renew"}, "does not go with --no-renew"},
		{[]string{"--redis", "redis://" + e.srv.Addr() + "/1", "--redis", "redis://" + e.srv.Addr() + "/2"}, "a quorum already survives a member's restart"},
	}
	for _, tt := range tests {
		args := append(append(append([]string{"--on-lost", "reacquire"}, tt.flags...), "reacquire-refused"), cmd...)
		res := e.run(args...)
		if res.Code != 64 {
			t.Errorf("%q: exit %d, want 64; stderr %q", tt.flags, res.Code, res.Stderr)
		}
		oneLine(t, res, tt.want)
	}
	if ran() {
		t.Error("the command ran")
	}
}
