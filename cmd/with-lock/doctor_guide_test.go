package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The report docs/production-redis.md shows is a real one: the same
// command against a server set up as the example's (maxmemory 1gb,
// allkeys-lru, no persistence) prints the same lines, but for the numbers
// and addresses, and the server's name and version.
func TestDoctorGuideShowsARealReport(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "production-redis.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for i, part := range strings.Split(string(guide), "```") {
		if i%2 == 1 && strings.Contains(part, "--doctor nightly") {
			block = strings.TrimPrefix(part, "\n")
			break
		}
	}
	command, want, found := strings.Cut(block, "\n")
	if !found || !strings.HasPrefix(command, "$ with-lock ") {
		t.Fatalf("docs/production-redis.md has no block starting \"$ with-lock ... --doctor nightly\": %q", block)
	}
	args := strings.Fields(strings.TrimPrefix(command, "$ with-lock "))
	srv := redistest.Start(t, "maxmemory", "1gb", "maxmemory-policy", "allkeys-lru")
	for i := range args {
		if strings.HasPrefix(args[i], "redis://") {
			args[i] = srv.URL()
		}
	}
	res := clitest.Run(t, nil, args...)
	if res.Code != 1 {
		t.Errorf("exit %d, want 1 (WARNING)", res.Code)
	}
	if got, want := shapeOf(res.Stdout), shapeOf(want); got != want {
		t.Errorf("the guide's report:\n%s\na real one:\n%s", want, got)
	}
}

var (
	numbers    = regexp.MustCompile(`\d+(\.\d+)*[KMGB]?`)
	serverLine = regexp.MustCompile(`(?m)^(OK +server +).*$`)
)

// shapeOf is a report without what differs between runs and servers.
func shapeOf(report string) string {
	return serverLine.ReplaceAllString(numbers.ReplaceAllString(strings.TrimSpace(report), "N"), "${1}…")
}
