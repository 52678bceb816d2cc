package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// What a mistyped name most likely meant: the flag of "unknown flag:
// --tll" and the variable of WITH_LOCK_TTLL, which would otherwise be
// ignored without a word.

// closest returns the candidate nearest to word, when it is near enough
// to be what was meant: at most one edit for a word of up to four
// characters, two for a longer one (a swap of two neighbours is one); ""
// otherwise.
func closest(word string, candidates []string) string {
	best, bestD := "", 3
	if len(word) <= 4 {
		bestD = 2
	}
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours, each one.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// unknownFlag adds to pflag's "unknown flag: --tll" the flag most likely
// meant; other errors are returned as they are.
func unknownFlag(fs *pflag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if c := closest(name, names); c != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, c)
	}
	return err
}

// knownVariables are the WITH_LOCK_* variables with-lock reads, and those
// it sets for the command, which a with-lock run inside a job inherits.
func knownVariables() []string {
	known := []string{EnvConfig, EnvRedis, EnvPassword, EnvSentinelPassword,
		EnvLockName, EnvLockKey, EnvLockToken, EnvLockFence, EnvLockSlot}
	for _, g := range settings(&Config{}) {
		for _, s := range g.settings {
			if s.env != "" && !slices.Contains(known, s.env) {
				known = append(known, s.env)
			}
		}
	}
	return known
}

// UnknownVariables returns a warning for each WITH_LOCK_* variable of
// environ (as from os.Environ) that with-lock does not know, naming the
// known one most likely meant: a mistyped variable (WITH_LOCK_TTLL=5s)
// would otherwise be ignored without a word, as a mistyped key of the
// config file is not.
func UnknownVariables(environ []string) []string {
	known := knownVariables()
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "WITH_LOCK_") || slices.Contains(known, name) {
			continue
		}
		w := name + " is not a with-lock variable and is ignored"
		if c := closest(name, known); c != "" {
			w += "; did you mean " + c + "?"
		}
		warnings = append(warnings, w)
	}
	return warnings
}
