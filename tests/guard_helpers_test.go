package tests

import (
	"bufio"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/testlog"
	"github.com/limitdb/limitdb/node"
	"github.com/stretchr/testify/require"
)

// startWith starts a server like startServer, with the configuration
// changed by mod and listening on ln (nil: a fresh loopback port). The
// returned log holds what the server logged.
func startWith(t testing.TB, mod func(*config.Config), ln net.Listener) (*testServer, *testlog.Buffer) {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := engine.New(clk, 0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	if mod != nil {
		mod(&cfg)
	}
	logs := &testlog.Buffer{}
	srv := node.New(cfg, eng, log.New(logs, "", 0))
	if err := srv.Prepare(); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	runNode(t, srv, ln)
	return &testServer{srv: srv, clk: clk, addr: ln.Addr().String()}, logs
}

// raw is a bare TCP connection for sending exact bytes and reading replies
// line by line.
type raw struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *raw {
	t.Helper()
	return dialRawNet(t, "tcp", addr)
}

// dialRawNet is dialRaw over a network of choice ("unix" for
// startRedis's socket).
func dialRawNet(t testing.TB, network, addr string) *raw {
	t.Helper()
	nc, err := net.DialTimeout(network, addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (r *raw) send(s string) {
	r.t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.t.Fatalf("send %q: %v", clipStr(s), err)
	}
}

// line reads one reply line without its CRLF; io.EOF when the server closed.
func (r *raw) line() (string, error) {
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := r.rd.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

func (r *raw) mustLine() string {
	r.t.Helper()
	l, err := r.line()
	if err != nil {
		r.t.Fatalf("read: %v (got %q)", err, l)
	}
	return l
}

// closed reports whether the server closed the connection (after any
// pending reply lines).
func (r *raw) closed() bool {
	for i := 0; i < 1000; i++ {
		if _, err := r.line(); err != nil {
			return err == io.EOF || strings.Contains(err.Error(), "reset")
		}
	}
	return false
}

// do sends one command and returns its whole reply, RESP2 or RESP3, as
// the bytes the server sent.
func (r *raw) do(args ...string) string {
	r.t.Helper()
	r.send(cmd(args...))
	var out strings.Builder
	r.reply(&out)
	return out.String()
}

// reply copies one whole reply to out.
func (r *raw) reply(out *strings.Builder) {
	r.t.Helper()
	l := r.mustLine()
	out.WriteString(l + "\r\n")
	n, _ := strconv.Atoi(l[1:])
	switch l[0] {
	case '$', '=', '!':
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r.rd, buf); err != nil {
				r.t.Fatalf("read: %v", err)
			}
			out.Write(buf)
		}
	case '*', '~', '>', '%', '|':
		if l[0] == '%' || l[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			r.reply(out)
		}
	}
}

// cmd encodes args as a RESP array.
func cmd(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

func clipStr(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
