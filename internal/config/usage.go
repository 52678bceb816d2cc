package config

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Usage writes the help text to w.
func Usage(w io.Writer) {
	fmt.Fprint(w, `Usage: with-lock [flags] <name> <command> [args...]

Run a command only if the Redis lock <name> is free, and release it after.
A busy lock makes with-lock exit at once with 75 without running anything.
A flag beats its [$VARIABLE], which beats the config file (`+DefaultFile+`
unless --config names another), which beats the default.
`)
	for _, g := range settings(&Config{}) {
		fs := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
		fs.SortFlags = false
		for i := range g.settings {
			g.settings[i].define(fs)
		}
		fmt.Fprintf(w, "\n%s:\n%s", g.title, fs.FlagUsagesWrapped(100))
	}
	fmt.Fprint(w, `
Passwords: --password-file, the URL, $`+EnvPassword+` or $`+EnvRedisCLIAuth+`;
--sentinel-password-file or $`+EnvSentinelPassword+` for the sentinels.

Exit codes: the command's own; 128+N if it died of signal N; 75 lock busy;
64 usage; 69 Redis unavailable; 70 internal error; 77 Redis refused
credentials; 78 bad configuration; 124 --max-run stopped the job; 125 lock
lost while the command ran (it was stopped); 126 not executable; 127 not
found. --status: 0 held, 1 free. --resume: 0 resumed, 1 not paused.

Examples:
  with-lock nightly-report /opt/jobs/report.sh
  with-lock -E 0 backup -- rsync -a /data /backup     # quiet skip when busy
  with-lock -w 5m --ttl 2m import ./import --full
  with-lock --min-hold 55s -E 0 sync /opt/jobs/sync   # every minute, many hosts
  with-lock --slots 2 -w 1h backup /opt/jobs/backup   # at most two at once
  with-lock --status --json nightly-report
  with-lock --pause --for 2h --reason "db upgrade" nightly-report   # every host refuses
  [ -n "$WITH_LOCK_NAME" ] || exec with-lock nightly "$0" "$@"   # a script's first line
  */5 * * * * with-lock -q -E 0 sync /opt/jobs/sync   # crontab line
`)
}
