package config_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// redis-cli's names for the TLS flags, --cacert, --cert, --key and
// --insecure, still set the tls-* settings on the command line, and --help
// shows only the new names.
func TestOldTLSFlagsStillWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		get  func(*config.Config) any
		want any
	}{
		{[]string{"--cacert", "ca.pem"}, func(c *config.Config) any { return c.TLSCACert }, "ca.pem"},
		{[]string{"--cert=c.pem", "--key", "k.pem"}, func(c *config.Config) any { return c.TLSCert + " " + c.TLSKey }, "c.pem k.pem"},
		{[]string{"--insecure"}, func(c *config.Config) any { return c.TLSInsecure }, true},
		{[]string{"--tls-cert", "c.pem", "--tls-key=k.pem"}, func(c *config.Config) any { return c.TLSCert + " " + c.TLSKey }, "c.pem k.pem"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c, err := config.Parse(append(tc.args, "job", "true"), env())
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(c); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !config.IsFlag("--cacert") || !config.IsFlag("--tls-cacert") {
		t.Errorf("IsFlag does not know both names of --tls-cacert")
	}
	var help bytes.Buffer
	config.Usage(&help)
	for _, old := range []string{"--cacert", "--cert ", "--key ", "--insecure"} {
		if strings.Contains(help.String(), old) {
			t.Errorf("--help shows the old flag %s", old)
		}
	}
}

// The config file's TLS keys are tls-cacert, tls-cert, tls-key and
// tls-insecure; the old keys, which read like the lock's key, are refused
// on one line that names the new key.
func TestConfigFileRefusesOldTLSKeys(t *testing.T) {
	for _, tc := range []struct{ old, text, want string }{
		{"cacert", "cacert = \"ca.pem\"\n", "1: cacert: renamed to tls-cacert"},
		{"cert", "ttl = \"5s\"\ncert = \"c.pem\"\n", "2: cert: renamed to tls-cert"},
		{"key", "key = \"k.pem\"\n", "1: key: renamed to tls-key"},
		{"insecure", "insecure = true\n", "1: insecure: renamed to tls-insecure"},
	} {
		t.Run(tc.old, func(t *testing.T) {
			conf := writeConf(t, tc.text)
			_, err := config.Parse([]string{"--config", conf, "job", "true"}, env())
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), conf+":"+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line of bad configuration saying %q", err, conf+":"+tc.want)
			}
		})
	}
	conf := writeConf(t, "tls-cacert = \"ca.pem\"\ntls-insecure = false\ntls-cert = \"c.pem\"\ntls-key = \"k.pem\"\n")
	c, err := config.Parse([]string{"--config", conf, "job", "true"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.TLSCACert != "ca.pem" || c.TLSCert != "c.pem" || c.TLSKey != "k.pem" || c.TLSInsecure {
		t.Errorf("the tls-* keys gave %q %q %q %v", c.TLSCACert, c.TLSCert, c.TLSKey, c.TLSInsecure)
	}
}
