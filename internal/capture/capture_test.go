package capture

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run starts argv with the capture's files as its stdout and stderr, as
// with-lock does, and waits for it.
func run(t *testing.T, c *Capture, argv ...string) error {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = c.Files()
	err := cmd.Start()
	c.Started()
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Wait()
}

// Held output is the command's stdout and stderr as one stream, in the
// order written, byte for byte.
func TestHeldOutputKeepsOrderAndBytes(t *testing.T) {
	c, err := Start(Options{Hold: true, Tail: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = run(t, c, "sh", "-c", `echo out1; echo err1 >&2; printf 'out2\000\377\n'; echo err2 >&2`)
	c.Stop(time.Second)
	var got bytes.Buffer
	if err := c.WriteHeld(&got); err != nil {
		t.Fatal(err)
	}
	if want := "out1\nerr1\nout2\x00\xff\nerr2\n"; got.String() != want {
		t.Errorf("held %q, want %q", got.String(), want)
	}
	if tail := string(c.Tail(100)); tail != "\x00\xff\nerr2\n" {
		t.Errorf("tail %q, want the last 8 bytes", tail)
	}
	if c.Written() != 22 {
		t.Errorf("written %d, want 22", c.Written())
	}
}

// Passed through, each stream goes to its own destination as it comes,
// and the tail keeps the end of both.
func TestPassedThroughOutputGoesToItsOwnStream(t *testing.T) {
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	c, err := Start(Options{Tail: 1 << 10, Stdout: outW, Stderr: errW})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outW.Close()
	errW.Close()
	_ = run(t, c, "sh", "-c", `echo to-stdout; echo to-stderr >&2`)
	c.Stop(time.Second)
	out, _ := io.ReadAll(outR)
	errOut, _ := io.ReadAll(errR)
	if string(out) != "to-stdout\n" || string(errOut) != "to-stderr\n" {
		t.Errorf("stdout %q, stderr %q: want each line on its own stream", out, errOut)
	}
	tail := string(c.Tail(1 << 10))
	if !strings.Contains(tail, "to-stdout\n") || !strings.Contains(tail, "to-stderr\n") || len(tail) != 20 {
		t.Errorf("tail %q: want both lines", tail)
	}
}

// A destination whose reader went away ends the pass-through, and the
// command meets the closed pipe as it would have writing there itself: a
// command that writes for ever is not kept writing.
func TestPassThroughToAClosedReaderStopsTheCommand(t *testing.T) {
	outR, outW := pipe(t)
	c, err := Start(Options{Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outW.Close()
	outR.Close()
	done := make(chan error, 1)
	go func() { done <- run(t, c, "yes") }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
			t.Errorf("yes ended with %v, want SIGPIPE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("yes still writes 10s after its output's reader went away")
	}
	c.Stop(time.Second)
}

// A process that holds the pipe after the job has ended (one that left
// the job's tracking) does not keep Stop waiting past its grace, and what
// was written before is kept.
func TestStopDoesNotWaitForAPipeHeldOpen(t *testing.T) {
	c, err := Start(Options{Hold: true, Tail: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, _ := c.Files()
	held, err := dupFile(w) // the escapee's copy
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_ = run(t, c, "sh", "-c", "echo before")
	if _, err := held.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		c.Stop(100 * time.Millisecond)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop still waits 10s after its grace of 100ms, for a pipe held open")
	}
	var got bytes.Buffer
	_ = c.WriteHeld(&got)
	if got.String() != "before\nlate\n" {
		t.Errorf("held %q, want what was written before Stop", got.String())
	}
}

// Past its file's limit the spool keeps the head and the tail and says
// how much it cut between them; without a file, the head is what memory
// holds, and the line says why.
func TestSpoolKeepsHeadAndTailPastItsLimit(t *testing.T) {
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(i)
	}
	tests := []struct {
		name    string
		noFile  bool
		head    int // bytes kept at the start
		because string
	}{
		{"file", false, 4000, ""},
		{"no file", true, 1000, "no room to keep them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noFile {
				t.Setenv("TMPDIR", "/nonexistent/dir")
			}
			s := &spool{memLimit: 1000, fileLimit: 4000, tailLimit: 500}
			defer s.close()
			for p := data; len(p) > 0; {
				n := min(len(p), 333)
				s.write(p[:n])
				p = p[n:]
			}
			var got bytes.Buffer
			if err := s.replay(&got); err != nil {
				t.Fatal(err)
			}
			head, rest, ok := bytes.Cut(got.Bytes(), []byte("\nwith-lock: "))
			if !ok {
				t.Fatalf("no cut line in %d bytes replayed", got.Len())
			}
			line, tail, _ := bytes.Cut(rest, []byte("\n"))
			cut := len(data) - tt.head - 500
			if !bytes.Equal(head, data[:tt.head]) || !bytes.Equal(tail, data[len(data)-500:]) {
				t.Errorf("replayed %d bytes of head and %d of tail, want %d and 500, byte for byte", len(head), len(tail), tt.head)
			}
			if !strings.HasPrefix(string(line), strconv.Itoa(cut)+" bytes of output cut here") || !strings.Contains(string(line), tt.because) {
				t.Errorf("cut line %q: want %d bytes cut%s", line, cut, tt.because)
			}
		})
	}
}

// Up to its file's limit nothing is lost: what spilled from memory to the
// file replays whole.
func TestSpoolLosesNothingBelowItsLimit(t *testing.T) {
	s := newSpool()
	defer s.close()
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	for want.Len() < 3*memLimit {
		p := make([]byte, rng.IntN(5000))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		want.Write(p)
		s.write(p)
	}
	if s.file == nil {
		t.Fatalf("%d bytes held in memory, want them spilled to a file past %d", want.Len(), memLimit)
	}
	var got bytes.Buffer
	if err := s.replay(&got); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("replayed %d bytes (%v), want the %d written, byte for byte", got.Len(), err, want.Len())
	}
}

// The ring's last n bytes are the last n written, whatever the sizes of
// the writes.
func TestRingKeepsTheLastBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 7, 100, 4096} {
		r := newRing(size)
		var all []byte
		for range 500 {
			p := make([]byte, rng.IntN(3*size+2))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			r.write(p)
			all = append(all, p...)
			for _, n := range []int{0, 1, size / 2, size, size + 1} {
				want := all[max(len(all)-min(n, size), 0):]
				if got := r.last(n); !bytes.Equal(got, want) {
					t.Fatalf("size %d, %d written: last(%d) = %d bytes, want %d", size, len(all), n, len(got), len(want))
				}
			}
		}
		if r.total != int64(len(all)) {
			t.Errorf("size %d: total %d, want %d", size, r.total, len(all))
		}
	}
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
