package main_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// secretsScript prints the command's environment, then with-lock's own
// command line ($PPID is with-lock: it runs the command directly).
const secretsScript = `tr '\0' '\n' < /proc/$$/environ; echo ---; tr '\0' ' ' < /proc/$PPID/cmdline`

func TestSecrets(t *testing.T) {
	const password = "s3cret-Pa55word"
	srv := redistest.Start(t)
	if err := srv.Client().ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	plain := srv.URL()
	withPassword := fmt.Sprintf("redis://:%s@%s/0", url.QueryEscape(password), srv.Addr())
	file := func(mode os.FileMode, content string) string {
		path := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	secretVars := []string{"WITH_LOCK_PASSWORD=", "REDISCLI_AUTH=", "WITH_LOCK_SENTINEL_PASSWORD=", "WITH_LOCK_REDIS=redis://:"}

	for _, tc := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		warning bool // the password-in-argv warning, exactly once
	}{
		{"WITH_LOCK_PASSWORD", []string{"WITH_LOCK_PASSWORD=" + password, "WITH_LOCK_SENTINEL_PASSWORD=x"}, []string{"--redis", plain}, 0, false},
		{"REDISCLI_AUTH", []string{"REDISCLI_AUTH=" + password}, []string{"--redis", plain}, 0, false},
		{"password in WITH_LOCK_REDIS", []string{"WITH_LOCK_REDIS=" + withPassword}, nil, 0, false},
		{"--password-file 0600", nil, []string{"--redis", plain, "--password-file", file(0o600, password+"\n")}, 0, false},
		{"--password-file 0400", nil, []string{"--redis", plain, "--password-file", file(0o400, password)}, 0, false},
		{"password in --redis: warned once", nil, []string{"--redis", withPassword}, 0, true},
		{"--password-file readable by others", nil, []string{"--redis", plain, "--password-file", file(0o644, password)}, 78, false},
		{"--password-file readable by the group", nil, []string{"--redis", plain, "--password-file", file(0o640, password)}, 78, false},
		{"missing --password-file", nil, []string{"--redis", plain, "--password-file", "/nonexistent/password"}, 78, false},
		{"no password", nil, []string{"--redis", plain}, 77, false},
		{"wrong password", []string{"WITH_LOCK_PASSWORD=wrong-" + password}, []string{"--redis", plain}, 77, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := clitest.Run(t, tc.env, append(tc.args, "secret-job", "sh", "-c", secretsScript)...)
			if res.Code != tc.code {
				t.Fatalf("exit %d, stderr %q; want %d", res.Code, res.Stderr, tc.code)
			}
			if strings.Contains(res.Stderr, password) {
				t.Fatalf("stderr shows the password: %q", res.Stderr)
			}
			if n := strings.Count(res.Stderr, "visible to other users"); n != map[bool]int{true: 1}[tc.warning] {
				t.Fatalf("stderr %q: password warning %d times, want it %v", res.Stderr, n, tc.warning)
			}
			if tc.code != 0 {
				return
			}
			environ, cmdline, ok := strings.Cut(res.Stdout, "---\n")
			if !ok || !strings.Contains(environ, "WITH_LOCK_NAME=secret-job") {
				t.Fatalf("the command did not report its environment: %q", res.Stdout)
			}
			for _, v := range secretVars {
				if strings.Contains(environ, "\n"+v) || strings.HasPrefix(environ, v) {
					t.Errorf("the command inherited %s...", v)
				}
			}
			if strings.Contains(environ, password) {
				t.Errorf("the command's environment holds the password")
			}
			if !strings.Contains(cmdline, "secret-job") {
				t.Fatalf("not with-lock's command line: %q", cmdline)
			}
			if strings.Contains(cmdline, password) != tc.warning {
				t.Errorf("with-lock's command line %q: password shown %v, want %v", cmdline, !tc.warning, tc.warning)
			}
		})
	}
}
