package replication

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/persistence"
)

// The load of bench/replication.sh, in process: CL.THROTTLE k 99 1000 60
// on 100k random keys at 300k requests a second of a fake clock, so that a
// key's state expires 60 ms after its hit and active expiry (as the node
// runs it: a tenth of the shards every 10 ms) deletes most keys between
// two hits. The stream carries the writes and those deletions.
const (
	benchKeys     = 100_000
	benchInterval = int64(time.Second / 300_000) // between two requests
	benchRound    = 16                           // requests per Publish: a pipeline of 16
)

// benchLoad is the primary's side of the load: an engine on a fake clock
// and the requests' keys.
type benchLoad struct {
	eng   *engine.Engine
	clk   *clock.Fake
	lim   engine.CellLimiter
	keys  [][]byte
	order []int32 // the keys of successive requests
	next  int
	now   int64
	reap  int64 // when active expiry runs next
}

func newBenchLoad(tb testing.TB) *benchLoad {
	l, err := gcra.CellLimit(99, 1000, 60)
	if err != nil {
		tb.Fatal(err)
	}
	const t0 = int64(1_800_000_000) * int64(time.Second)
	ld := &benchLoad{clk: clock.NewFake(t0), lim: engine.CellLimiter{L: l}, now: t0, reap: t0}
	ld.eng = engine.New(ld.clk, 0)
	for i := 0; i < benchKeys; i++ {
		ld.keys = append(ld.keys, fmt.Appendf(nil, "k:%012d", i))
	}
	r := rand.New(rand.NewSource(1))
	ld.order = make([]int32, 1<<20)
	for i := range ld.order {
		ld.order[i] = int32(r.Intn(benchKeys))
	}
	return ld
}

// request runs one request and, when it is due, a slice of active expiry.
func (ld *benchLoad) request() {
	ld.now += benchInterval
	key := ld.keys[ld.order[ld.next&(len(ld.order)-1)]]
	ld.next++
	engine.Limit(ld.eng, key, ld.now, ld.lim, 1)
	if ld.now >= ld.reap {
		ld.clk.Set(ld.now)
		ld.eng.ExpireShards(ld.now, 20, (ld.eng.Shards()+9)/10)
		ld.reap += int64(10 * time.Millisecond)
	}
}

// warm runs a second of the load: the keyspace reaches its steady state.
func (ld *benchLoad) warm() {
	for i := 0; i < 300_000; i++ {
		ld.request()
	}
}

// benchHost is a Host whose snapshot is empty.
type benchHost struct{ sections persistence.Sections }

func (h *benchHost) Snapshot(io.Writer) error        { return nil }
func (h *benchHost) Sections() *persistence.Sections { return &h.sections }
func (h *benchHost) Self() Self                      { return Self{} }

// countingSink is a replica's connection that keeps nothing: Push copies
// the bytes under a lock, as the server's connection does, and counts them.
type countingSink struct {
	mu   sync.Mutex
	mail []byte
	n    atomic.Int64
}

func (s *countingSink) Push(b []byte) {
	s.mu.Lock()
	s.mail = append(s.mail[:0], b...)
	s.mu.Unlock()
	s.n.Add(int64(len(b)))
}

func (s *countingSink) Kill()              {}
func (s *countingSink) Unsent() int64      { return 0 }
func (s *countingSink) Limit() OutputLimit { return OutputLimit{} }

