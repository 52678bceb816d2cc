package withlock

import "time"

// SetWaitTimings sets the fallback poll and the linger of c's waiting
// Acquires, so that a test can tell a wake-up by release message or by
// expiry from one by polling.
func SetWaitTimings(c *Client, poll, linger time.Duration) {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	c.waits.poll, c.waits.linger = poll, linger
}

// Waiting returns how many Acquires of c are in line for the lock called
// name.
func Waiting(c *Client, name string) int {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	if r := c.waits.rooms[c.Key(name)]; r != nil {
		return len(r.queue)
	}
	return 0
}
