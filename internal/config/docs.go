package config

import (
	"bytes"
	"io"
)

// A Doc is a file written from the settings table: the man page, the
// example config file, the shells' completions and the README's flag
// table. make docs (internal/config/gendocs) writes them; a test checks
// that the committed files are what they would write.
type Doc struct {
	Path string // from the module's root
	// Make returns the file's text; old is what the file holds now (the
	// README keeps all but its flag table).
	Make func(old []byte) ([]byte, error)
}

// Docs lists every file written from the settings table.
func Docs() []Doc {
	return []Doc{
		{"packaging/with-lock.1", whole(WriteManPage)},
		{"packaging/with-lock.conf", whole(func(w io.Writer) error { WriteExample(w); return nil })},
		{"packaging/completions/with-lock.bash", whole(WriteBashCompletion)},
		{"packaging/completions/_with-lock", whole(WriteZshCompletion)},
		{"packaging/completions/with-lock.fish", whole(WriteFishCompletion)},
		{"README.md", ReadmeWithFlags},
	}
}

// whole makes a Doc's Make of a writer of the whole file.
func whole(write func(io.Writer) error) func([]byte) ([]byte, error) {
	return func([]byte) ([]byte, error) {
		var b bytes.Buffer
		err := write(&b)
		return b.Bytes(), err
	}
}
