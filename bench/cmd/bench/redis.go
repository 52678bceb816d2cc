package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is the private redis-server of one benchmark run.
type server struct {
	addr string
	port int
	cmd  *exec.Cmd
	dir  string
}

// startRedis runs redis-server from PATH on a free loopback port (never
// 6379), without persistence, in a temporary directory.
func startRedis() (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH (apt-get install redis-server): %w", err)
	}
	dir, err := os.MkdirTemp("", "with-lock-bench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, dir: dir}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, DisableIdentity: true})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s not ready: %w", s.addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 {
			return port, nil
		}
	}
}

// commandsProcessed reads INFO stats total_commands_processed, which counts
// the commands run inside Lua scripts too. The INFO itself counts one.
func commandsProcessed(rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func redisVersion(rdb *redis.Client) string {
	info, _ := rdb.Info(context.Background(), "server").Result()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}
