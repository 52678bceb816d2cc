package withlock

import "time"

// SetWaitTimings sets the fallback poll and the linger of c's waiting
// Acquires, so that a test can tell a wake-up by release message or by
// expiry from one by polling.
func SetWaitTimings(c *Client, poll, linger time.Duration) {
	c.line.mu.Lock()
	defer c.line.mu.Unlock()
	c.line.poll, c.line.linger = poll, linger
}

// Waiting returns how many Acquires of c are in line for the lock called
// name.
func Waiting(c *Client, name string) int {
	c.line.mu.Lock()
	defer c.line.mu.Unlock()
	if q := c.line.queues[c.Key(name)]; q != nil {
		return len(q.waiters)
	}
	return 0
}
