package testbed

import (
	"net/http"
	"os/exec"
	"strconv"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// StartPushgateway starts Debian's prometheus-pushgateway on a free port
// of the host's loopback, which containers on the host's network reach,
// installing it when it is missing, and returns its URL. It is stopped
// when the test ends.
func StartPushgateway(t testing.TB) string {
	t.Helper()
	Need(t, "prometheus-pushgateway", "prometheus-pushgateway")
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	cmd := exec.Command("prometheus-pushgateway", "--web.listen-address="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatalf("prometheus-pushgateway: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	clitest.Eventually(t, Wait, "the Pushgateway answering at "+url, func() bool {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url
}
