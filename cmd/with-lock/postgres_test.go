package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// Real databases for the tests of docs/fencing.md: a PostgreSQL server the
// test starts on a free port of the loopback, and the sqlite3 shell. `make
// test` installs both (make postgresql, make sqlite); missing, a test fails,
// except under go test -short outside CI, as with promtool.

// needTool returns the path of a program the test cannot do without.
func needTool(t *testing.T, path, install string) string {
	t.Helper()
	found, err := exec.LookPath(path)
	switch {
	case err == nil:
		return found
	case testing.Short() && os.Getenv("CI") != "true":
		t.Skipf("runs %s, which is not installed: not run under go test -short", path)
	}
	t.Fatalf("%s not found: run %s", path, install)
	return ""
}

// postgresBin is the directory of the newest PostgreSQL server installed
// the Debian way (/usr/lib/postgresql/<major>/bin), or of the one on PATH.
func postgresBin(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgMajor(a) - pgMajor(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return filepath.Dir(needTool(t, "initdb", "make postgresql (the Debian package postgresql)"))
}

func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// postgres is one server of a test.
type postgres struct {
	t    *testing.T
	port int
	psql string
}

// startPostgres initialises a cluster in a directory of its own and starts
// it on a free port of 127.0.0.1, without a Unix socket, trusting local
// connections as user postgres; it stops with the test. PostgreSQL refuses
// to run as root: as root, the cluster belongs to nobody.
func startPostgres(t *testing.T) *postgres {
	t.Helper()
	if testing.Short() { // as redistest: go test -short runs what needs no server
		t.Skip("starts a PostgreSQL server: not run under go test -short")
	}
	bin := postgresBin(t)
	psql := needTool(t, "psql", "make postgresql (the Debian package postgresql-client)")
	// Not t.TempDir: that is root's alone, and nobody must reach the data.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("PostgreSQL will not run as root, and there is no user nobody: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	asOwner := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return cmd
	}
	data := filepath.Join(dir, "data")
	initdb := asOwner("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := redistest.FreePort(t)
	logPath := filepath.Join(dir, "log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	srv := asOwner("postgres", "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "fsync=off")
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown: sessions ended, no checkpoint wait
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	})
	p := &postgres{t: t, port: port, psql: psql}
	deadline := time.Now().Add(60 * time.Second) // initdb and start-up on a loaded machine
	for {
		if _, err := p.query("postgres", "SELECT 1"); err == nil {
			return p
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres on port %d exited:\n%s", port, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres on port %d not answering after 60s:\n%s", port, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// env is what psql needs to reach database db of the server.
func (p *postgres) env(db string) []string {
	return []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(p.port), "PGUSER=postgres", "PGDATABASE=" + db,
		"PGCONNECT_TIMEOUT=10"}
}

// query runs sql in database db with psql and returns its rows, unaligned,
// fields separated by '|'.
func (p *postgres) query(db, sql string) (string, error) {
	cmd := exec.Command(p.psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1")
	cmd.Env = append(os.Environ(), p.env(db)...)
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql: %w: %s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// must is query, failing the test on an error.
func (p *postgres) must(db, sql string) string {
	p.t.Helper()
	out, err := p.query(db, sql)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// createDB creates database name, for one subtest.
func (p *postgres) createDB(name string) {
	p.t.Helper()
	p.must("postgres", "CREATE DATABASE "+name)
}
