package config

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// durationValue is the pflag.Value of every duration setting. It reads
// what time.ParseDuration reads, plus what a cron user types:
//   - a bare number is seconds, as flock -w takes it: "5", "0.5";
//   - a number of days, alone or before the rest: "1d", "1.5d", "1d12h".
//
// Variables and the config file go through the same Set.
type durationValue time.Duration

func newDurationValue(def time.Duration, p *time.Duration) *durationValue {
	*p = def
	return (*durationValue)(p)
}

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// Type names the value in pflag's messages.
func (d *durationValue) Type() string { return "duration" }

// errDuration is the one way every duration setting says its value is bad.
var errDuration = errors.New(`expected a duration such as 30s, 1m30s, 2h or 1d, or a number of seconds such as 5 or 0.5`)

// parseDuration reads a duration setting's value: see durationValue. It
// scans by hand, not with a regexp: compiling one at start-up cost every
// run of with-lock more than all its parsing.
func parseDuration(s string) (time.Duration, error) {
	body, negative := s, false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body, negative = body[1:], body[0] == '-'
	}
	n := decimalPrefix(body)
	switch {
	case n > 0 && n == len(body): // seconds: "5", "-0.5"
		return fromUnits(s, float64(time.Second))
	case n > 0 && body[n] == 'd': // days, then perhaps the rest: "1d12h"
		d, err := fromUnits(body[:n], float64(24*time.Hour))
		if err != nil {
			return 0, err
		}
		if rest := body[n+1:]; rest != "" {
			if rest[0] == '+' || rest[0] == '-' {
				return 0, errDuration
			}
			more, err := time.ParseDuration(rest)
			if err != nil || d > math.MaxInt64-more {
				return 0, errDuration
			}
			d += more
		}
		if negative {
			d = -d
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errDuration
	}
	return d, nil
}

// decimalPrefix is the length of the unsigned decimal number s starts
// with — "5", "1.5", "5.", ".5" — or 0 when it starts with none.
func decimalPrefix(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	whole := i
	if i < len(s) && s[i] == '.' {
		i++
		frac := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if whole == 0 && i == frac {
			return 0 // "." alone
		}
	}
	return i
}

// fromUnits converts a decimal number of units to a duration.
func fromUnits(num string, unit float64) (time.Duration, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.Abs(f*unit) >= math.MaxInt64 {
		return 0, errDuration
	}
	return time.Duration(math.Round(f * unit)), nil
}
