package config

import (
	"fmt"
	"io"
	"strings"
)

// WriteExample writes the example config file shipped as
// packaging/with-lock.conf: every setting the file can set, with its help,
// variable and default, each line a comment.
func WriteExample(w io.Writer) {
	fmt.Fprint(w, `# `+DefaultFile+`: with-lock's settings for every run on this host.
#
# TOML. Each key is the name of a long flag (see with-lock --help and
# with-lock(1)). A flag beats its WITH_LOCK_* variable, which beats this
# file, which beats the default shown here. Another file: --config FILE or
# `+EnvConfig+`. Every line below is a comment: uncomment what this host
# needs. "with-lock --print-config" shows the effective settings and where
# each came from.
#
# Durations: "30s", "1m30s", "2h", "1d", or a number of seconds (5, 0.5).
# No password goes here: use password-file (mode 0600) or `+EnvPassword+`.
#
# Without a redis line, this host locks on `+DefaultRedisURL+`,
# a Redis on this host: it then locks only against itself. Name the Redis
# that every host running the same jobs shares.
`)
	c := &Config{}
	newFlagSet(c) // fills c with the defaults
	values := map[string]Effective{}
	for _, e := range c.Effective() {
		values[e.Name] = e
	}
	for _, g := range settings(c) {
		var lines []string
		for _, s := range g.settings {
			if !s.inFile() {
				continue
			}
			help := strings.ReplaceAll(s.help, "`", "")
			lines = append(lines, fmt.Sprintf("\n# %s [$%s]\n#%s = %s\n", help, s.env, s.name, FormatValue(values[s.name].Value)))
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n# ---- %s ----\n%s", g.title, strings.Join(lines, ""))
		}
	}
}
