package command

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/tidwall/redcon"
)

// batchReader hands out one pipeline per Read, cycling through batches, the
// way a socket delivers a client's pipeline; after reads batches it reports
// io.EOF.
type batchReader struct {
	batches [][]byte
	next    int
	reads   int
}

func (r *batchReader) Read(p []byte) (int, error) {
	if r.next == r.reads {
		return 0, io.EOF
	}
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

// The loads of bench/compare.sh: 100 requests a minute.
var benchLoads = []struct {
	name string
	args func(key string) []string
}{
	{"CL.THROTTLE", func(k string) []string { return []string{"CL.THROTTLE", k, "99", "100", "60"} }},
	{"TB.TAKE", func(k string) []string { return []string{"TB.TAKE", k, "100", "100", "60"} }},
	{"SW.INCR", func(k string) []string { return []string{"SW.INCR", k, "100", "60"} }},
	{"SL.INCR", func(k string) []string { return []string{"SL.INCR", k, "100", "60"} }},
	{"INCR", func(k string) []string { return []string{"INCR", k} }},
}

// pipeConn returns a server and a connection to it with no socket:
// commands come from rd and replies go to out, so a benchmark measures
// parsing, dispatch, the engine and reply encoding, and nothing of the
// kernel.
func pipeConn(rd io.Reader, out io.Writer) (*listener, *conn) {
	return connTo(New(DefaultConfig(), engine.New(nil, 0), nil), rd, out)
}

// connTo is pipeConn on an existing server.
func connTo(s *Server, rd io.Reader, out io.Writer) (*listener, *conn) {
	l := newListener(s.handle, s.accept, s.closed)
	c := &conn{addr: "127.0.0.1:1", wr: redcon.NewWriter(out), rd: reader{rd: rd}}
	s.accept(c)
	return l, c
}

// BenchmarkPipeline feeds pipelined RESP through the server's real
// connection loop: the reader parses a socket-sized batch, handle
// dispatches every command, the writer encodes the replies and flushes once
// per batch. ns/op, cpu-ns/op and allocs/op are per command.
func BenchmarkPipeline(b *testing.B) {
	for _, load := range benchLoads {
		for _, depth := range []int{16, 1} {
			for _, keys := range []string{"rand", "hot"} {
				key := hotKey
				if keys == "rand" {
					key = randomKeys(100_000)
				}
				name := fmt.Sprintf("%s/P%d/%s", load.name, depth, keys)
				b.Run(name, func(b *testing.B) {
					batches := pipelines(depth, key, load.args)
					checkReplies(b, batches[0])
					l, c := pipeConn(&batchReader{batches: batches, reads: (b.N + depth - 1) / depth}, io.Discard)
					b.ReportAllocs()
					b.ResetTimer()
					defer benchcpu.Report(b)()
					if err := l.loop(c); err != io.EOF {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// checkReplies fails the benchmark unless a batch is answered without a
// single error reply: a benchmark of "unknown command" measures nothing.
func checkReplies(b *testing.B, batch []byte) {
	var out bytes.Buffer
	l, c := pipeConn(&batchReader{batches: [][]byte{batch}, reads: 1}, &out)
	if err := l.loop(c); err != io.EOF {
		b.Fatal(err)
	}
	if i := bytes.IndexByte(out.Bytes(), '-'); i >= 0 && (i == 0 || out.Bytes()[i-1] == '\n') {
		b.Fatalf("error reply: %.80q", out.Bytes()[i:])
	}
}

// BenchmarkReader parses the same pipelines with redcon's reader and with
// limitdb's (conn.go): the measurement behind replacing the former.
func BenchmarkReader(b *testing.B) {
	batches := pipelines(16, randomKeys(100_000), benchLoads[0].args)
	b.Run("redcon", func(b *testing.B) {
		rd := redcon.NewReader(&batchReader{batches: batches, reads: -1})
		b.ReportAllocs()
		for done := 0; done < b.N; {
			cmds, err := rd.ReadCommands()
			if err != nil {
				b.Fatal(err)
			}
			done += len(cmds)
		}
	})
	b.Run("limitdb", func(b *testing.B) {
		rd := reader{rd: &batchReader{batches: batches, reads: -1}}
		b.ReportAllocs()
		for done := 0; done < b.N; {
			cmds, err := rd.read()
			if err != nil {
				b.Fatal(err)
			}
			done += len(cmds)
		}
	})
}

// BenchmarkPipelineParallel runs CL.THROTTLE/P16 on one server from one
// connection per goroutine (-cpu sets how many run at once), 100k random
// keys each: what is shared between connections (shards, command
// statistics) shows up here as cpu-ns/op growing with -cpu.
func BenchmarkPipelineParallel(b *testing.B) {
	s := New(DefaultConfig(), engine.New(nil, 0), nil)
	var seed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewSource(seed.Add(1)))
		batches := pipelines(16, func(int) string { return fmt.Sprint("k:", r.Intn(100_000)) }, benchLoads[0].args)
		br := &batchReader{batches: batches, reads: -1}
		l, c := connTo(s, br, io.Discard)
		for pb.Next() {
			// one command per iteration: a batch every 16
			if len(c.pending) == 0 {
				c.ctx.(*Client).endBatch()
				cmds, err := c.rd.read()
				if err != nil {
					b.Error(err)
					return
				}
				c.pending = cmds
			}
			cmd := c.pending[0]
			c.pending = c.pending[1:]
			l.handle(c, cmd)
			if len(c.pending) == 0 {
				c.wr.Flush()
			}
		}
	})
}

// fakeNetConn is a net.Conn over a reader, discarding writes.
type fakeNetConn struct{ io.Reader }

func (fakeNetConn) Write(p []byte) (int, error)      { return len(p), nil }
func (fakeNetConn) Close() error                     { return nil }
func (fakeNetConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (fakeNetConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (fakeNetConn) SetDeadline(time.Time) error      { return nil }
func (fakeNetConn) SetReadDeadline(time.Time) error  { return nil }
func (fakeNetConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkGuard is BenchmarkPipeline's CL.THROTTLE/P16 with and without
// the connection guard (limits.go) in front of the reader, as the server
// runs it: the cost of checking the framing before parsing it.
func BenchmarkGuard(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		b.Run(fmt.Sprint("guarded=", guarded), func(b *testing.B) {
			s := New(DefaultConfig(), engine.New(nil, 0), nil)
			s.guard.loadLimits(s.Config().Limits)
			var nc net.Conn = fakeNetConn{&batchReader{batches: pipelines(16, hotKey, benchLoads[0].args), reads: (b.N + 15) / 16}}
			if guarded {
				nc = &guardConn{Conn: nc, s: s}
			}
			l := newListener(s.handle, s.accept, s.closed)
			c := &conn{nc: nc, addr: "127.0.0.1:1", wr: redcon.NewWriter(nc), rd: reader{rd: nc}}
			if !s.accept(c) {
				b.Fatal("not accepted")
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			if err := l.loop(c); err != io.EOF {
				b.Fatal(err)
			}
		})
	}
}
