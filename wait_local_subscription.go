package withlock

// The Client's one Pub/Sub connection for release messages, shared by all
// its waiters.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscription is a Client's one Pub/Sub connection, shared by the queues
// of all locks that have waiters: a connection per waiter would cost Redis
// a client each. The release script publishes on a channel named exactly
// like the lock's key, so a queue's channel is its key.
//
// It belongs to a waitLine: its fields are guarded by localQueues.mu. The
// line asks for SUBSCRIBE, UNSUBSCRIBE and the close under that mutex, and
// one goroutine (send) writes them, in that order, without it: so they
// reach Redis in the order the queues were created and dropped, and a
// connection slow to be dialled (go-redis dials at the first of them)
// holds up no Release or waiter of the Client. What it receives it reports
// to the line through the line's methods.
type subscription struct {
	ps     *redis.PubSub
	unsubs map[string]int // UNSUBSCRIBEs asked for and not yet confirmed, by channel
	ops    []subOp        // asked for and not yet taken by send
	kick   chan struct{}  // capacity 1: ops has more for send
}

// subOp is a command send writes: a SUBSCRIBE or UNSUBSCRIBE of key, or
// the close.
type subOp struct {
	kind int
	key  string
}

const (
	opSubscribe = iota
	opUnsubscribe
	opClose
)

// newSubscription opens the Pub/Sub handle of c's backend and starts
// reporting its messages to ln. The connection itself is dialled by the
// first subscribe. Called with ln.local.mu held.
func newSubscription(c *Client, ln *waitLine) *subscription {
	s := &subscription{ps: c.b.subscribe(context.Background()), kick: make(chan struct{}, 1)}
	go s.receive(ln)
	go s.send(ln)
	return s
}

// ask has send write op. Called with ln.local.mu held.
func (s *subscription) ask(op subOp) {
	s.ops = append(s.ops, op)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// send writes what the line asked for, in order, until the close.
// Errors need no handling here: go-redis keeps the channels wanted and
// subscribes them again when receive reconnects, and waiters poll
// meanwhile.
func (s *subscription) send(ln *waitLine) {
	ctx := context.Background()
	for range s.kick {
		for {
			ln.local.mu.Lock()
			if len(s.ops) == 0 {
				ln.local.mu.Unlock()
				break
			}
			op := s.ops[0]
			s.ops = s.ops[1:]
			ln.local.mu.Unlock()
			switch op.kind {
			case opSubscribe:
				_ = s.ps.Subscribe(ctx, op.key)
			case opUnsubscribe:
				_ = s.ps.Unsubscribe(ctx, op.key)
			case opClose:
				_ = s.ps.Close()
				return
			}
		}
	}
}

// subscribe asks for key's channel; the line hears of the confirmation.
// Called with ln.local.mu held.
func (s *subscription) subscribe(key string) { s.ask(subOp{opSubscribe, key}) }

// unsubscribe drops key's channel. Until Redis confirms, a "subscribe"
// confirmation for key is stale (it answers an earlier SUBSCRIBE), and must
// not mark a new queue of the same key listening. Called with ln.local.mu held.
func (s *subscription) unsubscribe(key string) {
	if s.unsubs == nil {
		s.unsubs = make(map[string]int)
	}
	s.unsubs[key]++
	s.ask(subOp{opUnsubscribe, key})
}

// unsubscribing reports whether an UNSUBSCRIBE of channel is unconfirmed.
func (s *subscription) unsubscribing(channel string) bool { return s.unsubs[channel] > 0 }

// unsubscribeDone records Redis's confirmation of an UNSUBSCRIBE.
func (s *subscription) unsubscribeDone(channel string) {
	if n := s.unsubs[channel]; n > 1 {
		s.unsubs[channel] = n - 1
	} else {
		delete(s.unsubs, channel)
	}
}

// forgetUnsubscribes is for a lost connection: go-redis subscribes again
// only to the channels still wanted, so no confirmation is pending but
// those of the UNSUBSCRIBEs send has yet to write.
func (s *subscription) forgetUnsubscribes() {
	s.unsubs = nil
	for _, op := range s.ops {
		if op.kind == opUnsubscribe {
			if s.unsubs == nil {
				s.unsubs = make(map[string]int)
			}
			s.unsubs[op.key]++
		}
	}
}

// close ends the connection and, with it, receive and send, once send has
// written what was asked before. The line has already let go of s, so
// receive reports nothing more. Called with ln.local.mu held.
func (s *subscription) close() { s.ask(subOp{kind: opClose}) }

// receive reports release messages, subscription confirmations and lost
// connections to ln, until ln no longer has s as its subscription.
func (s *subscription) receive(ln *waitLine) {
	ctx := context.Background()
	failures := 0
	for {
		msg, err := s.ps.Receive(ctx)
		if err != nil {
			if !ln.disconnected(s) {
				return
			}
			// go-redis reconnects on the next Receive; do not spin while
			// Redis is away.
			failures++
			time.Sleep(min(time.Duration(failures)*50*time.Millisecond, time.Second))
			continue
		}
		more := true
		switch m := msg.(type) {
		case *redis.Message:
			more = ln.released(s, m.Channel)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe":
				more = ln.subscribed(s, m.Channel)
			case "unsubscribe":
				more = ln.unsubscribed(s, m.Channel)
			}
		}
		failures = 0
		if !more {
			return
		}
	}
}