// BenchmarkPrimary is the primary's cost per request of the load with 0, 1
// and 2 replicas attached: the engine's work, the journal's records, the
// stream, and each replica's sender taking its bytes to its connection.
// cpu-ns/op counts every goroutine (the senders too); the difference from
// replicas=0 is what replication costs per request.
//
//	go test ./replication -run '^$' -bench Primary -cpu 1 -count 5
func BenchmarkPrimary(b *testing.B) {
	for _, n := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			ld := newBenchLoad(b)
			m := New(ld.eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
			defer m.Close()
			sinks := make([]*countingSink, n)
			for i := range sinks {
				sinks[i] = &countingSink{}
				m.Attach(sinks[i], "127.0.0.1", 6380+i, "?", 0)
			}
			ld.warm()
			m.Publish()
			from := m.Stream().Offset()
			for _, s := range sinks { // the snapshot and the warm-up are sent
				for s.n.Load() < from {
					time.Sleep(time.Millisecond)
				}
			}
			base := make([]int64, n)
			for i, s := range sinks {
				base[i] = s.n.Load()
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			for i := 0; i < b.N; i++ {
				ld.request()
				if i%benchRound == benchRound-1 {
					m.Publish()
				}
			}
			m.Publish()
			sent := m.Stream().Offset() - from
			for i, s := range sinks {
				for s.n.Load()-base[i] < sent {
					time.Sleep(50 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(sent)/float64(b.N), "B/op-stream")
		})
	}
}

// benchStream is the stream of the load on a primary: its records, whole,
// and where the records of each request end.
type benchStream struct {
	buf     []byte
	ends    []int
	records int
	t0      int64 // the primary's clock when it began
}

// recordLoad runs requests of the load after a warm-up and returns the
// stream they made.
func recordLoad(tb testing.TB, requests int) benchStream {
	ld := newBenchLoad(tb)
	ld.warm()
	s := NewStream(1 << 20)
	r, from := s.Tail(true)
	ld.eng.SetJournal(s)
	st := benchStream{t0: ld.now}
	for i := 0; i < requests; i++ {
		ld.request()
		st.ends = append(st.ends, int(s.Offset()-from))
	}
	var err error
	if st.buf, err = r.Next(nil, int(s.Offset()-from)); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(&cyclicReader{st: &st, total: int64(len(st.buf))})
	var raw []byte
	var args [][]byte
	for off := 0; off < len(st.buf); st.records++ {
		if args, raw, err = persistence.ReadRecord(br, raw[:0], args[:0]); err != nil {
			tb.Fatal(err)
		}
		off += len(raw)
	}
	return st
}

// cyclicReader reads a stream's records over and over, up to total bytes,
// at most 64 KiB a read, as a socket under load delivers them.
type cyclicReader struct {
	st    *benchStream
	off   int64
	total int64
}

func (r *cyclicReader) Read(p []byte) (int, error) {
	if r.off >= r.total {
		return 0, io.EOF
	}
	i := int(r.off % int64(len(r.st.buf)))
	n := copy(p[:min(len(p), 64<<10, int(r.total-r.off))], r.st.buf[i:])
	r.off += int64(n)
	return n, nil
}

// BenchmarkReplicaApply is a replica's cost per request of the load: what
// it takes to read the records the request and its expiry made from the
// connection's buffer, apply them to the keyspace, and keep them in the
// replica's own stream (link.apply). Records are applied again when the
// stream comes round, which changes nothing (doc.go).
//
//	go test ./replication -run '^$' -bench ReplicaApply -cpu 1 -count 5
func BenchmarkReplicaApply(b *testing.B) {
	st := recordLoad(b, 200_000)
	eng := engine.New(clock.NewFake(st.t0), 0)
	m := New(eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	m.stream.Activate()
	l := newLink(m, "127.0.0.1", 6379)
	warm := &cyclicReader{st: &st, total: int64(len(st.buf))}
	l.apply(bufio.NewReaderSize(warm, 256<<10), func() {})
	n := len(st.ends)
	total := int64(b.N/n)*int64(len(st.buf)) + int64(st.endOf(b.N%n))
	rd := bufio.NewReaderSize(&cyclicReader{st: &st, total: total}, 256<<10)
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	if err := l.apply(rd, func() {}); err == nil {
		b.Fatal("apply returned no error at the end of its input")
	}
	b.StopTimer()
	b.ReportMetric(float64(st.records)/float64(n), "records/op")
	b.ReportMetric(float64(len(st.buf))/float64(n), "B/op-stream")
}

// endOf is where the records of the first k requests end.
func (st *benchStream) endOf(k int) int {
	if k == 0 {
		return 0
	}
	return st.ends[k-1]
}

// TestStreamBytesPerWrite: the stream of bench/replication.sh's load
// (CL.THROTTLE on 14-byte keys, and active expiry's deletions) takes
// fewer bytes than Redis's stream of the same load, INCR for each request
// ("*2\r\n$4\r\nINCR\r\n$14\r\n" key "\r\n", 35 bytes) and DEL for each key
// that expires (34). BenchmarkPrimary reports the figure as B/op-stream.
func TestStreamBytesPerWrite(t *testing.T) {
	const requests = 100_000
	st := recordLoad(t, requests)
	drops := 0
	var args [][]byte
	for b := st.buf; len(b) > 0; {
		var n int
		var err error
		if args, n, err = persistence.ParseRecord(b, args[:0]); err != nil || n == 0 {
			t.Fatalf("the stream does not parse: %v", err)
		}
		if args[0][0] == persistence.TagDrop {
			drops += len(args) - 1
		}
		b = b[n:]
	}
	const key = "k:000000000000"
	incr, del := len(persistence.AppendCommand(nil, "INCR", key)), len(persistence.AppendCommand(nil, "DEL", key))
	redis := incr*requests + del*drops
	t.Logf("%.1f bytes a request, %.2f keys expired a request; Redis's stream of the load: %.1f bytes a request (INCR alone: %d)",
		float64(len(st.buf))/requests, float64(drops)/requests, float64(redis)/requests, incr)
	if len(st.buf) >= redis {
		t.Errorf("%d bytes, want fewer than Redis's %d", len(st.buf), redis)
	}
}
