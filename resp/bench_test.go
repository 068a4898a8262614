package resp

import (
	"fmt"
	"io"
	"math/rand"
	"net"
	"testing"

	"github.com/limitdb/limitdb/engine"
	"github.com/tidwall/redcon"
)

// benchConn is a redcon.Conn with no socket: replies go to a Writer over
// io.Discard, so a benchmark measures parsing, dispatch, the engine and
// reply encoding, and nothing of the kernel.
type benchConn struct {
	*redcon.Writer
	ctx any
}

func (c *benchConn) RemoteAddr() string             { return "127.0.0.1:1" }
func (c *benchConn) Close() error                   { return nil }
func (c *benchConn) Context() any                   { return c.ctx }
func (c *benchConn) SetContext(v any)               { c.ctx = v }
func (c *benchConn) SetReadBuffer(int)              {}
func (c *benchConn) Detach() redcon.DetachedConn    { panic("not in benchmarks") }
func (c *benchConn) ReadPipeline() []redcon.Command { return nil }
func (c *benchConn) PeekPipeline() []redcon.Command { return nil }
func (c *benchConn) NetConn() net.Conn              { return nil }

// batchReader hands out one pipeline per Read, cycling through batches, the
// way a socket delivers a client's pipeline.
type batchReader struct {
	batches [][]byte
	next    int
}

func (r *batchReader) Read(p []byte) (int, error) {
	b := r.batches[r.next%len(r.batches)]
	r.next++
	return copy(p, b), nil
}

// pipelines encodes 1024 pipelines of depth commands each; key(i) names the
// key of the i-th command overall.
func pipelines(depth int, key func(i int) string, cmd func(key string) []string) [][]byte {
	out := make([][]byte, 1024)
	for p := range out {
		var b []byte
		for j := 0; j < depth; j++ {
			args := cmd(key(p*depth + j))
			b = redcon.AppendArray(b, len(args))
			for _, a := range args {
				b = redcon.AppendBulkString(b, a)
			}
		}
		out[p] = b
	}
	return out
}

func randomKeys(n int) func(int) string {
	r := rand.New(rand.NewSource(1))
	return func(int) string { return fmt.Sprint("k:", r.Intn(n)) }
}

func hotKey(int) string { return "hot" }

func throttle(key string) []string { return []string{"CL.THROTTLE", key, "99", "100", "60"} }

// benchServer returns a server with a client attached to a benchConn.
func benchServer() (*Server, *benchConn) {
	s := New(DefaultConfig(), engine.New(nil, 0), nil)
	conn := &benchConn{Writer: redcon.NewWriter(io.Discard)}
	s.accept(conn)
	return s, conn
}

// BenchmarkPipeline feeds pipelined RESP through the server's real handler:
// redcon's reader parses a socket-sized batch, handle dispatches every
// command, the writer encodes the replies and flushes once per batch, as
// redcon's connection loop does. ns/op and allocs/op are per command.
func BenchmarkPipeline(b *testing.B) {
	cases := []struct {
		name  string
		depth int
		key   func(int) string
	}{
		{"CL.THROTTLE/P16/rand", 16, randomKeys(100_000)},
		{"CL.THROTTLE/P16/hot", 16, hotKey},
		{"CL.THROTTLE/P1/rand", 1, randomKeys(100_000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s, conn := benchServer()
			rd := redcon.NewReader(&batchReader{batches: pipelines(c.depth, c.key, throttle)})
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				cmds, err := rd.ReadCommands()
				if err != nil {
					b.Fatal(err)
				}
				for _, cmd := range cmds {
					s.handle(conn, cmd)
				}
				if err := conn.Flush(); err != nil {
					b.Fatal(err)
				}
				done += len(cmds)
			}
		})
	}
}
