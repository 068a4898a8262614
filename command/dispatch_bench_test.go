package command

import (
	"fmt"
	"io"
	"log"
	"net"
	"syscall"
	"testing"

	"github.com/limitdb/limitdb/engine"
	"github.com/tidwall/redcon"
)

// benchConn is a redcon.Conn that writes replies into a reused buffer, so
// that a benchmark measures dispatch and the handler, not the network.
type benchConn struct {
	redcon.Conn // unused methods panic
	w           *redcon.Writer
	ctx         any
	raw         []byte
}

func (c *benchConn) RemoteAddr() string       { return "127.0.0.1:1" }
func (c *benchConn) NetConn() net.Conn        { return nil }
func (c *benchConn) Context() any             { return c.ctx }
func (c *benchConn) SetContext(v any)         { c.ctx = v }
func (c *benchConn) WriteError(m string)      { c.w.WriteError(m) }
func (c *benchConn) WriteString(s string)     { c.w.WriteString(s) }
func (c *benchConn) WriteBulk(b []byte)       { c.w.WriteBulk(b) }
func (c *benchConn) WriteBulkString(s string) { c.w.WriteBulkString(s) }
func (c *benchConn) WriteInt(n int)           { c.w.WriteInt(n) }
func (c *benchConn) WriteInt64(n int64)       { c.w.WriteInt64(n) }
func (c *benchConn) WriteArray(n int)         { c.w.WriteArray(n) }
func (c *benchConn) WriteNull()               { c.w.WriteNull() }
func (c *benchConn) WriteRaw(b []byte)        { c.w.WriteRaw(b) }

// flush ends a batch as the connection loop does (conn.go): the client
// publishes its stats and reads the clock afresh for the next batch.
func (c *benchConn) flush() {
	c.ctx.(*Client).endBatch()
	c.w.SetBuffer(c.raw[:0])
}

// BenchmarkDispatchThrottle is one CL.THROTTLE through the command table,
// gates, handler, limiter, reply and the statistics kept after it.
func BenchmarkDispatchThrottle(b *testing.B) {
	clock := engine.NewFakeClock(1_700_000_000e9)
	s := New(DefaultConfig(), engine.New(clock, 0), log.New(io.Discard, "", 0))
	conn := &benchConn{w: redcon.NewWriter(io.Discard), raw: make([]byte, 0, 64<<10)}
	s.accept(conn)
	cmds := make([]redcon.Command, 1000)
	for i := range cmds {
		cmds[i] = redcon.Command{Args: [][]byte{[]byte("CL.THROTTLE"), []byte(fmt.Sprint("user:", i)),
			[]byte("15"), []byte("30"), []byte("60")}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		s.handle(conn, cmds[i%len(cmds)])
		if i%16 == 15 {
			conn.flush()
		}
		if i%len(cmds) == len(cmds)-1 {
			clock.Advance(1e9) // half a token per key per round: keys stay, half are denied
		}
	}
}

// cpuTime is the process's user and system CPU time in ns: on a machine
// shared with other work it measures the code, where wall time measures
// the scheduler.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
