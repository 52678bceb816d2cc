package config

import (
	"errors"
	"math"
	"regexp"
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

var (
	seconds = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$`)
	days    = regexp.MustCompile(`^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)d(.*)$`)
)

// errDuration is the one way every duration setting says its value is bad.
var errDuration = errors.New(`expected a duration such as 30s, 1m30s, 2h or 1d, or a number of seconds such as 5 or 0.5`)

// parseDuration reads a duration setting's value: see durationValue.
func parseDuration(s string) (time.Duration, error) {
	if seconds.MatchString(s) {
		return fromUnits(s, float64(time.Second))
	}
	if m := days.FindStringSubmatch(s); m != nil {
		d, err := fromUnits(m[2], float64(24*time.Hour))
		if err != nil {
			return 0, err
		}
		if m[3] != "" {
			if m[3][0] == '+' || m[3][0] == '-' {
				return 0, errDuration
			}
			rest, err := time.ParseDuration(m[3])
			if err != nil || d > math.MaxInt64-rest {
				return 0, errDuration
			}
			d += rest
		}
		if m[1] == "-" {
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

// fromUnits converts a decimal number of units to a duration.
func fromUnits(num string, unit float64) (time.Duration, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.Abs(f*unit) >= math.MaxInt64 {
		return 0, errDuration
	}
	return time.Duration(math.Round(f * unit)), nil
}
