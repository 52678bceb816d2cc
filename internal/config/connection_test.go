package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

func envMap(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestProductionFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		err  string // part of the usage error; "" means valid
	}{
		{"three masters", []string{"--redis", "redis://a", "--redis", "redis://b", "--redis", "redis://c"}, nil, ""},
		{"two masters", []string{"--redis", "redis://a", "--redis", "redis://b"}, nil, "odd number"},
		{"cluster seeds may be even", []string{"--cluster", "--redis", "redis://a", "--redis", "redis://b"}, nil, ""},
		{"sentinel", []string{"--sentinel", "h:1", "--sentinel", "h:2", "--sentinel-master", "m"}, nil, ""},
		{"sentinel without master name", []string{"--sentinel", "h:1"}, nil, "--sentinel-master"},
		{"master name without sentinel", []string{"--sentinel-master", "m"}, nil, "--sentinel"},
		{"sentinel and cluster", []string{"--cluster", "--sentinel", "h:1", "--sentinel-master", "m"}, nil, "exclude"},
		{"sentinel and several URLs", []string{"--sentinel", "h:1", "--sentinel-master", "m", "--redis", "redis://a", "--redis", "redis://b", "--redis", "redis://c"}, nil, "at most one"},
		{"cert without key", []string{"--tls-cert", "c.pem"}, nil, "--tls-key"},
		{"key without cert", []string{"--tls-key", "k.pem"}, nil, "--tls-cert"},
		{"insecure with cacert", []string{"--tls-insecure", "--tls-cacert", "ca.pem"}, nil, "contradict"},
		{"fence on a quorum", []string{"--fence", "--redis", "redis://a", "--redis", "redis://b", "--redis", "redis://c"}, nil, "--fence"},
		{"fence on a cluster", []string{"--fence", "--cluster", "--redis", "redis://a", "--redis", "redis://b"}, nil, ""},
		{"negative min-replicas", []string{"--min-replicas", "-1"}, nil, "negative"},
		{"even masters from the environment", nil, map[string]string{"WITH_LOCK_REDIS": "redis://a redis://b"}, "odd number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(append(tc.args, "name", "true"), envMap(tc.env))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want a usage error saying %q", err, tc.err)
			}
		})
	}
}

func TestRedisURLsAndWarnings(t *testing.T) {
	c, err := config.Parse([]string{"name", "true"}, envMap(map[string]string{"WITH_LOCK_REDIS": " redis://a:1  redis://b:2 redis://c:3 "}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"redis://a:1", "redis://b:2", "redis://c:3"}; !slices.Equal(c.RedisURLs, want) {
		t.Fatalf("RedisURLs %q, want %q", c.RedisURLs, want)
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings for the environment: %q", c.Warnings)
	}
	c, err = config.Parse([]string{"--redis", "redis://:pw@a", "--redis", "redis://:pw@b", "--redis", "redis://:pw@c", "name", "true"}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || strings.Contains(c.Warnings[0], "pw") {
		t.Fatalf("warnings %q: want one, without the password", c.Warnings)
	}
	c, err = config.Parse([]string{"name", "true"}, envMap(nil))
	if err != nil || !slices.Equal(c.RedisURLs, []string{config.DefaultRedisURL}) {
		t.Fatalf("default: %v, %q", err, c.RedisURLs)
	}
}

func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := file("good", 0o600, "from-file\n")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // the password; "ERR" for ErrConfig
	}{
		{"none", nil, nil, ""},
		{"REDISCLI_AUTH", nil, map[string]string{"REDISCLI_AUTH": "cli"}, "cli"},
		{"WITH_LOCK_PASSWORD before REDISCLI_AUTH", nil, map[string]string{"REDISCLI_AUTH": "cli", "WITH_LOCK_PASSWORD": "ours"}, "ours"},
		{"URL before the environment", []string{"--redis", "redis://u:url@h/0"}, map[string]string{"WITH_LOCK_PASSWORD": "ours"}, "url"},
		{"file before all", []string{"--redis", "redis://u:url@h/0", "--password-file", good}, map[string]string{"WITH_LOCK_PASSWORD": "ours"}, "from-file"},
		{"CRLF file", []string{"--password-file", file("crlf", 0o400, "dos\r\n")}, nil, "dos"},
		{"file readable by others", []string{"--password-file", file("world", 0o604, "x")}, nil, "ERR"},
		{"file writable by the group", []string{"--password-file", file("group", 0o620, "x")}, nil, "ERR"},
		{"empty file", []string{"--password-file", file("empty", 0o600, "\n")}, nil, "ERR"},
		{"a directory", []string{"--password-file", dir}, nil, "ERR"},
		{"skip_verify without --tls-insecure", []string{"--redis", "rediss://h/0?skip_verify=true"}, nil, "ERR"},
		{"bad URL with a password", []string{"--redis", "redis://:hunter2@h:notaport/0"}, nil, "ERR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse(append(tc.args, "name", "true"), envMap(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			opt, err := c.RedisOptions()
			if tc.want == "ERR" {
				if !errors.Is(err, config.ErrConfig) {
					t.Fatalf("err = %v, want ErrConfig", err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opt.Password != tc.want {
				t.Fatalf("password %q, want %q", opt.Password, tc.want)
			}
		})
	}
}

func TestCommandEnviron(t *testing.T) {
	in := []string{
		"PATH=/bin", "WITH_LOCK_PASSWORD=a", "REDISCLI_AUTH=b", "WITH_LOCK_SENTINEL_PASSWORD=c",
		"HOME=/root", "WITH_LOCK_REDIS=redis://:secret@h/0", "REDISCLI_AUTH_X=kept",
		// An outer lock's variables: with-lock sets the command's own.
		"WITH_LOCK_NAME=outer", "WITH_LOCK_KEY=lock:outer", "WITH_LOCK_TOKEN=h:1:x", "WITH_LOCK_FENCE=999",
		"WITH_LOCK_FENCED=kept",
	}
	want := []string{"PATH=/bin", "HOME=/root", "REDISCLI_AUTH_X=kept", "WITH_LOCK_FENCED=kept"}
	if got := config.CommandEnviron(in); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	kept := []string{"WITH_LOCK_REDIS=redis://user@h/0 redis://h2/0"}
	if got := config.CommandEnviron(kept); !slices.Equal(got, kept) {
		t.Fatalf("a WITH_LOCK_REDIS without password was dropped: %q", got)
	}
}
