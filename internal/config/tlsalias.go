package config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// The TLS settings are tls-cacert, tls-cert, tls-key and tls-insecure,
// named as their WITH_LOCK_TLS_* variables: a bare "key" or "cert" in a
// lock tool reads as the lock's key. On the command line the old names
// (--cacert, --cert, --key, --insecure, as redis-cli and curl spell them)
// still work, hidden from --help: muscle memory and existing crontabs keep
// working and nothing else can mean them. In the config file, where
// nothing is tagged yet, the old keys are refused with the new name.

// oldTLSNames maps each old name to its setting.
var oldTLSNames = map[string]string{
	"cacert":   "tls-cacert",
	"cert":     "tls-cert",
	"key":      "tls-key",
	"insecure": "tls-insecure",
}

// oldTLSFlag is the flag set's normalizer: an old TLS flag is its new one.
func oldTLSFlag(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if n, ok := oldTLSNames[name]; ok {
		return pflag.NormalizedName(n)
	}
	return pflag.NormalizedName(name)
}

// renamedKey is the error of an old TLS key in the config file, or nil
// for any other key.
func renamedKey(key string) error {
	if n, ok := oldTLSNames[key]; ok {
		return fmt.Errorf("renamed to %s (the TLS settings are tls-cacert, tls-cert, tls-key, tls-insecure)", n)
	}
	return nil
}
