package config_test

import (
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

func TestIsFlagKnowsOurFlagsOnly(t *testing.T) {
	for arg, want := range map[string]bool{
		"-q": true, "-qv": true, "-w5m": true, "--ttl": true, "--ttl=45s": true, "--log-format": true,
		"-": false, "--": false, "-Z": false, "--no-such-flag": false, "true": false, "q": false, "": false,
	} {
		if got := config.IsFlag(arg); got != want {
			t.Errorf("IsFlag(%q) = %v, want %v", arg, got, want)
		}
	}
}
