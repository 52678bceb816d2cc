// Command gendocs writes the files made from with-lock's settings table
// (config.Docs: the man page, the example config file, the shells'
// completions, the README's flag table) into the module whose root is
// -root. make docs runs it; it is not part of the with-lock binary.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/with-lock/with-lock/internal/config"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// write rewrites every file of config.Docs under root that differs from
// what the settings make, and names each one it rewrote.
func write(root string) error {
	for _, d := range config.Docs() {
		path := filepath.Join(root, d.Path)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		text, err := d.Make(old)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Path, err)
		}
		if bytes.Equal(old, text) {
			continue
		}
		if err := os.WriteFile(path, text, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", d.Path)
	}
	return nil
}
