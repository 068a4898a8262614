package monitor_test

import (
	"bytes"
	"io"
	"log"
	"sync"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	connection "github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/monitor"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// newServer is a command layer with the MONITOR family, on a fake clock,
// beside the families whose commands the tests run and watch: the
// connection commands (ECHO, RESET), the keyspace, scripts and CONFIG.
func newServer(t testing.TB) *command.Server {
	t.Helper()
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), connection.New(), keyspace.New(), scripts.New(), monitor.New(), admin.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// conn is a connection with no socket: replies and pushed messages go to
// buffers the test reads.
type conn struct {
	s     *command.Server
	addr  string
	out   bytes.Buffer
	w     *resp.Writer
	ctx   any
	class int

	mu   sync.Mutex
	mail []byte
}

// dial opens a connection from addr on s.
func dial(t testing.TB, s *command.Server, addr string) *conn {
	t.Helper()
	c := &conn{s: s, addr: addr}
	c.w = resp.NewWriter(&c.out)
	if !s.Open(c) {
		t.Fatalf("connection refused: %q", c.out.String())
	}
	return c
}

// do runs one command as a batch of its own and returns its reply.
func (c *conn) do(args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c.out.Reset()
	c.s.Command(c, b)
	c.s.EndBatch(c)
	c.w.Flush()
	return c.out.String()
}

// mailed returns and forgets what was pushed to the connection.
func (c *conn) mailed() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := string(c.mail)
	c.mail = nil
	return m
}

// close ends the connection as the transport does.
func (c *conn) close() { c.s.Closed(c, nil) }

func (c *conn) Writer() *resp.Writer  { return c.w }
func (c *conn) Close() error          { return nil }
func (c *conn) Kill()                 {}
func (c *conn) RemoteAddr() string    { return c.addr }
func (c *conn) LocalAddr() string     { return "127.0.0.1:6379" }
func (c *conn) Loopback() bool        { return true }
func (c *conn) SetAuthenticated(bool) {}
func (c *conn) OutputMemory() int64   { return 0 }
func (c *conn) Memory() int64         { return 0 }
func (c *conn) SetClass(class int)    { c.class = class }
func (c *conn) Context() any          { return c.ctx }
func (c *conn) SetContext(v any)      { c.ctx = v }
func (c *conn) Push(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mail = append(c.mail, b...)
}
