package withlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriber is a Client's one Pub/Sub connection, shared by the rooms of
// all locks that have waiters: a connection per waiter would cost Redis a
// client each. The release script publishes on a channel named exactly
// like the lock's key, so the channel is the room's key.
//
// Its fields are guarded by the Client's waitState.mu. SUBSCRIBE and
// UNSUBSCRIBE are written under that mutex too, so that they reach Redis in
// the order the rooms were created and reaped.
type subscriber struct {
	ps     *redis.PubSub
	unsubs map[string]int // UNSUBSCRIBEs sent and not yet confirmed, by channel
	closed bool
}

// newSubscriber opens the Pub/Sub handle and starts delivering its
// messages. The connection itself is dialled by the first subscribe.
// Called with c.waits.mu held.
func newSubscriber(c *Client) *subscriber {
	s := &subscriber{ps: c.b.subscribe(context.Background())}
	go s.receive(&c.waits)
	return s
}

// subscribe asks for key's channel. Its confirmation marks the room ready.
// An error needs no handling here: go-redis keeps the channel and
// subscribes it again when receive reconnects, and waiters poll meanwhile.
func (s *subscriber) subscribe(key string) {
	_ = s.ps.Subscribe(context.Background(), key)
}

// unsubscribe drops key's channel. Until Redis confirms, a "subscribe"
// confirmation for key is stale (it answers an earlier SUBSCRIBE), and must
// not mark a new room of the same key ready.
func (s *subscriber) unsubscribe(key string) {
	if s.unsubs == nil {
		s.unsubs = make(map[string]int)
	}
	s.unsubs[key]++
	_ = s.ps.Unsubscribe(context.Background(), key)
}

// close ends the connection and, with it, receive.
func (s *subscriber) close() {
	s.closed = true
	_ = s.ps.Close()
}

// receive hands release messages and subscription confirmations to the
// rooms until the subscriber is closed.
func (s *subscriber) receive(ws *waitState) {
	ctx := context.Background()
	failures := 0
	for {
		msg, err := s.ps.Receive(ctx)
		ws.mu.Lock()
		if s.closed {
			ws.mu.Unlock()
			return
		}
		if err != nil {
			// Messages may have been lost while the connection was down.
			// go-redis reconnects and subscribes again; each room is
			// ready again, and its first waiter tries, on confirmation.
			s.unsubs = nil
			for _, r := range ws.rooms {
				r.ready, r.skip = false, 0
			}
			ws.mu.Unlock()
			failures++
			time.Sleep(min(time.Duration(failures)*50*time.Millisecond, time.Second))
			continue
		}
		failures = 0
		switch m := msg.(type) {
		case *redis.Message:
			switch r := ws.rooms[m.Channel]; {
			case r == nil:
			case r.skip > 0:
				r.skip-- // a local Release handed the lock on already
			default:
				r.notify()
			}
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe":
				if r := ws.rooms[m.Channel]; r != nil && s.unsubs[m.Channel] == 0 {
					r.ready = true
					r.notify()
				}
			case "unsubscribe":
				if n := s.unsubs[m.Channel]; n > 1 {
					s.unsubs[m.Channel] = n - 1
				} else {
					delete(s.unsubs, m.Channel)
				}
			}
		}
		ws.mu.Unlock()
	}
}
