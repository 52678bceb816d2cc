package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// EarlyLogFormat finds the log format asked for however far the flags, the
// variables and the file can be read, with Parse's precedence, and never
// takes the command's own flags (after the lock's name) for ours.
func TestEarlyLogFormatReadsWhatItCan(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	jsonFile := write("json.conf", "log-format = \"json\"\n")
	brokenAfter := write("broken-after.conf", "ttl = \"45s\"\nlog-format = \"json\"\nredis = [\n")
	brokenBefore := write("broken-before.conf", "ttl = [\nlog-format = \"json\"\n")
	inTable := write("table.conf", "[x]\nlog-format = \"json\"\n")
	config.SetDefaultFile(t, jsonFile)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"flag", []string{"--log-format", "json", "x", "true"}, nil, config.LogJSON},
		{"flag with =", []string{"--log-format=json"}, nil, config.LogJSON},
		{"after an unknown flag", []string{"--bogus", "--log-format", "json"}, nil, config.LogJSON},
		{"after an unknown flag's value", []string{"--bogus", "v", "--log-format", "json"}, nil, config.LogJSON},
		{"after a bad value", []string{"--ttl", "soon", "--log-format", "json"}, nil, config.LogJSON},
		{"after shorthands", []string{"-qw5", "--log-format", "json"}, nil, config.LogJSON},
		{"the command's flag is not ours", []string{"--config", "/nonexistent", "x", "cmd", "--log-format", "json"}, nil, config.LogText},
		{"value missing at the end", []string{"--config", "/nonexistent", "--log-format"}, nil, config.LogText},
		{"flag text beats the file", []string{"--log-format", "text"}, nil, config.LogText},
		{"variable", []string{"--config", "/nonexistent"}, map[string]string{"WITH_LOCK_LOG_FORMAT": "json"}, config.LogJSON},
		{"variable text beats the file", nil, map[string]string{"WITH_LOCK_LOG_FORMAT": "text"}, config.LogText},
		{"default file", nil, nil, config.LogJSON},
		{"file by variable", nil, map[string]string{"WITH_LOCK_CONFIG": brokenAfter}, config.LogJSON},
		{"file by flag, broken after the key", []string{"--config=" + brokenAfter}, nil, config.LogJSON},
		{"file broken before the key", []string{"--config", brokenBefore}, nil, config.LogText},
		{"key in a table is no setting", []string{"--config", inTable}, nil, config.LogText},
		{"not json", []string{"--log-format", "JSON"}, nil, config.LogText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := config.EarlyLogFormat(tc.args, func(k string) string { return tc.env[k] })
			if got != tc.want {
				t.Errorf("EarlyLogFormat(%q, %v) = %q, want %q", tc.args, tc.env, got, tc.want)
			}
		})
	}
}
