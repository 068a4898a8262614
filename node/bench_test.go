package node

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/policy"
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

// serveStream serves one client with no socket on a new server: commands
// come from rd and replies go to out through the transport's connection
// loop, so a benchmark measures parsing, dispatch, the engine and reply
// encoding, and nothing of the kernel. It returns the error that ended the
// stream (io.EOF at its end).
func serveStream(rd io.Reader, out io.Writer) error {
	return streamTo(New(config.Default(), engine.New(clock.Real(), 0), nil), rd, out)
}

// streamTo is serveStream on an existing server.
func streamTo(n *Node, rd io.Reader, out io.Writer) error {
	if err := n.Prepare(); err != nil {
		return err
	}
	return n.net.ServeStream(rd, out)
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
					rd := &batchReader{batches: batches, reads: (b.N + depth - 1) / depth}
					b.ReportAllocs()
					b.ResetTimer()
					defer benchcpu.Report(b)()
					if err := serveStream(rd, io.Discard); err != io.EOF {
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
	if err := serveStream(&batchReader{batches: [][]byte{batch}, reads: 1}, &out); err != io.EOF {
		b.Fatal(err)
	}
	if i := bytes.IndexByte(out.Bytes(), '-'); i >= 0 && (i == 0 || out.Bytes()[i-1] == '\n') {
		b.Fatalf("error reply: %.80q", out.Bytes()[i:])
	}
}

// BenchmarkPipelineParallel runs CL.THROTTLE/P16 on one server from one
// connection per goroutine (-cpu sets how many run at once), 100k random
// keys each: what is shared between connections (shards, command
// statistics) shows up here as cpu-ns/op growing with -cpu.
func BenchmarkPipelineParallel(b *testing.B) {
	s := New(config.Default(), engine.New(clock.Real(), 0), nil)
	var seed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewSource(seed.Add(1)))
		batches := pipelines(16, func(int) string { return fmt.Sprint("k:", r.Intn(100_000)) }, benchLoads[0].args)
		rd := &parallelReader{batches: batches, pb: pb}
		if err := streamTo(s, rd, io.Discard); err != io.EOF {
			b.Error(err)
		}
	})
}

// parallelReader hands out one pipeline per Read while pb has iterations
// left, one iteration per command; then io.EOF.
type parallelReader struct {
	batches [][]byte
	next    int
	pb      *testing.PB
}

func (r *parallelReader) Read(p []byte) (int, error) {
	for i := 0; i < 16; i++ {
		if !r.pb.Next() {
			return 0, io.EOF
		}
	}
	b := r.batches[r.next%len(r.batches)]
	r.next++
	return copy(p, b), nil
}

// BenchmarkAnalytics is BenchmarkPipeline's CL.THROTTLE and an RL.HIT of
// a GCRA policy (100 a minute) at depth 16, with analytics off and on, on
// 100k random keys and on one hot key: what recording each decision's key
// costs the hot path (bench/analytics.sh runs the pairs interleaved and
// compares their cpu-ns/op).
func BenchmarkAnalytics(b *testing.B) {
	loads := []struct {
		name string
		args func(key string) []string
	}{
		benchLoads[0],
		{"RL.HIT", func(k string) []string { return []string{"RL.HIT", "bench", k} }},
	}
	for _, load := range loads {
		for _, keys := range []string{"rand", "hot"} {
			key := hotKey
			if keys == "rand" {
				key = randomKeys(100_000)
			}
			for _, on := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/analytics=%v", load.name, keys, on)
				b.Run(name, func(b *testing.B) {
					cfg := config.Default()
					cfg.Analytics = on
					n := New(cfg, engine.New(clock.Real(), 0), nil)
					if err := n.Policies().Set(policy.Policy{Name: "bench", Algorithm: policy.GCRA, Limit: 100, Period: time.Minute}); err != nil {
						b.Fatal(err)
					}
					batches := pipelines(16, key, load.args)
					rd := &batchReader{batches: batches, reads: (b.N + 15) / 16}
					b.ReportAllocs()
					b.ResetTimer()
					defer benchcpu.Report(b)()
					if err := streamTo(n, rd, io.Discard); err != io.EOF {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// BenchmarkPolicyHit is BenchmarkPipeline's RL.HIT through a local and a
// global policy of each algorithm scope: global can take, on one node of a
// region with two peer regions (unreachable: the sender runs, collecting
// the slots every interval, and every batch it would send is dropped for
// the full state its link owes). The goal of docs/global.md is a global
// policy at >= 0.9x a local one's throughput: compare cpu-ns/op of the two
// in the same run.
func BenchmarkPolicyHit(b *testing.B) {
	for _, alg := range []policy.Algorithm{policy.FixedWindow, policy.SlidingWindow, policy.GCRA, policy.TokenBucket} {
		for _, scope := range []string{"local", "global"} {
			for _, keys := range []string{"rand", "hot"} {
				b.Run(fmt.Sprintf("%s/%s/%s", alg, scope, keys), func(b *testing.B) {
					cfg := config.Default()
					cfg.Region, cfg.RegionPeers = "eu", "us=127.0.0.1:1 ap=127.0.0.1:2"
					cfg.RegionPeerTimeout = time.Hour
					n := New(cfg, engine.New(clock.Real(), 0), log.New(io.Discard, "", 0))
					if err := n.Prepare(); err != nil {
						b.Fatal(err)
					}
					// A limit no benchmark reaches: every hit is admitted and
					// written, the steady state of a busy server.
					p := policy.Policy{Name: "api", Algorithm: alg, Limit: 1 << 40, Period: time.Hour, Global: scope == "global"}
					if err := n.Policies().Set(p); err != nil {
						b.Fatal(err)
					}
					if err := n.Regions().Start(); err != nil {
						b.Fatal(err)
					}
					defer n.Close()
					key := hotKey
					if keys == "rand" {
						key = randomKeys(100_000)
					}
					batches := pipelines(16, key, func(k string) []string { return []string{"RL.HIT", "api", k} })
					var out bytes.Buffer
					if err := n.net.ServeStream(&batchReader{batches: batches[:1], reads: 1}, &out); err != io.EOF {
						b.Fatal(err)
					}
					if i := bytes.IndexByte(out.Bytes(), '-'); i >= 0 && (i == 0 || out.Bytes()[i-1] == '\n') {
						b.Fatalf("error reply: %.80q", out.Bytes()[i:])
					}
					rd := &batchReader{batches: batches, reads: (b.N + 15) / 16}
					b.ReportAllocs()
					b.ResetTimer()
					defer benchcpu.Report(b)()
					if err := n.net.ServeStream(rd, io.Discard); err != io.EOF {
						b.Fatal(err)
					}
				})
			}
		}
	}
}
