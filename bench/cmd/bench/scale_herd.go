package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	wlconfig "github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The herd at the top of the minute: N runs of one name that start in the
// same instant, as cron fires one crontab line on N hosts. Exactly one
// must run the command; the others answer 75 (busy), or 0 with
// --once-per's waiting losers, and none 69 (Redis unavailable) at the
// default --redis-timeout.
//
// Two ways of starting them. Fresh Clients: N goroutines of this process,
// each with a new go-redis client set up from the CLI's own settings
// (internal/config) and so a new connection, released together by closing
// a channel: every connection, handshake and SET reaches Redis in the same
// instant, and what is measured is Redis and the protocol. Processes: N
// with-lock processes started as fast as this machine can (one launcher
// per core): as cron runs them, but here 2,000 start-ups share 2 cores, so
// they reach Redis spread over the time this machine needs to start them,
// which the same launches of `with-lock --version` measure alone.

// herdWay is one way of running a herd.
type herdWay struct {
	name    string
	procs   bool          // with-lock processes; otherwise fresh Clients
	tls     bool          // over TLS (rediss://, the server's CA)
	jitter  time.Duration // --jitter
	oncePer bool          // --once-per 1h -w 60s: the losers wait, then answer 0
	startup bool          // `with-lock --version` only: this machine's start-up rate
}

// herdJitter is the --jitter of the herd's jittered ways: what a job
// started every minute can spare, and over TLS more than redis-server's
// one thread needs for 2,000 handshakes (connectCost).
const herdJitter = 10 * time.Second

func herdWays() []herdWay {
	j := "--jitter " + short(herdJitter)
	return []herdWay{
		{name: "fresh Clients"},
		{name: "fresh Clients, TLS", tls: true},
		{name: "fresh Clients, TLS, " + j, tls: true, jitter: herdJitter},
		{name: "processes", procs: true},
		{name: "processes, TLS", procs: true, tls: true},
		{name: "processes, TLS, " + j, procs: true, tls: true, jitter: herdJitter},
		{name: "processes, --once-per 1h -w 60s", procs: true, oncePer: true},
		{name: "processes, `with-lock --version` (start-up only)", procs: true, startup: true},
	}
}

// herdRun is one herd.
type herdRun struct {
	way       herdWay
	n         int
	wall      time.Duration   // the start → the last answer
	answers   []time.Duration // each run's start → its answer, sorted
	codes     map[int]int     // exit code → runs
	ran       int             // commands run
	serverCPU time.Duration   // redis-server's CPU in the herd
	peak      int64           // most connections at once, the bench's own left out
	errs      []string        // a few messages of runs that failed
}

// herdServers are the two servers the herds run on, plain and TLS.
type herdServers struct {
	plain, tls *redistest.Server
	caFile     string
	tlsConfig  *tls.Config
	adm        map[bool]*redis.Client
	stop       func()
}

