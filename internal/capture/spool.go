package capture

import (
	"fmt"
	"io"
	"os"
)

// spool holds output back, byte for byte, in bounded memory: its first
// memLimit bytes in memory, then in a temporary file up to fileLimit
// bytes in all; past that it keeps the last tailLimit bytes, and replays
// a line saying how many were cut between the two. The file is unlinked
// as soon as it is made, so that nothing of it outlives with-lock, even
// killed. Without a file (none could be made) the head is what memory
// holds.
type spool struct {
	memLimit, fileLimit, tailLimit int64

	mem     []byte
	file    *os.File
	fileErr error // why there is no file, once one was needed
	head    int64 // bytes in mem or file
	over    *ring // past the head's limit: its last tailLimit bytes
}

// Limits of a spool: a short job's output stays in memory; a long one's
// goes to a file, up to a size no mail should exceed, and past it the head
// and the tail are kept.
const (
	memLimit  = 64 << 10
	fileLimit = 256 << 20
	tailLimit = 1 << 20
)

func newSpool() *spool {
	return &spool{memLimit: memLimit, fileLimit: fileLimit, tailLimit: tailLimit}
}

func (s *spool) write(p []byte) {
	if room := s.limit() - s.head; room > 0 {
		n := min(int64(len(p)), room)
		s.store(p[:n])
		p = p[n:]
	}
	if len(p) > 0 {
		if s.over == nil {
			s.over = newRing(int(s.tailLimit))
		}
		s.over.write(p)
	}
}

// limit is how long the head may grow: up to fileLimit with a file, to
// memLimit without.
func (s *spool) limit() int64 {
	if s.fileErr != nil {
		return s.memLimit
	}
	return s.fileLimit
}

// store adds p to the head, moving it to a file when memory is full.
func (s *spool) store(p []byte) {
	if s.file == nil && s.head+int64(len(p)) > s.memLimit {
		s.spill()
	}
	if s.file == nil {
		n := min(int64(len(p)), s.memLimit-s.head)
		s.mem = append(s.mem, p[:n]...)
		s.head += n
		if int(n) < len(p) { // no file: the rest is the overflow's
			s.write(p[n:])
		}
		return
	}
	n, err := s.file.Write(p)
	s.head += int64(n)
	if err != nil { // a full disk: what is written is the head
		s.fileErr, s.fileLimit = err, s.head
		if n < len(p) {
			s.write(p[n:])
		}
	}
}

// spill moves the head from memory to a new temporary file, or notes why
// it could not.
func (s *spool) spill() {
	if s.fileErr != nil {
		return
	}
	f, err := os.CreateTemp("", "with-lock-output-")
	if err == nil {
		err = os.Remove(f.Name())
		if err == nil {
			_, err = f.Write(s.mem)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		s.fileErr = err
		return
	}
	s.file, s.mem = f, nil
}

// replay writes what was held, in order: the head, then, if more came,
// a line saying how much was cut and the last bytes.
func (s *spool) replay(w io.Writer) error {
	var err error
	if s.file != nil {
		_, err = io.Copy(w, io.NewSectionReader(s.file, 0, s.head))
	} else {
		_, err = w.Write(s.mem)
	}
	if err != nil || s.over == nil {
		return err
	}
	tail := s.over.last(int(s.tailLimit))
	if cut := s.over.total - int64(len(tail)); cut > 0 {
		why := ""
		if s.fileErr != nil {
			why = fmt.Sprintf(" (no room to keep them: %v)", s.fileErr)
		}
		if _, err := fmt.Fprintf(w, "\nwith-lock: %d bytes of output cut here%s\n", cut, why); err != nil {
			return err
		}
	}
	_, err = w.Write(tail)
	return err
}

// close removes the file, if there is one.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}
