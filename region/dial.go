package region

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/policy"
)

// Dialer opens a connection to a peer's client port: plain TCP, or TLS
// (ClientTLS), and authenticates it.
type Dialer struct {
	TLS  *tls.Config // nil: plain TCP
	User func() string
	Pass func() string
}

// ClientTLS is the TLS configuration towards peers: the CA that signs
// their certificates (tls-ca-cert-file; none: the system's) and this
// node's certificate (tls-cert-file, tls-key-file), presented when the
// peer asks for one.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("region: tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("region: tls-ca-cert-file %s holds no certificate", caFile)
		}
		tc.RootCAs = pool
	}
	if certFile != "" && keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("region: tls-cert-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// conn is a link to one peer.
type conn struct {
	nc net.Conn
	rd *bufio.Reader
}

func (c *conn) close() { c.nc.Close() }

// dial connects to p and authenticates as the Dialer says.
func (r *Region) dial(p *peer) (*conn, error) {
	timeout := r.timeout()
	d := net.Dialer{Timeout: timeout}
	nc, err := d.Dial("tcp", p.Addr)
	if err != nil {
		return nil, err
	}
	if tc := r.opt.Dial.TLS; tc != nil {
		tc = tc.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(p.Addr)
		}
		nc = tls.Client(nc, tc)
	}
	c := &conn{nc: nc, rd: bufio.NewReader(nc)}
	var pass, user string
	if r.opt.Dial.Pass != nil {
		pass = r.opt.Dial.Pass()
	}
	if r.opt.Dial.User != nil {
		user = r.opt.Dial.User()
	}
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		var w []byte
		w = appendArray(w, len(args))
		for _, a := range args {
			w = appendBulk(w, a)
		}
		if err := c.roundTrip(w, timeout); err != nil {
			c.close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return c, nil
}

// push sends one RGN.PUSH and waits for its answer.
func (c *conn) push(wire []byte, timeout time.Duration) error {
	return c.roundTrip(wire, timeout)
}

func (c *conn) roundTrip(wire []byte, timeout time.Duration) error {
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(wire); err != nil {
		return err
	}
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return errors.New(line[1:])
	}
	return nil
}

// appendPush writes RGN.PUSH region sentAt key id value ... in RESP.
func appendPush(w []byte, region string, sentAt int64, ups []policy.Update) []byte {
	w = appendArray(w, 3+3*len(ups))
	w = appendBulk(w, "RGN.PUSH")
	w = appendBulk(w, region)
	w = appendBulkInt(w, sentAt)
	for _, u := range ups {
		w = appendBulk(w, u.Key)
		w = appendBulkInt(w, u.ID)
		w = appendBulkInt(w, u.Value)
	}
	return w
}

func appendArray(w []byte, n int) []byte {
	w = append(w, '*')
	w = strconv.AppendInt(w, int64(n), 10)
	return append(w, '\r', '\n')
}

func appendBulk(w []byte, s string) []byte {
	w = append(w, '$')
	w = strconv.AppendInt(w, int64(len(s)), 10)
	w = append(w, '\r', '\n')
	w = append(w, s...)
	return append(w, '\r', '\n')
}

func appendBulkInt(w []byte, n int64) []byte {
	var b [20]byte
	return appendBulk(w, string(strconv.AppendInt(b[:0], n, 10)))
}
