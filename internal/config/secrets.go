package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// password returns the Redis password for a URL that carries urlPassword:
// --password-file first, then the URL's own, then WITH_LOCK_PASSWORD, then
// REDISCLI_AUTH.
func (c *Config) password(urlPassword string) (string, error) {
	if c.PasswordFile != "" {
		return c.readSecret(c.origin("password-file"), c.PasswordFile)
	}
	if urlPassword != "" {
		return urlPassword, nil
	}
	return c.envPassword, nil
}

// sentinelPassword returns the sentinels' password:
// --sentinel-password-file, else WITH_LOCK_SENTINEL_PASSWORD.
func (c *Config) sentinelPassword() (string, error) {
	if c.SentinelPasswordFile != "" {
		return c.readSecret(c.origin("sentinel-password-file"), c.SentinelPasswordFile)
	}
	return c.envSentinelPassword, nil
}

// maxSecret bounds a password file: anything longer is not one.
const maxSecret = 64 << 10

// readSecret reads a password file once. It refuses a file that group or
// others may read or write, as ssh does with keys: a password that every
// local user can read is no secret. One trailing newline is dropped, so
// "echo secret > file" works. Its errors name the path where it was given,
// from (see origin): the flag, the variable, or the config file's line.
func (c *Config) readSecret(from, path string) (string, error) {
	if s, ok := c.secrets[path]; ok {
		return s, nil
	}
	f, err := os.Open(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err // "FROM PATH: no such file or directory", not "FROM: open PATH: ..."
		}
		return "", fmt.Errorf("%w: %s %s: %w", ErrConfig, from, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrConfig, from, err)
	}
	// The kind of file first: a directory's mode says nothing about a
	// password, and chmod would not make it one.
	switch mode := st.Mode(); {
	case mode.IsDir():
		return "", fmt.Errorf("%w: %s %s is a directory, not a file holding the password", ErrConfig, from, path)
	case !mode.IsRegular():
		return "", fmt.Errorf("%w: %s %s is not a regular file", ErrConfig, from, path)
	case mode.Perm()&0o077 != 0:
		return "", fmt.Errorf("%w: %s %s is accessible by group or others (mode %04o); chmod 600 it", ErrConfig, from, path, mode.Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrConfig, from, err)
	}
	if len(b) > maxSecret {
		return "", fmt.Errorf("%w: %s %s is too large for a password", ErrConfig, from, path)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", fmt.Errorf("%w: %s %s is empty", ErrConfig, from, path)
	}
	if c.secrets == nil {
		c.secrets = map[string]string{}
	}
	c.secrets[path] = s
	return s, nil
}
