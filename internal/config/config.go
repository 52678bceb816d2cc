// Package config turns with-lock's command line and environment into a
// Config, and a Config into a Redis client.
package config

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
)

// Defaults a user sees in --help and the man page.
const (
	DefaultRedisURL     = "redis://127.0.0.1:6379/0"
	DefaultTTL          = 30 * time.Second
	DefaultRedisTimeout = 3 * time.Second
	DefaultConflictExit = 75 // EX_TEMPFAIL

	// MinTTL is the shortest --ttl with-lock accepts. Renewal extends the
	// lock every third of its TTL, and a round trip to Redis and the
	// scheduler's delays must fit well inside that third; below this a
	// healthy run loses its lock at once and is stopped with 125.
	MinTTL = 200 * time.Millisecond
)

// ErrUsage marks a bad command line; the CLI exits 64 on it.
var ErrUsage = errors.New("usage error")

// ErrHelp means -h/--help was given: print Usage and exit 0.
var ErrHelp = pflag.ErrHelp

// Config is one run of with-lock.
type Config struct {
	Name    string   // the lock's name
	Command []string // the command and its arguments

	RenewConfig // renewal, loss, min-hold, fencing, --status: renew.go

	RedisTimeout time.Duration // connect and command timeout
	Prefix       string        // put before Name to make the key
	TTL          time.Duration // the lock's time to live
	Wait         time.Duration // 0: fail at once when busy
	ConflictExit int           // exit code when the lock is busy
	Quiet        bool          // no message when the lock is busy
	Version      bool          // --version: print it, run nothing

	Production // TLS, secrets, Sentinel, Cluster, quorum, replicas
}

// Parse reads args (without the program name) and the environment lookup
// getenv. Flags stop at the lock's name. Errors wrap ErrUsage or are ErrHelp.
func Parse(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	fs := newFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, ErrHelp
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	// pflag reports ErrHelp only when no help flag is defined; ours is,
	// so that it shows in the usage.
	if help, _ := fs.GetBool("help"); help {
		return nil, ErrHelp
	}
	if c.Version {
		return c, nil
	}
	c.resolveProduction(getenv)
	rest := fs.Args()
	if c.Status {
		return c.parseStatus(rest)
	}
	switch {
	case len(rest) == 0:
		return nil, fmt.Errorf("%w: missing lock name and command", ErrUsage)
	case len(rest) == 1:
		return nil, fmt.Errorf("%w: missing command to run under lock %q", ErrUsage, rest[0])
	}
	c.Name, c.Command = rest[0], rest[1:]
	if c.Command[0] == "--" { // "with-lock name -- cmd" reads as it would with flock
		c.Command = c.Command[1:]
		if len(c.Command) == 0 {
			return nil, fmt.Errorf("%w: missing command to run under lock %q", ErrUsage, c.Name)
		}
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if err := c.RenewConfig.validate(); err != nil {
		return err
	}
	if c.Name == "" {
		return errors.New("lock name is empty")
	}
	if strings.ContainsFunc(c.Name, unicode.IsControl) {
		return fmt.Errorf("lock name %q contains control characters", c.Name)
	}
	if !c.Status && c.Command[0] == "" {
		return errors.New("command is empty")
	}
	if c.TTL < MinTTL {
		return fmt.Errorf("--ttl %s is below the minimum of %s", c.TTL, MinTTL)
	}
	if c.RedisTimeout <= 0 {
		return fmt.Errorf("--redis-timeout %s must be positive", c.RedisTimeout)
	}
	if c.Wait < 0 {
		return fmt.Errorf("--wait %s is negative", c.Wait)
	}
	if c.ConflictExit < 0 || c.ConflictExit > 255 {
		return fmt.Errorf("--conflict-exit-code %d is outside 0-255", c.ConflictExit)
	}
	return c.validateProduction()
}

func newFlagSet(c *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("with-lock", pflag.ContinueOnError)
	fs.SetInterspersed(false) // everything after the name belongs to the command
	fs.SetOutput(io.Discard)  // errors are reported once, by the caller
	fs.StringArrayVar(&c.RedisURLs, "redis", nil, "Redis `URL` (env WITH_LOCK_REDIS; default "+DefaultRedisURL+");\nrepeat for a quorum of independent masters, or the seeds of --cluster")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", DefaultRedisTimeout, "give up on connecting to or hearing from Redis after `DUR`")
	fs.StringVar(&c.Prefix, "prefix", "lock:", "the key is `STR`<name>")
	fs.DurationVar(&c.TTL, "ttl", DefaultTTL, "the lock expires `DUR` (at least "+MinTTL.String()+") after it was last set or renewed")
	addRenewFlags(fs, &c.RenewConfig)
	fs.DurationVarP(&c.Wait, "wait", "w", 0, "wait up to `DUR` for a busy lock instead of failing")
	fs.IntVarP(&c.ConflictExit, "conflict-exit-code", "E", DefaultConflictExit, "exit with `N` (0-255) when the lock is busy")
	fs.BoolP("nonblock", "n", false, "fail at once when the lock is busy (the default)")
	fs.BoolVarP(&c.Quiet, "quiet", "q", false, "say nothing when the lock is busy")
	addProductionFlags(fs, c)
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
	fs.BoolP("help", "h", false, "show this help")
	fs.SortFlags = false
	return fs
}

// Usage writes the help text to w.
func Usage(w io.Writer) {
	fmt.Fprint(w, `Usage: with-lock [flags] <name> <command> [args...]

Run a command only if the Redis lock <name> is free, and release it after.
A busy lock makes with-lock exit at once with 75 without running anything.

Flags:
`)
	fmt.Fprint(w, newFlagSet(&Config{}).FlagUsages())
	fmt.Fprint(w, `
Exit codes: the command's own; 128+N if it died of signal N; 75 lock busy;
64 usage; 69 Redis unavailable; 70 internal error; 77 Redis refused
credentials; 78 bad configuration; 125 lock lost while the command ran (it
was stopped); 126 not executable; 127 not found. --status: 0 held, 1 free.

Examples:
  with-lock nightly-report /opt/jobs/report.sh
  with-lock -E 0 backup -- rsync -a /data /backup     # quiet skip when busy
  with-lock -w 5m --ttl 2m import ./import --full
  with-lock --min-hold 55s -E 0 sync /opt/jobs/sync   # every minute, many hosts
  with-lock --status --json nightly-report
  */5 * * * * with-lock -q -E 0 sync /opt/jobs/sync   # crontab line
`)
}
