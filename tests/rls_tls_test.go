package tests

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
)

// startRLSTLS serves the rate limit service of a server whose tls-*
// directives (and grpc-tls) mod sets, and returns the gRPC address.
func startRLSTLS(t *testing.T, mod func(*config.Config)) (string, error) {
	t.Helper()
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "m.yaml"), []byte(rlsMessaging), 0o644))
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir, cfg.RLSConfigDir = 0, 0, t.TempDir(), rules
	mod(&cfg)
	clk := clock.NewFake(t0)
	srv := node.New(cfg, engine.New(clk, 0), nil)
	serve(t, srv, clk)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeGRPC(ln) }()
	select {
	case err := <-errc: // refused before serving
		return "", err
	case <-time.After(100 * time.Millisecond):
	}
	return ln.Addr().String(), nil
}

// askRLS sends one request over a client with creds.
func askRLS(t *testing.T, addr string, creds credentials.TransportCredentials) (*rlspb.RateLimitResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rlspb.NewRateLimitServiceClient(conn).ShouldRateLimit(c, &rlspb.RateLimitRequest{Domain: "messaging",
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("to_number", "1")}})
}

// TestRLSTLS: with the server's certificates configured the gRPC port
// speaks TLS only, with the RESP TLS port's client certificate policy;
// grpc-tls no keeps it plain and grpc-tls yes refuses to start without
// certificates.
func TestRLSTLS(t *testing.T) {
	p := newPKI(t)
	clientPair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	require.NoError(t, err)
	otherPair, err := tls.LoadX509KeyPair(p.other, p.otherKey)
	require.NoError(t, err)
	withCerts := func(auth string) func(*config.Config) {
		return func(c *config.Config) {
			c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile, c.TLSAuthClients = p.cert, p.key, p.ca, auth
		}
	}
	tlsCreds := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: p.pool, Certificates: certs, ServerName: "127.0.0.1"})
	}
	ok := func(t *testing.T, resp *rlspb.RateLimitResponse, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Equal(t, rlspb.RateLimitResponse_OK, resp.OverallCode)
		require.Equal(t, uint32(99), resp.Statuses[0].LimitRemaining)
	}

	t.Run("client certificate required", func(t *testing.T) {
		addr, err := startRLSTLS(t, withCerts("yes"))
		require.NoError(t, err)
		resp, err := askRLS(t, addr, tlsCreds(clientPair))
		ok(t, resp, err)
		for name, creds := range map[string]credentials.TransportCredentials{
			"plain text":            insecure.NewCredentials(),
			"no client cert":        tlsCreds(),
			"cert of an unknown CA": tlsCreds(otherPair),
		} {
			if _, err := askRLS(t, addr, creds); err == nil {
				t.Errorf("%s: answered", name)
			}
		}
	})
	t.Run("client certificate optional", func(t *testing.T) {
		addr, err := startRLSTLS(t, withCerts("optional"))
		require.NoError(t, err)
		resp, err := askRLS(t, addr, tlsCreds())
		ok(t, resp, err)
	})
	t.Run("no client certificates, no CA", func(t *testing.T) {
		addr, err := startRLSTLS(t, func(c *config.Config) {
			c.TLSCertFile, c.TLSKeyFile, c.TLSAuthClients = p.cert, p.key, "no"
		})
		require.NoError(t, err)
		resp, err := askRLS(t, addr, tlsCreds())
		ok(t, resp, err)
		// A client that does not trust the server's CA is refused.
		_, err = askRLS(t, addr, credentials.NewTLS(&tls.Config{ServerName: "127.0.0.1"}))
		require.Error(t, err)
	})
	t.Run("grpc-tls no", func(t *testing.T) {
		addr, err := startRLSTLS(t, func(c *config.Config) { withCerts("yes")(c); c.GRPCTLS = "no" })
		require.NoError(t, err)
		resp, err := askRLS(t, addr, insecure.NewCredentials())
		ok(t, resp, err)
	})
	t.Run("no certificates: plain text", func(t *testing.T) {
		addr, err := startRLSTLS(t, func(*config.Config) {})
		require.NoError(t, err)
		resp, err := askRLS(t, addr, insecure.NewCredentials())
		ok(t, resp, err)
	})
	t.Run("grpc-tls yes without certificates", func(t *testing.T) {
		_, err := startRLSTLS(t, func(c *config.Config) { c.GRPCTLS = "yes" })
		require.ErrorContains(t, err, "grpc-tls: tls: tls-cert-file and tls-key-file are required")
	})
	t.Run("unreadable certificate", func(t *testing.T) {
		_, err := startRLSTLS(t, func(c *config.Config) {
			withCerts("yes")(c)
			c.TLSCertFile = filepath.Join(t.TempDir(), "missing.crt")
		})
		require.ErrorContains(t, err, "grpc-tls: tls:")
	})
}
