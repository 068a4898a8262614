package command

import (
	"crypto/tls"
	"net"
	"strconv"

	"github.com/limitdb/limitdb/server"
)

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
