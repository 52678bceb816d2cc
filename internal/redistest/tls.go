package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test, with its certificate
// in PEM at CertFile.
type CA struct {
	t        tb
	dir      string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	CertFile string
}

// NewCA makes a fresh CA in a temporary directory.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	return newCA(t, t.TempDir(), name)
}

// newCA makes a fresh CA whose files are written to dir.
func newCA(t tb, dir, name string) *CA {
	t.Helper()
	ca := &CA{t: t, dir: dir}
	ca.key = newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("create CA certificate: %v", err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatalf("parse CA certificate: %v", err)
	}
	ca.CertFile = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Issue signs a certificate for name, valid for the loopback address 127.0.0.1
// as a server and as a client, and returns its PEM files.
func (ca *CA) Issue(name string) (certFile, keyFile string) {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatalf("issue certificate %s: %v", name, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatalf("marshal key %s: %v", name, err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "PRIVATE KEY", pkcs8)
}

func (ca *CA) write(file, kind string, der []byte) string {
	ca.t.Helper()
	path := filepath.Join(ca.dir, file)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		ca.t.Fatalf("write %s: %v", path, err)
	}
	return path
}

func newKey(t tb) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return key
}

func serial(t tb) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("serial number: %v", err)
	}
	return n
}

// StartTLS runs a redis-server that speaks only TLS, with a certificate
// from ca for 127.0.0.1. Client certificates signed by ca are accepted and,
// with requireClientCert, demanded. Server.Client and Server.URL speak
// TLS; the client trusts ca.
func StartTLS(t testing.TB, ca *CA, requireClientCert bool, extra ...string) *Server {
	t.Helper()
	return startTLS(t, "", ca, requireClientCert, extra...)
}

// StartTLSMain is StartTLS for a program that has no test (the bench, as
// StartMain): a server that speaks only TLS, with a CA of its own, both
// removed by stop.
func StartTLSMain(requireClientCert bool, extra ...string) (s *Server, ca *CA, stop func(), err error) {
	stop, err = startForMain("redistest-tls-", "start redis-server", func(m *mainTB, dir string) {
		ca = newCA(m, dir, "redistest")
		s = startTLS(m, dir, ca, requireClientCert, extra...)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return s, ca, stop, nil
}

// startTLS is StartTLS for t, in dir ("": a new temporary directory).
func startTLS(t tb, dir string, ca *CA, requireClientCert bool, extra ...string) *Server {
	t.Helper()
	certFile, keyFile := ca.Issue("redis-server")
	auth := "optional"
	if requireClientCert {
		auth = "yes"
	}
	cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if requireClientCert {
		cert, key := ca.Issue("test-client")
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatalf("load client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return launch(t, launchOptions{tls: cfg, dir: dir, extra: append([]string{
		"tls-cert-file", certFile, "tls-key-file", keyFile,
		"tls-ca-cert-file", ca.CertFile, "tls-auth-clients", auth,
	}, extra...)})
}
