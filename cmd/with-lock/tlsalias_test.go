package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// An old TLS key in the config file (key, the lock's key to a reader) is
// bad configuration: exit 78, one line naming the new key, command not run.
func TestOldTLSKeyInConfigFileExits78WithTheNewName(t *testing.T) {
	dir := t.TempDir()
	conf, ran := filepath.Join(dir, "old.conf"), filepath.Join(dir, "ran")
	if err := os.WriteFile(conf, []byte("key = \"/etc/ssl/with-lock.key\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, nil, "--config", conf, "job", "touch", ran)
	if r.Code != 78 {
		t.Errorf("exit %d, want 78; stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, r, conf+":1: key: renamed to tls-key")
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}
