package withlock

// The one Pub/Sub connection for release messages that localQueues'
// queues share, and what localQueues makes of what it receives.

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
// It belongs to a localQueues: its fields are guarded by localQueues.mu.
// The queues ask for SUBSCRIBE, UNSUBSCRIBE and the close under that mutex, and
// one goroutine (send) writes them, in that order, without it: so they
// reach Redis in the order the queues were created and dropped, and a
// connection slow to be dialled (go-redis dials at the first of them)
// holds up no Release or waiter of the Client. What it receives it reports
// to localQueues through its methods.
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
// reporting its messages to lq. The connection itself is dialled by the
// first subscribe. Called with lq.mu held.
func newSubscription(c *Client, lq *localQueues) *subscription {
	s := &subscription{ps: c.b.subscribe(context.Background()), kick: make(chan struct{}, 1)}
	go s.receive(lq)
	go s.send(lq)
	return s
}

// ask has send write op. Called with lq.mu held.
func (s *subscription) ask(op subOp) {
	s.ops = append(s.ops, op)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// send writes what localQueues asked for, in order, until the close.
// Errors need no handling here: go-redis keeps the channels wanted and
// subscribes them again when receive reconnects, and waiters poll
// meanwhile.
func (s *subscription) send(lq *localQueues) {
	ctx := context.Background()
	for range s.kick {
		for {
			lq.mu.Lock()
			if len(s.ops) == 0 {
				lq.mu.Unlock()
				break
			}
			op := s.ops[0]
			s.ops = s.ops[1:]
			lq.mu.Unlock()
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

// subscribe asks for key's channel; localQueues hears of the confirmation.
// Called with lq.mu held.
func (s *subscription) subscribe(key string) { s.ask(subOp{opSubscribe, key}) }

// unsubscribe drops key's channel. Until Redis confirms, a "subscribe"
// confirmation for key is stale (it answers an earlier SUBSCRIBE), and must
// not mark a new queue of the same key listening. Called with lq.mu held.
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
// written what was asked before. localQueues has already let go of s, so
// receive reports nothing more. Called with lq.mu held.
func (s *subscription) close() { s.ask(subOp{kind: opClose}) }

// receive reports release messages, subscription confirmations and lost
// connections to lq, until lq no longer has s as its subscription.
func (s *subscription) receive(lq *localQueues) {
	ctx := context.Background()
	failures := 0
	for {
		msg, err := s.ps.Receive(ctx)
		if err != nil {
			if !lq.disconnected(s) {
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
			more = lq.released(s, m.Channel)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe":
				more = lq.subscribed(s, m.Channel)
			case "unsubscribe":
				more = lq.unsubscribed(s, m.Channel)
			}
		}
		failures = 0
		if !more {
			return
		}
	}
}

// ifCurrent runs report with lq.mu held if s is still lq's
// subscription, and tells whether it is: once lq has closed s, its
// receive loop ends and what it still got is stale.
func (lq *localQueues) ifCurrent(s *subscription, report func()) bool {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	if lq.sub != s {
		return false
	}
	report()
	return true
}

// released is the subscription reporting a release message on channel,
// which is the lock's key.
func (lq *localQueues) released(s *subscription, channel string) bool {
	return lq.ifCurrent(s, func() {
		switch q := lq.queues[channel]; {
		case q == nil:
		case q.ownReleasesToIgnore > 0:
			q.ownReleasesToIgnore-- // a Release of ours handed the lock on already
		default:
			q.wakeFirst()
		}
	})
}

// subscribed is the subscription reporting that Redis confirmed a SUBSCRIBE
// to channel: every later release reaches the queue, and its first in line
// tries once more in case one came before.
func (lq *localQueues) subscribed(s *subscription, channel string) bool {
	return lq.ifCurrent(s, func() {
		if q := lq.queues[channel]; q != nil && !s.unsubscribing(channel) {
			q.listening = true
			q.wakeFirst()
		}
	})
}

// unsubscribed is the subscription reporting that Redis confirmed an
// UNSUBSCRIBE from channel.
func (lq *localQueues) unsubscribed(s *subscription, channel string) bool {
	return lq.ifCurrent(s, func() { s.unsubscribeDone(channel) })
}

// disconnected is the subscription reporting that its connection failed.
// Messages may have been lost while it was down. go-redis reconnects and
// subscribes again; each queue is listening again, and its first waiter
// tries, on confirmation.
func (lq *localQueues) disconnected(s *subscription) bool {
	return lq.ifCurrent(s, func() {
		s.forgetUnsubscribes()
		for _, q := range lq.queues {
			q.listening, q.ownReleasesToIgnore = false, 0
		}
	})
}
