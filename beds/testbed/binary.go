package testbed

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// StaticBinary is the with-lock binary `make image` built for this
// machine's architecture and put into the image: static, as released, so
// it runs in any root file system. A missing one fails the test: make
// image builds it (make beds does first).
func StaticBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(RepoRoot(), "bin", "image", "with-lock-linux-"+runtime.GOARCH)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the release binary: %v (make image builds it)", err)
	}
	return bin
}
