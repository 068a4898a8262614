package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// TLSFiles name what a TLS listener needs, as Redis's tls-* directives do.
type TLSFiles struct {
	CertFile    string // tls-cert-file: server certificate (PEM)
	KeyFile     string // tls-key-file: its private key (PEM)
	CACertFile  string // tls-ca-cert-file: CA that signs client certificates
	AuthClients string // tls-auth-clients: yes (require a client certificate), optional, no
}

// TLSConfig builds a crypto/tls configuration from f. As in Redis, client
// certificates are required unless AuthClients says otherwise, and then
// CACertFile must be set.
func TLSConfig(f TLSFiles) (*tls.Config, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("tls: tls-cert-file and tls-key-file are required")
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch f.AuthClients {
	case "no":
		tc.ClientAuth = tls.NoClientCert
	case "optional":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if f.CACertFile != "" {
		pem, err := os.ReadFile(f.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: no certificate found in %s", f.CACertFile)
		}
		tc.ClientCAs = pool
	} else if tc.ClientAuth != tls.NoClientCert {
		return nil, errors.New("tls: tls-ca-cert-file is required unless tls-auth-clients is no")
	}
	return tc, nil
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

// JoinListeners merges listeners into one, so a single Server and its one
// accept loop serve the plain and the TLS port. Its Addr is the
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
