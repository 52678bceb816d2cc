package config_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// --help and the man page, both written from the settings table, write a
// duration's default alike: 720h, not 720h0m0s, and none for 0.
func TestHelpWritesDefaultsAsTheManPageDoes(t *testing.T) {
	var b strings.Builder
	config.Usage(&b)
	help := b.String()
	for _, want := range []string{"(default 720h)", "(default 30s)", "(default 5s)"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not say %s", want)
		}
	}
	for _, unwanted := range []string{"(default 0s)", "(default 720h0m0s)"} {
		if strings.Contains(help, unwanted) {
			t.Errorf("--help says %s", unwanted)
		}
	}
}
