// Package capture stands between a command and with-lock's stdout and
// stderr, for a run that must know what the command printed: it holds the
// output back to print it only if the run fails (Hold), or passes it
// through as it comes, and either way keeps its last bytes (Tail) for the
// end ping and the run's record.
//
// The command writes into pipes; a goroutine per pipe reads them. A pipe
// ends when every process holding its write end has closed it: the
// command, and whatever it started in the background. Stop does not wait
// for a process outside the job to let go of it (see Stop).
package capture

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options say what to capture.
type Options struct {
	// Hold holds the output back, whole (past very large sizes, its head
	// and its tail), for WriteHeld. The command's stdout and stderr are
	// then one pipe, so that what it wrote to each stays in the order it
	// was written, as with 2>&1. Without Hold each passes through to
	// with-lock's own stdout or stderr.
	Hold bool
	// Tail is how many of the output's last bytes to keep for Tail; 0
	// keeps none.
	Tail int
	// Stdout and Stderr are where output passes through without Hold,
	// and Stdout where PrintHeld prints it with Hold; nil: with-lock's
	// own.
	Stdout, Stderr *os.File
}

// Capture is one command's output, while it runs and after.
type Capture struct {
	stdout, stderr *os.File // the command's ends
	reads          []*os.File
	wg             sync.WaitGroup

	out *os.File // with Hold: where PrintHeld prints

	mu    sync.Mutex // the pumps' shared state below
	spool *spool     // with Hold
	tail  *ring
}

// Start makes the pipes. The command gets Files; after it started (or
// failed to), Started closes this process's copies of them.
func Start(o Options) (*Capture, error) {
	c := &Capture{tail: newRing(o.Tail)}
	if o.Hold {
		// Printed at the end, through a copy of the descriptor as below.
		out, err := dupFile(orFile(o.Stdout, os.Stdout))
		if err != nil {
			return nil, err
		}
		r, w, err := os.Pipe()
		if err != nil {
			out.Close()
			return nil, err
		}
		enlarge(w)
		enlarge(out)
		c.spool, c.out = newSpool(), out
		c.stdout, c.stderr, c.reads = w, w, []*os.File{r}
		c.pump(r, nil)
		return c, nil
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	// Copies of with-lock's own stdout and stderr, not fds 1 and 2: a
	// write to those that finds the reader gone would kill with-lock
	// with SIGPIPE (as the runtime does for them), and leave the lock
	// behind; here it is an error, answered as the command would have
	// met it (see pump).
	stdout, err := dupFile(orFile(o.Stdout, os.Stdout))
	if err != nil {
		closeAll(outR, outW, errR, errW)
		return nil, err
	}
	stderr, err := dupFile(orFile(o.Stderr, os.Stderr))
	if err != nil {
		closeAll(outR, outW, errR, errW, stdout)
		return nil, err
	}
	// And the pipes the output passes on to, when with-lock's are pipes
	// (cron's): as large, so that a read is passed on in one write.
	for _, f := range []*os.File{outW, errW, stdout, stderr} {
		enlarge(f)
	}
	c.stdout, c.stderr, c.reads = outW, errW, []*os.File{outR, errR}
	c.pump(outR, stdout)
	c.pump(errR, stderr)
	return c, nil
}

// Files are the command's stdout and stderr.
func (c *Capture) Files() (stdout, stderr *os.File) { return c.stdout, c.stderr }

// Started closes this process's copies of the command's ends, once the
// command has its own: the pipes then end with the command's job.
func (c *Capture) Started() {
	c.stdout.Close()
	if c.stderr != c.stdout {
		c.stderr.Close()
	}
}

// Stop waits until the output has ended, and returns once it has. A
// process that still holds a pipe once the job is over (one that left
// the job's tracking) is not waited for: what the pipe holds by grace
// from now is read, then the pipe is left.
func (c *Capture) Stop(grace time.Duration) {
	at := time.Now().Add(grace)
	for _, r := range c.reads {
		_ = r.SetReadDeadline(at)
	}
	c.wg.Wait()
}

// Tail returns up to the last n bytes of the output, of the Tail kept;
// call it after Stop.
func (c *Capture) Tail(n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.tail.last(n)...)
}

// Written is how many bytes the command wrote in all; call it after Stop.
func (c *Capture) Written() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tail.total
}

// Held reports whether the output is held back (Hold).
func (c *Capture) Held() bool { return c.spool != nil }

// WriteHeld writes the output held back with Hold to w, in the order it
// was written; call it after Stop.
func (c *Capture) WriteHeld(w io.Writer) error {
	if c.spool == nil {
		return nil
	}
	return c.spool.replay(w)
}

// PrintHeld writes the output held back to with-lock's stdout (Options'
// Stdout); call it after Stop. A reader that went away is an error, not
// SIGPIPE.
func (c *Capture) PrintHeld() error { return c.WriteHeld(c.out) }

// Close lets the held output go; call it after Stop.
func (c *Capture) Close() {
	if c.spool != nil {
		c.spool.close()
		c.out.Close()
	}
	for _, r := range c.reads {
		r.Close()
	}
}

// readSize is how much a pump reads at once: an enlarged pipe's whole
// buffer.
const readSize = 1 << 20

// pump reads r until its end: to dst as it comes (when not nil), and
// into the spool and the tail. A dst that cannot be written any more
// (its reader went away) ends the pump and closes r, so that the command
// meets the closed pipe it would have met writing there itself.
func (c *Capture) pump(r *os.File, dst *os.File) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if dst != nil {
			defer dst.Close()
		}
		buf := make([]byte, readSize)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if dst != nil {
					if _, werr := dst.Write(buf[:n]); werr != nil {
						c.keep(buf[:n])
						r.Close()
						return
					}
				}
				c.keep(buf[:n])
			}
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				c.drain(r, buf, dst)
				return
			case err != nil:
				return
			}
		}
	}()
}

// keep adds p to the spool and the tail.
func (c *Capture) keep(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spool != nil {
		c.spool.write(p)
	}
	c.tail.write(p)
}

// drainReads bounds drain: a writer outside the job that never stops
// does not keep with-lock reading.
const drainReads = 64

// drain reads what r holds now, without waiting: once its deadline has
// passed, Read refuses even what is there.
func (c *Capture) drain(r *os.File, buf []byte, dst *os.File) {
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { // the pipe is non-blocking: os.Pipe's
		for range drainReads {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				return
			}
			if dst != nil {
				_, _ = dst.Write(buf[:n])
			}
			c.keep(buf[:n])
		}
	})
}

// dupFile is a copy of f's descriptor, closed on exec.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	cerr := rc.Control(func(old uintptr) { fd, err = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 3) })
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func orFile(f, def *os.File) *os.File {
	if f == nil {
		return def
	}
	return f
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
