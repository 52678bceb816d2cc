package withlock

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
// It belongs to a waitLine: its fields are guarded by the line's mu, and
// SUBSCRIBE and UNSUBSCRIBE are written under that mutex too, so that they
// reach Redis in the order the queues were created and dropped. What it
// receives it reports to the line through the line's methods.
type subscription struct {
	ps     *redis.PubSub
	unsubs map[string]int // UNSUBSCRIBEs sent and not yet confirmed, by channel
}

// newSubscription opens the Pub/Sub handle of c's backend and starts
// reporting its messages to ln. The connection itself is dialled by the
// first subscribe. Called with ln.mu held.
func newSubscription(c *Client, ln *waitLine) *subscription {
	s := &subscription{ps: c.b.subscribe(context.Background())}
	go s.receive(ln)
	return s
}

// subscribe asks for key's channel; the line hears of the confirmation.
// An error needs no handling here: go-redis keeps the channel and
// subscribes it again when receive reconnects, and waiters poll meanwhile.
func (s *subscription) subscribe(key string) {
	_ = s.ps.Subscribe(context.Background(), key)
}

// unsubscribe drops key's channel. Until Redis confirms, a "subscribe"
// confirmation for key is stale (it answers an earlier SUBSCRIBE), and must
// not mark a new queue of the same key listening.
func (s *subscription) unsubscribe(key string) {
	if s.unsubs == nil {
		s.unsubs = make(map[string]int)
	}
	s.unsubs[key]++
	_ = s.ps.Unsubscribe(context.Background(), key)
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
// only to the channels still wanted, so no confirmation is pending.
func (s *subscription) forgetUnsubscribes() { s.unsubs = nil }

// close ends the connection and, with it, receive. The line has already
// let go of s, so receive reports nothing more.
func (s *subscription) close() { _ = s.ps.Close() }

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
