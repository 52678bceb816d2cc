package supervise

import (
	"errors"
	"path/filepath"
	"sync"
	"time"
)

// A job's set-up that does not depend on the lock — its guard, the
// subreaper, its cgroup — costs about as long as taking the lock from a
// nearby Redis. Prepare begins it at once, alongside the acquire, and
// Start waits for it only when the command is about to start: a short
// run's start-up is then the longer of the two, not their sum. A run that
// does not get the lock discards what was prepared; nothing of it is the
// command, which never starts before the lock is held.

// Prepared is a job's set-up, made in the background.
type Prepared struct {
	ready sync.WaitGroup // the two halves below

	guard    *guard // nil without one
	guardErr error  // why there is none, when one was asked for

	opts   Options
	reaper bool          // this process is the reaper of the job's orphans
	place  placement     // where the job goes
	cg     *cgroup       // the job's own cgroup, or nil
	swept  chan struct{} // closed once the stale groups beside cg are removed; nil without cg

	mu   sync.Mutex
	used bool // started or discarded: at most once

	out stdio // the command's stdout and stderr: Output
}

// Prepare begins the set-up of a job: the subreaper and the cgroup where
// the system offers them (see Options), and when guarded a guard that
// kills the job with SIGKILL if this process dies before the job has
// ended: its cgroup, or its process group and the processes that left it
// as of the last census. If the guard cannot be started the command runs
// anyway: see GuardErr.
func Prepare(opts Options, guarded bool) *Prepared {
	if opts.NoCgroup {
		opts.Tracking = TrackingSubreaper
	} else if opts.Tracking == "" {
		opts.Tracking = TrackingAuto
	}
	p := &Prepared{opts: opts}
	guardReady := make(chan struct{})
	p.ready.Add(2)
	go func() {
		defer p.ready.Done()
		defer close(guardReady)
		if guarded {
			p.guard, p.guardErr = startGuard()
		}
	}()
	go func() {
		defer p.ready.Done()
		if p.reaper = becomeSubreaper(); p.reaper {
			p.place = choosePlacement(opts) // cgroup_linux.go
		} else {
			p.place = placement{why: "no reaper here"}
		}
		if p.place.mode == TrackingScope && p.place.slice != "" {
			// Scopes of runs that are gone, in the slice the job's goes to.
			swept := make(chan struct{})
			p.swept = swept
			go func() {
				defer close(swept)
				removeStaleScopes(filepath.Join(p.place.mount, p.place.sliceDir))
			}()
		}
		if <-guardReady; p.place.mode != TrackingCgroup {
			return
		}
		parent := p.place.dir
		if p.cg = p.makeCgroup(parent); p.cg == nil {
			p.place = placement{why: "no group can be made in " + parent}
		} else {
			// Groups beside it left by runs that are gone (cgroup_stale_linux.go),
			// while the lock is taken; the exit waits for it (Discard).
			swept, own := make(chan struct{}), filepath.Base(p.cg.dir)
			p.swept = swept
			go func() {
				defer close(swept)
				removeStaleIn(parent, own)
			}()
		}
	}()
	return p
}

// staleWait bounds how long removing the groups of runs that are gone may
// wait for their processes to die after cgroup.kill: they take
// milliseconds, unless stuck in the kernel, and then a later run tries
// again.
const staleWait = 250 * time.Millisecond

// makeCgroup makes the job's group in parent, or returns nil when it
// cannot be made there.
func (p *Prepared) makeCgroup(parent string) *cgroup {
	for try := 0; try < 3; try++ {
		dir := newCgroupDir(parent)
		// The guard hears of the group before it exists: with-lock killed
		// at any moment after (waiting for the lock, say) leaves none
		// behind, and a group never made costs the guard nothing.
		if p.guard != nil {
			p.guard.tell(guardCgroup + " " + dir)
		}
		cg, err := makeCgroup(dir)
		if cg != nil {
			return cg
		}
		if !errors.Is(err, errNameTaken) {
			break
		}
	}
	if p.guard != nil {
		p.guard.tell(guardCgroup) // none after all
	}
	return nil
}

// placement is where a job goes: the way it is followed, and what that
// takes.
type placement struct {
	mode     string   // TrackingScope, TrackingCgroup, or "" for the reaper or process group alone
	dir      string   // TrackingCgroup: the group the job's is made in
	mount    string   // the cgroup2 hierarchy's mount
	bus      *busConn // TrackingScope: the systemd manager to ask
	slice    string   // TrackingScope: the slice to put the scope in; "" for the manager's default
	sliceDir string   // TrackingScope: the slice's group, below mount
	why      string   // why the job has no group of its own, for -v
	err      error    // the run cannot be had as asked (--tracking scope without systemd)
}

// Start runs path with argv and env, stdio inherited, in the prepared
// job, once its set-up is done. The command leads a new process group, or
// joins its guard's. When with-lock has the terminal, the group takes its
// foreground so interactive commands can read it and get Ctrl-C directly.
func (p *Prepared) Start(path string, argv, env []string) (*Child, error) {
	p.ready.Wait()
	if !p.use() {
		panic("supervise: a Prepared job started twice")
	}
	c, err := start(path, argv, env, p)
	if err != nil {
		if p.guard != nil {
			p.guard.standDown()
			p.guard.waitExit()
		}
		return nil, err
	}
	return c, nil
}

// Discard undoes what Prepare set up, for a run whose command will not
// start; after Start it does nothing more. It waits for the set-up to
// finish, so that nothing of it outlives the run, and for the removal of
// the stale groups it found: call it before exiting.
func (p *Prepared) Discard() {
	p.ready.Wait()
	if p.swept != nil {
		select { // bounded: a stale job stuck in the kernel is a later run's to remove
		case <-p.swept:
		case <-time.After(staleWait):
		}
	}
	if !p.use() {
		return
	}
	if p.place.bus != nil {
		p.place.bus.Close() // a scope is asked for only at Start
	}
	if p.guard != nil {
		p.guard.standDown()
		p.guard.waitExit()
	}
	if p.cg != nil {
		p.cg.remove()
	}
}

func (p *Prepared) use() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.used
	p.used = true
	return !was
}
