package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
)

// --ping: the healthchecks.io protocol (Cronitor, Uptime Kuma and
// self-hosted healthchecks speak it too). Only the run that holds the lock
// pings: URL/start?rid=ID when the command starts, URL/<exit code>?rid=ID
// once the lock is released, so N servers racing for a job do not look
// like N runs. Nothing is set up unless --ping is given. A ping never
// delays the command by more than its start, never delays the release and
// never changes the exit code; a ping that fails is one warning per run.

// pinger sends one run's pings.
type pinger struct {
	r       *runner
	rid     string // the run's id: healthchecks pairs start and end by it
	client  *http.Client
	started chan struct{} // closed once the start ping got its answer or gave up

	// mu makes deciding to warn and warning one step: a start ping still
	// saying its warning holds the exit until it is said.
	mu     sync.Mutex
	warned bool // a warning was said: one per run
}

func (r *runner) newPinger() *pinger {
	return &pinger{r: r, rid: newRunID(), client: &http.Client{}}
}

// pingStart sends the start ping beside the command, which does not wait
// for it, and returns the run's pinger; nil without --ping.
func (r *runner) pingStart() *pinger {
	if r.cfg.PingURL == "" {
		return nil
	}
	p := r.newPinger()
	p.started = make(chan struct{})
	go func() {
		defer close(p.started)
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PingTimeout)
		defer cancel()
		p.send(ctx, http.MethodGet, "start", "")
	}()
	return p
}

// send makes the ping to URL/suffix, with one retry when the first attempt
// failed in a way a retry may mend (no answer, a 5xx or 429); each attempt
// has half of ctx's time. A failure is a warning, the run's first only.
func (p *pinger) send(ctx context.Context, method, suffix, body string) {
	target := p.url(suffix)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.r.cfg.PingTimeout/2)
		err = p.try(actx, method, target, body)
		cancel()
		var status *pingStatusError
		if err == nil || errors.As(err, &status) && !status.retry() || ctx.Err() != nil {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.r.log.info("pinged", fields{}, "pinged %s", redactURL(target, suffix))
	case !p.warned:
		p.warned = true
		p.r.log.warn("warning", fields{}, "ping %s failed: %s; the run goes on", redactURL(target, suffix), p.r.pingWords(err))
	default: // one warning per run is enough; -v says the rest
		p.r.log.info("pinged", fields{Error: p.r.pingWords(err)}, "ping %s failed too: %s", redactURL(target, suffix), p.r.pingWords(err))
	}
}

// try makes one request and reads its answer.
func (p *pinger) try(ctx context.Context, method, target, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "with-lock/"+buildVersion())
	if body != "" {
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused by the retry
	if resp.StatusCode/100 != 2 {
		return &pingStatusError{code: resp.StatusCode, status: resp.Status}
	}
	return nil
}

// url is --ping's URL with /suffix after its path and the run's id in its
// query.
func (p *pinger) url(suffix string) string {
	u, _ := url.Parse(p.r.cfg.PingURL) // config checked it
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + suffix
	u.RawPath = ""
	q := u.Query()
	q.Set("rid", p.rid)
	u.RawQuery = q.Encode()
	return u.String()
}

// redactURL names a ping in a message without its check's path, which is
// the credential that lets anyone ping the check: "https://hc-ping.com/…/start".
func redactURL(target, suffix string) string {
	u, err := url.Parse(target)
	if err != nil {
		return suffix
	}
	return u.Scheme + "://" + u.Host + "/…/" + suffix
}

// pingStatusError is an answer other than 2xx.
type pingStatusError struct {
	code   int
	status string
}

func (e *pingStatusError) Error() string { return "the server answered " + e.status }

// retry reports whether the answer may be different next time.
func (e *pingStatusError) retry() bool { return e.code >= 500 || e.code == http.StatusTooManyRequests }

// pingWords is err in the user's words: the setting that bounded a
// timeout, what a refused connection means, without Go's
// `Get "URL": ` (the URL is a credential).
func (r *runner) pingWords(err error) string {
	var status *pingStatusError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &status):
		return status.Error()
	case errors.Is(err, context.DeadlineExceeded) || isTimeoutErr(err):
		return fmt.Sprintf("timed out (--ping-timeout %s)", r.cfg.PingTimeout)
	case errors.As(err, &dns):
		return "host " + dns.Name + " not found"
	case errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &op) && op.Addr != nil:
		return "nothing listens at " + op.Addr.String() + " (connection refused)"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return err.Error()
}

// isTimeoutErr reports whether err says it is a timeout.
func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// newRunID is a random UUID (version 4), the run id healthchecks expects.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