func startHerdServers() (*herdServers, error) {
	plain, stop1, err := redistest.StartMain("maxclients", "20000")
	if err != nil {
		return nil, err
	}
	tlsSrv, ca, stop2, err := redistest.StartTLSMain(false, "maxclients", "20000")
	if err != nil {
		stop1()
		return nil, err
	}
	h := &herdServers{plain: plain, tls: tlsSrv, caFile: ca.CertFile,
		tlsConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
	h.adm = map[bool]*redis.Client{
		false: newGoRedis(plain.Addr()),
		true:  redis.NewClient(&redis.Options{Addr: tlsSrv.Addr(), TLSConfig: h.tlsConfig, DisableIdentity: true}),
	}
	h.stop = func() {
		_ = h.adm[false].Close()
		_ = h.adm[true].Close()
		stop2()
		stop1()
	}
	return h, nil
}

// args are the CLI's flags for way w on these servers.
func (h *herdServers) args(w herdWay) []string {
	if w.tls {
		return []string{"--redis", h.tls.URL(), "--tls-cacert", h.caFile}
	}
	return []string{"--redis", h.plain.URL()}
}

// runHerd runs n runs of a fresh name the way w says, with the with-lock
// binary wl for processes.
func runHerd(h *herdServers, wl string, w herdWay, n int, seq int) (herdRun, error) {
	r := herdRun{way: w, n: n, codes: map[int]int{}}
	adm := h.adm[w.tls]
	name := fmt.Sprintf("herd-%d-%d", seq, n)
	dir, err := os.MkdirTemp("", "with-lock-bench-herd-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	done := filepath.Join(dir, "done") // the winner's command runs until it exists

	// The connections at their peak, sampled every 2 ms on one connection
	// of the bench's own (left out of the count).
	port := h.plain.Port
	if w.tls {
		port = h.tls.Port
	}
	peak, stopPeak := sampleConnections(port)
	cpu0 := serverCPU(adm)

	answers := make([]time.Duration, n)
	codes := make([]int, n)
	msgs := make([]string, n)
	start := time.Now()
	switch {
	case w.procs:
		err = herdProcesses(wl, h.args(w), w, name, dir, done, answers, codes, msgs)
	default:
		err = herdClients(h, w, name, done, answers, codes, msgs)
	}
	r.wall = time.Since(start)
	stopPeak()
	r.peak = peak.Load()
	r.serverCPU = serverCPU(adm) - cpu0
	if err != nil {
		return r, err
	}
	for i, c := range codes {
		r.codes[c]++
		if msgs[i] != "" && len(r.errs) < 3 {
			r.errs = append(r.errs, msgs[i])
		}
	}
	r.answers = answers
	slices.Sort(r.answers)
	files, _ := filepath.Glob(filepath.Join(dir, "ran.*"))
	r.ran = len(files)
	if !w.procs {
		r.ran = r.codes[0]
	}
	return r, nil
}

// herdProcesses starts n with-lock processes, one launcher per core, and
// waits for all to answer. Each records its start → exit, and exit code.
func herdProcesses(wl string, conn []string, w herdWay, name, dir, done string, answers []time.Duration, codes []int, msgs []string) error {
	n := len(answers)
	cmdline := func(i int) []string {
		if w.startup {
			return []string{"--version"}
		}
		args := append([]string{}, conn...)
		if w.jitter > 0 {
			args = append(args, "--jitter", w.jitter.String())
		}
		if w.oncePer {
			// The README's crontab: the losers wait, then find the window
			// done and exit 0 without a word.
			return append(args, "--once-per", "1h", "-w", "60s", "-q", name, "sh", "-c", `touch "$0/ran.$$"`, dir)
		}
		return append(args, name, "sh", "-c", `touch "$0/ran.$$"; while [ ! -e "$1" ]; do sleep 0.01; done`, dir, done)
	}
	var answered atomic.Int64
	var wg sync.WaitGroup
	launchers := runtime.NumCPU()
	errs := make(chan error, launchers)
	for l := range launchers {
		wg.Go(func() {
			for i := l; i < n; i += launchers {
				cmd := exec.Command(wl, cmdline(i)...)
				var stderr syncBuf
				cmd.Stderr = &stderr
				t0 := time.Now()
				if err := cmd.Start(); err != nil {
					errs <- fmt.Errorf("start with-lock %d of %d: %w", i+1, n, err)
					return
				}
				wg.Go(func() {
					_ = cmd.Wait()
					answers[i] = time.Since(t0)
					codes[i] = cmd.ProcessState.ExitCode()
					if c := codes[i]; c != 0 && c != 75 {
						msgs[i] = fmt.Sprintf("exit %d: %s", c, stderr.String())
					}
					answered.Add(1)
				})
			}
		})
	}
	// The winner's command runs until every other run has answered.
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for answered.Load() < int64(n-1) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		_ = os.WriteFile(done, nil, 0o644)
	}()
	wg.Wait()
	close(errs)
	return <-errs
}

// herdClients runs n fresh Clients released at once, each as the CLI's
// try: its settings parsed by internal/config, its client made by them,
// one TryAcquire within --redis-timeout (with --jitter, after its delay).
// The winner holds the lock until every other has answered.
func herdClients(h *herdServers, w herdWay, name, done string, answers []time.Duration, codes []int, msgs []string) error {
	n := len(answers)
	cfg, err := wlconfig.Parse(append(h.args(w), name, "true"), func(string) string { return "" })
	if err != nil {
		return err
	}
	go0 := make(chan struct{})
	var answered atomic.Int64
	allAnswered := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-go0
			t0 := time.Now()
			if w.jitter > 0 {
				time.Sleep(rand.N(w.jitter))
			}
			clients, err := cfg.RedisClients()
			if err != nil {
				codes[i], msgs[i] = 78, err.Error()
				return
			}
			rdb := clients[0]
			defer rdb.Close()
			c := withlock.New(rdb, &withlock.Options{Prefix: cfg.Prefix})
			ctx, cancel := context.WithTimeout(context.Background(), cfg.RedisTimeout)
			l, err := c.TryAcquire(ctx, name, cfg.TTL, nil)
			cancel()
			answers[i] = time.Since(t0)
			switch {
			case err == nil:
				codes[i] = 0
				if answered.Add(1) == int64(n) {
					close(allAnswered)
				}
				select {
				case <-allAnswered:
				case <-time.After(3 * time.Minute):
				}
				_ = l.Release(context.Background())
				return
			case errors.Is(err, withlock.ErrNotObtained):
				codes[i] = 75
			default:
				codes[i], msgs[i] = 69, err.Error()
			}
			if answered.Add(1) == int64(n) {
				close(allAnswered)
			}
		})
	}
	close(go0)
	wg.Wait()
	_ = done
	return nil
}

