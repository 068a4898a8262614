package command

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
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

func init() {
	RegisterDirective(IntDirective("tls-port", "TCP port for TLS connections (0: no TLS)", false, 0,
		func(c *Config) *int { return &c.TLSPort }))
	RegisterDirective(StringDirective("tls-cert-file", "server certificate for TLS (PEM)", false,
		func(c *Config) *string { return &c.TLSCertFile }))
	RegisterDirective(StringDirective("tls-key-file", "private key of tls-cert-file (PEM)", false,
		func(c *Config) *string { return &c.TLSKeyFile }))
	RegisterDirective(StringDirective("tls-ca-cert-file", "CA certificates that sign client certificates (PEM)", false,
		func(c *Config) *string { return &c.TLSCACertFile }))
	RegisterDirective(&Directive{Name: "tls-auth-clients", Help: "client certificates: yes (required), optional, or no",
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
// directives. As in Redis, client certificates are required unless
// tls-auth-clients says otherwise, and then tls-ca-cert-file must be set.
func (s *Server) TLSConfig() (*tls.Config, error) {
	cfg := s.Config()
	if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
		return nil, errors.New("tls: tls-cert-file and tls-key-file are required")
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch cfg.TLSAuthClients {
	case "no":
		tc.ClientAuth = tls.NoClientCert
	case "optional":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if cfg.TLSCACertFile != "" {
		pem, err := os.ReadFile(cfg.TLSCACertFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: no certificate found in %s", cfg.TLSCACertFile)
		}
		tc.ClientCAs = pool
	} else if tc.ClientAuth != tls.NoClientCert {
		return nil, errors.New("tls: tls-ca-cert-file is required unless tls-auth-clients is no")
	}
	return tc, nil
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

// handshake completes a TLS handshake under a deadline before the first
// read, so a client that never finishes one cannot hold a connection.
func handshake(nc net.Conn) error {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return err
	}
	return tc.SetDeadline(time.Time{})
}

// JoinListeners merges listeners into one, so a single Server (and redcon's
// single accept loop) serves the plain and the TLS port. Its Addr is the
// first listener's.
func JoinListeners(lns ...net.Listener) net.Listener {
	j := &joined{lns: lns, conns: make(chan net.Conn), done: make(chan struct{})}
	for _, ln := range lns {
		go j.pump(ln)
	}
	return j
}

type joined struct {
	lns   []net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (j *joined) pump(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			j.Close()
			return
		}
		select {
		case j.conns <- c:
		case <-j.done:
			c.Close()
			return
		}
	}
}

func (j *joined) Accept() (net.Conn, error) {
	select {
	case c := <-j.conns:
		return c, nil
	case <-j.done:
		return nil, net.ErrClosed
	}
}

func (j *joined) Close() error {
	j.once.Do(func() {
		close(j.done)
		for _, ln := range j.lns {
			ln.Close()
		}
	})
	return nil
}

func (j *joined) Addr() net.Addr { return j.lns[0].Addr() }
