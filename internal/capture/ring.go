package capture

// ring keeps the last size bytes written to it. It holds at most twice
// that, and moves the kept bytes to its front when full: a copy of size
// bytes for every size bytes written, however small the writes.
type ring struct {
	size  int
	buf   []byte // its last size bytes are the tail
	total int64  // bytes written in all
}

func newRing(size int) *ring { return &ring{size: size} }

func (r *ring) write(p []byte) {
	r.total += int64(len(p))
	if r.size <= 0 {
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, 0, 2*r.size)
	}
	if len(p) >= r.size {
		r.buf = append(r.buf[:0], p[len(p)-r.size:]...)
		return
	}
	if len(r.buf)+len(p) > cap(r.buf) {
		keep := min(r.size-len(p), len(r.buf))
		r.buf = r.buf[:copy(r.buf, r.buf[len(r.buf)-keep:])]
	}
	r.buf = append(r.buf, p...)
}

// last returns the last n bytes written, fewer when fewer were kept; the
// slice is the ring's own until the next write.
func (r *ring) last(n int) []byte {
	n = min(n, r.size, len(r.buf))
	return r.buf[len(r.buf)-n:]
}