// sampleConnections counts, every 5 ms until stop is called, the TCP
// connections to port that the kernel holds for Redis, accepted or still
// in its listen backlog (/proc/net/tcp: server side, ESTABLISHED), and
// keeps the most seen, less the bench's own. Read from the kernel, not by
// asking Redis, so that counting costs Redis nothing.
func sampleConnections(port int) (*atomic.Int64, func()) {
	var peak atomic.Int64
	quit, stopped := make(chan struct{}), make(chan struct{})
	own := int64(countConnections(port))
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if c := int64(countConnections(port)) - own; c > peak.Load() {
				peak.Store(c)
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return &peak, func() { close(quit); <-stopped }
}

// countConnections counts the ESTABLISHED TCP sockets whose local port is
// port, in /proc/net/tcp (IPv4 loopback: the servers listen on 127.0.0.1).
func countConnections(port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	want := []byte(fmt.Sprintf(":%04X", port))
	n := 0
	for _, line := range bytes.Split(b, []byte("\n"))[1:] {
		// "  sl  local_address rem_address   st ...": 0100007F:1F90 ... 01
		f := bytes.Fields(line)
		if len(f) > 3 && bytes.HasSuffix(f[1], want) && string(f[3]) == "01" {
			n++
		}
	}
	return n
}

// syncBuf is a bytes buffer safe for the writes of one process's stderr
// and a later read.
type syncBuf struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.b) < 4096 {
		s.b = append(s.b, p...)
	}
	return len(p), nil
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// String is the line the run prints as it goes.
func (r herdRun) String() string {
	s := fmt.Sprintf("%5d %-50s wall %s, answers p50 %s p99 %s, codes %v, ran %d, Redis CPU %s, peak %d connections",
		r.n, r.way.name, fmtMS(r.wall), fmtMS(percentile(r.answers, 50)), fmtMS(percentile(r.answers, 99)),
		r.codes, r.ran, fmtMS(r.serverCPU), r.peak)
	for _, e := range r.errs {
		s += "\n        " + e
	}
	return s
}

// connectCost is redis-server's CPU for one new connection, its handshake,
// a PING and its close, over TLS or not: n connections made one after the
// other, so that nothing else is measured. What a herd of N hosts costs
// Redis's one thread before any lock is taken is about N times this.
func connectCost(h *herdServers, overTLS bool, n int) (time.Duration, error) {
	adm := h.adm[overTLS]
	addr, conf := h.plain.Addr(), (*tls.Config)(nil)
	if overTLS {
		addr, conf = h.tls.Addr(), h.tlsConfig
	}
	cpu0 := serverCPU(adm)
	for range n {
		rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: conf, DisableIdentity: true})
		err := rdb.Ping(context.Background()).Err()
		_ = rdb.Close()
		if err != nil {
			return 0, err
		}
	}
	return (serverCPU(adm) - cpu0) / time.Duration(n), nil
}

// short writes d as a person would: 1m, not 1m0s.
func short(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
