// Package commandtest holds what the command families' tests share: a
// connection with no socket (Conn) that a command layer serves as the
// transport's connections, its replies and pushed messages kept for the
// test to read. Only tests import it.
package commandtest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/resp"
)

// Conn is a connection with no socket: replies and pushed messages go to
// buffers the test reads.
type Conn struct {
	s     *command.Server
	addr  string
	out   bytes.Buffer
	w     *resp.Writer
	ctx   any
	class int

	mu   sync.Mutex
	mail []byte
}

// Dial opens a connection from addr on s.
func Dial(t testing.TB, s *command.Server, addr string) *Conn {
	t.Helper()
	c := &Conn{s: s, addr: addr}
	c.w = resp.NewWriter(&c.out)
	if !s.Open(c) {
		t.Fatalf("connection refused: %q", c.out.String())
	}
	return c
}

// Do runs one command as a batch of its own and returns its reply.
func (c *Conn) Do(args ...string) string {
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

// Mailed returns and forgets what was pushed to the connection.
func (c *Conn) Mailed() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := string(c.mail)
	c.mail = nil
	return m
}

// Hangup ends the connection as the transport does when it goes.
func (c *Conn) Hangup() { c.s.Closed(c, nil) }

// Class is the client-output-buffer class the command layer last set.
func (c *Conn) Class() int { return c.class }

// What command.Conn asks of a connection.

func (c *Conn) Writer() *resp.Writer  { return c.w }
func (c *Conn) Close() error          { return nil }
func (c *Conn) Kill()                 {}
func (c *Conn) RemoteAddr() string    { return c.addr }
func (c *Conn) LocalAddr() string     { return "127.0.0.1:6379" }
func (c *Conn) Loopback() bool        { return true }
func (c *Conn) SetAuthenticated(bool) {}
func (c *Conn) OutputMemory() int64   { return 0 }
func (c *Conn) Memory() int64         { return 0 }
func (c *Conn) SetClass(class int)    { c.class = class }
func (c *Conn) Context() any          { return c.ctx }
func (c *Conn) SetContext(v any)      { c.ctx = v }
func (c *Conn) BeginLong()            {}
func (c *Conn) EndLong()              {}
func (c *Conn) Stream()               {}

// Push queues a message, as the transport's Push does.
func (c *Conn) Push(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mail = append(c.mail, b...)
}
