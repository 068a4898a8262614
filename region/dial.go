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

// conn is a link to one peer: the link writes pushes, and a reader
// (answers) takes their answers in order.
type conn struct {
	nc       net.Conn
	rd       *bufio.Reader
	inflight chan time.Duration // each unanswered push's timeout, oldest first
	failed   chan error         // the reader's reason to give up on the link
	stop     chan struct{}      // closed by close: the reader returns
}

// maxInFlight bounds the pushes awaiting an answer; past it the link waits
// (the queue meanwhile gathers the slots into fewer, larger batches).
const maxInFlight = 256

func (c *conn) close() {
	c.nc.Close()
	if c.stop != nil {
		close(c.stop)
		c.stop = nil
	}
}

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
	c.nc.SetDeadline(time.Time{})
	c.pipeline()
	return c, nil
}

// pipeline starts the reader of the pushes' answers.
func (c *conn) pipeline() {
	c.inflight = make(chan time.Duration, maxInFlight)
	c.failed = make(chan error, 1)
	c.stop = make(chan struct{})
	go c.answers(c.inflight, c.failed, c.stop)
}

// send writes one RGN.PUSH without waiting for its answer, which must come
// within timeout of the reader waiting for it (at once, or once the
// answers before it arrived).
func (c *conn) send(wire []byte, timeout time.Duration, done <-chan struct{}) error {
	select {
	case c.inflight <- timeout:
	case err := <-c.failed:
		return err
	case <-done:
		return errors.New("closing")
	}
	c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(wire)
	return err
}

// answers reads the pushes' answers in order, each within its timeout,
// until one fails or the link closes.
func (c *conn) answers(inflight <-chan time.Duration, failed chan<- error, stop <-chan struct{}) {
	for {
		var timeout time.Duration
		select {
		case timeout = <-inflight:
		case <-stop:
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(timeout))
		if err := c.answer(); err != nil {
			select {
			case <-stop: // closed: nothing to report
			default:
				failed <- err
			}
			return
		}
	}
}

// answer reads one answer: an error reply is an error.
func (c *conn) answer() error {
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

func (c *conn) roundTrip(wire []byte, timeout time.Duration) error {
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(wire); err != nil {
		return err
	}
	return c.answer()
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
