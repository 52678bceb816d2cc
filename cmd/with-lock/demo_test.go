package main_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// make demo's script, run on a test's Redis: one copy runs, two are
// refused, and the key it shows names the holder but never the token's
// random part, as nothing with-lock prints does.
func TestDemoShowsTheHolderNotTheToken(t *testing.T) {
	srv := redistest.Start(t)
	cmd := exec.Command("bash", "../../tools/demo.sh")
	cmd.Env = append(cmd.Environ(), "BIN="+clitest.Binary(t), "DEMO_PORT="+strconv.Itoa(srv.Port))
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(clitest.RunTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the demo did not finish within %s: %s", clitest.RunTimeout, out)
	}
	if err != nil || !strings.Contains(string(out), "== 1 ran, 2 refused with 75 (lock busy)") {
		t.Fatalf("demo: %v; output:\n%s", err, out)
	}
	shown := regexp.MustCompile(`GET lock:demo-nightly-report -> (\S+)`).FindStringSubmatch(string(out))
	if shown == nil || !regexp.MustCompile(`^[^:]+:\d+:[0-9a-z]+\.<`).MatchString(shown[1]) {
		t.Errorf("the demo shows the key as %q, want <host>:<pid>:<start> and the random part hidden:\n%s", shown, out)
	}
	if hex := regexp.MustCompile(`[0-9a-f]{32}`).FindString(string(out)); hex != "" {
		t.Errorf("the demo shows a token's random part %s:\n%s", hex, out)
	}
}
