package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// A mistyped flag is answered with the flag most likely meant, and a
// variable's value that is not of its type with the values it takes,
// never a parser's own words (strconv.ParseBool: ... invalid syntax).
func TestBadFlagsAndValuesSayWhatWasMeant(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"a flag with two letters swapped", []string{"--tll", "5s", "x", "true"}, nil, "unknown flag: --tll; did you mean --ttl?"},
		{"a flag with a letter left out", []string{"--nonblok", "x", "true"}, nil, "unknown flag: --nonblok; did you mean --nonblock?"},
		{"a flag like none", []string{"--frobnicate", "x", "true"}, nil, "unknown flag: --frobnicate"},
		{"a boolean variable", []string{"x", "true"}, map[string]string{"WITH_LOCK_QUIET": "yes"}, `WITH_LOCK_QUIET: "yes": expected true or false (or 1 or 0)`},
		{"an action's flag after the name", []string{"--pause", "pz", "--for", "30s", "--reason", "x"}, nil,
			`--pause takes one lock name and no command, and flags go before the name: --for is after "pz"`},
		{"a number variable", []string{"x", "true"}, map[string]string{"WITH_LOCK_SLOTS": "two"}, `WITH_LOCK_SLOTS: "two": expected a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(tc.args, func(k string) string { return tc.env[k] })
			if !errors.Is(err, config.ErrUsage) || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "strconv") {
				t.Errorf("err = %v, want a usage error ending %q", err, tc.want)
			}
			if strings.Contains(tc.want, "frobnicate") && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("err = %v suggests a flag for a word like none", err)
			}
		})
	}
}

// A WITH_LOCK_* variable with-lock does not know gets a warning naming the
// one most likely meant; those it reads, and those it sets for the command
// (which a with-lock inside a job inherits), get none.
func TestUnknownVariablesAreNamedWithTheOneMeant(t *testing.T) {
	environ := []string{"PATH=/bin", "WITH_LOCK_TTLL=5s", "WITH_LOCK_TTL=5s", "WITH_LOCK_QUIETT=1", "WITH_LOCK_SOMETHING=1",
		"WITH_LOCK_NAME=outer", "WITH_LOCK_TOKEN=t", "WITH_LOCK_FENCE=3", "WITH_LOCK_PASSWORD=p", "WITH_LOCK_CONFIG=/dev/null",
		"WITH_LOCK_REDIS=redis://r", "WITH_LOCK_FENCING=1", "XWITH_LOCK_TTLL=1"}
	want := []string{
		"WITH_LOCK_TTLL is not a with-lock variable and is ignored; did you mean WITH_LOCK_TTL?",
		"WITH_LOCK_QUIETT is not a with-lock variable and is ignored; did you mean WITH_LOCK_QUIET?",
		"WITH_LOCK_SOMETHING is not a with-lock variable and is ignored",
	}
	if got := config.UnknownVariables(environ); !slices.Equal(got, want) {
		t.Errorf("UnknownVariables =\n\t%q\nwant\n\t%q", got, want)
	}
}
