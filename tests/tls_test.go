package tests

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
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/node"
	"github.com/limitdb/limitdb/server"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files into a temporary directory.
type testPKI struct {
	dir                   string
	ca, cert, key         string // server side
	clientCert, clientKey string
	other, otherKey       string // a client certificate from an unknown CA
	pool                  *x509.CertPool
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir}
	caKey, caCert, caDER := mkCert(t, "limitdb test CA", nil, nil, true)
	p.ca = writePEM(t, dir, "ca.crt", "CERTIFICATE", caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(caCert)
	sk, _, sder := mkCert(t, "server", caCert, caKey, false)
	p.cert = writePEM(t, dir, "server.crt", "CERTIFICATE", sder)
	p.key = writeKey(t, dir, "server.key", sk)
	ck, _, cder := mkCert(t, "client", caCert, caKey, false)
	p.clientCert = writePEM(t, dir, "client.crt", "CERTIFICATE", cder)
	p.clientKey = writeKey(t, dir, "client.key", ck)
	otherCAKey, otherCA, _ := mkCert(t, "other CA", nil, nil, true)
	ok, _, oder := mkCert(t, "intruder", otherCA, otherCAKey, false)
	p.other = writePEM(t, dir, "other.crt", "CERTIFICATE", oder)
	p.otherKey = writeKey(t, dir, "other.key", ok)
	return p
}

func mkCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	signer, signKey := parent, parentKey
	if parent == nil {
		signer, signKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	return key, cert, der
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

func writeKey(t *testing.T, dir, name string, k *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	return writePEM(t, dir, name, "EC PRIVATE KEY", der)
}

// startTLS serves a plain and a TLS port from one server.
func startTLS(t *testing.T, p *testPKI, auth string) (plain, secure string) {
	t.Helper()
	mod := func(c *config.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile, c.TLSAuthClients = p.cert, p.key, p.ca, auth
	}
	cfg := config.Default()
	mod(&cfg)
	tc, err := node.New(cfg, nil, nil).TLSConfig()
	require.NoError(t, err)
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts, _ := startWith(t, mod, server.JoinListeners(pln, tls.NewListener(raw, tc)))
	return ts.addr, raw.Addr().String()
}

func TestTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	clientPair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	require.NoError(t, err)
	otherPair, _ := tls.LoadX509KeyPair(p.other, p.otherKey)

	t.Run("go-redis with a client certificate", func(t *testing.T) {
		plain, secure := startTLS(t, p, "yes")
		c := redis.NewClient(&redis.Options{Addr: secure, MaxRetries: -1, TLSConfig: &tls.Config{
			RootCAs: p.pool, Certificates: []tls.Certificate{clientPair}, ServerName: "127.0.0.1"}})
		defer c.Close()
		got := ints(t, c.Do(ctx, "CL.THROTTLE", "tls:key", 1, 10, 60))
		if got[0] != 0 || got[2] != 1 {
			t.Fatalf("over TLS: %v", got)
		}
		// The plain port of the same server sees the same keyspace.
		pc := redis.NewClient(&redis.Options{Addr: plain})
		defer pc.Close()
		if got := ints(t, pc.Do(ctx, "CL.THROTTLE", "tls:key", 1, 10, 60)); got[2] != 0 {
			t.Errorf("plain port after one TLS call: %v", got)
		}
	})
	t.Run("client certificates required", func(t *testing.T) {
		_, secure := startTLS(t, p, "yes")
		for name, certs := range map[string][]tls.Certificate{"none": nil, "unknown CA": {otherPair}} {
			c := redis.NewClient(&redis.Options{Addr: secure, MaxRetries: -1, DialTimeout: 2 * time.Second,
				TLSConfig: &tls.Config{RootCAs: p.pool, Certificates: certs, ServerName: "127.0.0.1"}})
			if err := c.Ping(ctx).Err(); err == nil {
				t.Errorf("%s: PING over TLS succeeded without a valid client certificate", name)
			}
			c.Close()
		}
	})
	t.Run("optional client certificates", func(t *testing.T) {
		_, secure := startTLS(t, p, "optional")
		c := redis.NewClient(&redis.Options{Addr: secure, MaxRetries: -1,
			TLSConfig: &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}})
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Errorf("no client certificate, optional: %v", err)
		}
	})
	t.Run("plain text to the TLS port", func(t *testing.T) {
		_, secure := startTLS(t, p, "yes")
		r := dialRaw(t, secure)
		r.send(cmd("PING"))
		if l, err := r.line(); err == nil && l == "+PONG" {
			t.Error("plain text answered on the TLS port")
		}
	})
	t.Run("redis-cli --tls", func(t *testing.T) {
		if _, err := exec.LookPath("redis-cli"); err != nil {
			t.Skip("redis-cli not installed")
		}
		_, secure := startTLS(t, p, "yes")
		host, port, _ := net.SplitHostPort(secure)
		out, err := exec.Command("redis-cli", "-h", host, "-p", port, "--tls", "--cacert", p.ca,
			"--cert", p.clientCert, "--key", p.clientKey, "CL.THROTTLE", "cli:key", "4", "10", "60").CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli: %v\n%s", err, out)
		}
		if got := strings.Fields(string(out)); strings.Join(got, " ") != "0 5 4 -1 6" {
			t.Errorf("redis-cli --tls CL.THROTTLE: %q", out)
		}
	})
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	cases := []struct {
		name string
		mod  func(c *config.Config)
		want string
	}{
		{"no cert", func(c *config.Config) { c.TLSCertFile = "" }, "tls-cert-file and tls-key-file are required"},
		{"missing key file", func(c *config.Config) { c.TLSKeyFile = filepath.Join(p.dir, "nope") }, "no such file"},
		{"client auth without CA", func(c *config.Config) { c.TLSCACertFile = "" }, "tls-ca-cert-file is required"},
		{"CA file without certificates", func(c *config.Config) { c.TLSCACertFile = p.key }, "no certificate found"},
	}
	for _, tc := range cases {
		cfg := config.Default()
		cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCACertFile = p.cert, p.key, p.ca
		tc.mod(&cfg)
		_, err := node.New(cfg, nil, nil).TLSConfig()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	cfg := config.Default()
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSAuthClients = p.cert, p.key, "no"
	if _, err := node.New(cfg, nil, nil).TLSConfig(); err != nil {
		t.Errorf("tls-auth-clients no without a CA: %v", err)
	}
}

// TestTLSBinary starts the real binary with --tls-port: one process serves
// the plain and the TLS port, and redis-cli --tls reaches it.
func TestTLSBinary(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed")
	}
	p := newPKI(t)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, tlsPort, _ := net.SplitHostPort(free.Addr().String())
	free.Close()
	proc := mustStart(t, t.TempDir(), "--tls-port", tlsPort,
		"--tls-cert-file", p.cert, "--tls-key-file", p.key, "--tls-ca-cert-file", p.ca)
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", tlsPort, "--tls", "--cacert", p.ca,
		"--cert", p.clientCert, "--key", p.clientKey, "INCR", "over-tls").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("redis-cli --tls INCR: %v %q\n%s", err, out, proc.log)
	}
	r := dialRaw(t, proc.addr)
	r.send(cmd("INCR", "over-tls"))
	if got := r.mustLine(); got != ":2" {
		t.Errorf("plain port after the TLS INCR: %q", got)
	}
	if !strings.Contains(proc.log.String(), "TLS listening on 127.0.0.1:"+tlsPort) {
		t.Errorf("log:\n%s", proc.log)
	}
	proc.cmd.Process.Signal(syscall.SIGTERM)
	if code := proc.wait(t); code != 0 {
		t.Errorf("exit %d", code)
	}
}
