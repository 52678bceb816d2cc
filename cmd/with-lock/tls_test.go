package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestTLS(t *testing.T) {
	ca := redistest.NewCA(t, "with-lock-test")
	srv := redistest.StartTLS(t, ca, false)
	mtls := redistest.StartTLS(t, ca, true)
	clientCert, clientKey := ca.Issue("with-lock-client")
	otherCA := redistest.NewCA(t, "someone-else")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of stderr; "" means stderr must be empty
	}{
		{"trusted by --cacert", []string{"--redis", srv.URL(), "--cacert", ca.CertFile}, 0, ""},
		{"untrusted: the system roots do not know the test CA", []string{"--redis", srv.URL()}, 78, "certificate"},
		{"untrusted: another CA", []string{"--redis", srv.URL(), "--cacert", otherCA.CertFile}, 78, "certificate"},
		{"--insecure skips verification, with a warning", []string{"--redis", srv.URL(), "--insecure"}, 0, "warning: --insecure"},
		{"skip_verify in the URL needs --insecure", []string{"--redis", srv.URL() + "?skip_verify=true"}, 78, "--insecure"},
		{"skip_verify with --insecure", []string{"--redis", srv.URL() + "?skip_verify=true", "--insecure"}, 0, "warning: --insecure"},
		{"client certificate demanded and given", []string{"--redis", mtls.URL(), "--cacert", ca.CertFile, "--cert", clientCert, "--key", clientKey}, 0, ""},
		{"client certificate demanded, not given", []string{"--redis", mtls.URL(), "--cacert", ca.CertFile}, 78, "certificate"},
		{"missing --cacert file", []string{"--redis", srv.URL(), "--cacert", missing}, 78, "--cacert"},
		{"--cacert without a certificate", []string{"--redis", srv.URL(), "--cacert", garbage}, 78, "no PEM certificate"},
		{"missing --key file", []string{"--redis", mtls.URL(), "--cacert", ca.CertFile, "--cert", clientCert, "--key", missing}, 78, "--key"},
		{"--cert without --key", []string{"--redis", mtls.URL(), "--cert", clientCert}, 64, "--cert and --key"},
		{"--cacert with a plain redis:// URL", []string{"--redis", strings.Replace(srv.URL(), "rediss:", "redis:", 1), "--cacert", ca.CertFile}, 78, "rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, ran := prodMarker(t)
			res := clitest.Run(t, nil, append(append(tc.args, "tls-job"), cmd...)...)
			if res.Code != tc.code || ran() != (tc.code == 0) {
				t.Fatalf("exit %d (ran %v), stderr %q; want %d", res.Code, ran(), res.Stderr, tc.code)
			}
			if (tc.stderr == "") != (res.Stderr == "") || !strings.Contains(res.Stderr, tc.stderr) {
				t.Fatalf("stderr %q, want it to say %q", res.Stderr, tc.stderr)
			}
		})
	}
}
