package command

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/server"
)

// TLS configures the TLS listener, named as in Redis. It serves the same
// commands as the plain port, through the same Server.
type TLS struct {
	TLSPort        int    // tls-port: 0 disables TLS
	TLSCertFile    string // tls-cert-file: server certificate (PEM)
	TLSKeyFile     string // tls-key-file: its private key (PEM)
	TLSCACertFile  string // tls-ca-cert-file: CA that signs client certificates
	TLSAuthClients string // tls-auth-clients: yes (require a client certificate), optional, no
}

func registerTLS(t *Table) {
	t.RegisterDirective(IntDirective("tls-port", "TCP port for TLS connections (0: no TLS)", false, 0,
		func(c *Config) *int { return &c.TLSPort }))
	t.RegisterDirective(StringDirective("tls-cert-file", "server certificate for TLS (PEM)", false,
		func(c *Config) *string { return &c.TLSCertFile }))
	t.RegisterDirective(StringDirective("tls-key-file", "private key of tls-cert-file (PEM)", false,
		func(c *Config) *string { return &c.TLSKeyFile }))
	t.RegisterDirective(StringDirective("tls-ca-cert-file", "CA certificates that sign client certificates (PEM)", false,
		func(c *Config) *string { return &c.TLSCACertFile }))
	t.RegisterDirective(&Directive{Name: "tls-auth-clients", Help: "client certificates: yes (required), optional, or no",
		Get: func(c *Config) string { return c.TLSAuthClients },
		Set: func(c *Config, v string) error {
			switch v = strings.ToLower(v); v {
			case "yes", "no", "optional":
				c.TLSAuthClients = v
				return nil
			}
			return fmt.Errorf("argument must be 'yes', 'no' or 'optional'")
		}})
}

// TLSConfig builds the server's crypto/tls configuration from the tls-*
// directives.
func (s *Server) TLSConfig() (*tls.Config, error) {
	cfg := s.Config()
	return server.TLSConfig(server.TLSFiles{CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile,
		CACertFile: cfg.TLSCACertFile, AuthClients: cfg.TLSAuthClients})
}

// listenTLS opens the TLS port when one is configured, else returns nil.
func (s *Server) listenTLS() (net.Listener, error) {
	cfg := s.Config()
	if cfg.TLSPort == 0 {
		return nil, nil
	}
	tc, err := s.TLSConfig()
	if err != nil {
		return nil, err
	}
	raw, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort)))
	if err != nil {
		return nil, err
	}
	s.logger.Printf("TLS listening on %s (client certificates: %s)", raw.Addr(), cfg.TLSAuthClients)
	return tls.NewListener(raw, tc), nil
}
