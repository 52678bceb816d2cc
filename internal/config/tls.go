package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// secure applies TLS, or the plain dialer, and the password to opt, parsed
// from rawURL.
func (c *Config) secure(opt *redis.Options, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil { // redis.ParseURL accepted it, so this cannot happen
		return fmt.Errorf("%w: %s URL: %w", ErrConfig, c.origin("redis"), errors.Unwrap(err))
	}
	if v := u.Query().Get("skip_verify"); (v == "true" || v == "1") && !c.TLSInsecure {
		return fmt.Errorf("%w: skip_verify in the %s URL turns off TLS certificate checks; add --tls-insecure if that is really meant", ErrConfig, c.origin("redis"))
	}
	if opt.TLSConfig == nil && (c.TLSCACert != "" || c.TLSCert != "") {
		name := "tls-cacert"
		if c.TLSCACert == "" {
			name = "tls-cert"
		}
		return fmt.Errorf("%w: %s needs a rediss:// URL", ErrConfig, c.origin(name))
	}
	if opt.TLSConfig != nil {
		if err := c.configureTLS(opt.TLSConfig); err != nil {
			return err
		}
		opt.Dialer = tlsDialer(opt.TLSConfig, c.RedisTimeout)
	} else {
		opt.Dialer = plainDialer(c.RedisTimeout)
	}
	urlPassword := opt.Password
	if opt.Password, err = c.password(urlPassword); err != nil {
		return err
	}
	return nil
}

// configureTLS sets the CA bundle, client certificate and verification
// mode on cfg. Unset, the system roots verify the server.
func (c *Config) configureTLS(cfg *tls.Config) error {
	cfg.MinVersion = tls.VersionTLS12
	if c.TLSInsecure {
		cfg.InsecureSkipVerify = true
	}
	if c.TLSCACert != "" {
		pem, err := os.ReadFile(c.TLSCACert)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, c.origin("tls-cacert"), err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%w: %s %s holds no PEM certificate", ErrConfig, c.origin("tls-cacert"), c.TLSCACert)
		}
		cfg.RootCAs = pool
	}
	if c.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return fmt.Errorf("%w: %s %s / %s %s: %w", ErrConfig, c.origin("tls-cert"), c.TLSCert, c.origin("tls-key"), c.TLSKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return nil
}

// IsTLSConfigError reports whether err is a TLS handshake that failed for a
// reason that retrying will not fix: the server's certificate did not
// verify, the server rejected ours, or the port does not speak TLS.
func IsTLSConfigError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		alert    tls.AlertError
		header   tls.RecordHeaderError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &alert) || errors.As(err, &header) ||
		// An alert from the server (it wants a client certificate, or
		// rejected ours) has an unexported type outside QUIC.
		strings.Contains(err.Error(), "remote error: tls: ")
}
