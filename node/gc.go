package node

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Go's collector starts a cycle when the heap has grown by GOGC percent
// (100) of what the last cycle found live. A keyspace of small sorted
// sets or hashes is a few hundred thousand objects to mark, and on a
// server given one core a cycle holds up the commands in flight for
// milliseconds (GODEBUG=gctrace=1: 12-18 ms of marking for 100k sliding
// logs); a scripted limiter makes garbage fast enough for that to happen
// several times a second, and it shows in the p99 (bench/scripts.sh).
// So while garbage comes fast the heap may grow by up to gcSpan of it
// between cycles, at most gc-headroom bytes: a small heap under scripts
// collects about every gcSpan, a heap larger than gc-headroom or one that
// makes little garbage (serving the limiters' commands makes next to
// none) is collected as Go's default collects it. The cost is up to
// gc-headroom more resident memory, only while garbage is being made. A
// GOGC in the environment is the operator's own choice, and is left
// alone.

// gcSpan is the time the heap may take to grow between two cycles.
const gcSpan = 2 * time.Second

// gcPercent is the GOGC that lets a heap of live bytes grow by gcSpan of
// garbage made at rate bytes a second, at most headroom: Go's 100 when
// that is no more than the heap itself.
func gcPercent(live, rate, headroom uint64) int {
	growth := min(rate*uint64(gcSpan/time.Second), headroom)
	if live == 0 || growth <= live {
		return 100
	}
	return int(min(growth*100/live, 100_000))
}

// gcPacer keeps the collector's GOGC at gcPercent.
type gcPacer struct {
	read    func() (live, allocated uint64) // the heap the last cycle found live, and the bytes allocated so far
	set     func(int) int                   // debug.SetGCPercent
	last    uint64                          // allocated at the last pace
	percent int                             // what it set last; 0: nothing yet
}

func newGCPacer() *gcPacer {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (uint64, uint64) {
		metrics.Read(sample)
		var v [2]uint64
		for i, s := range sample {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = s.Value.Uint64()
			}
		}
		return v[0], v[1]
	}
	return &gcPacer{read: read, set: debug.SetGCPercent}
}

// pace, called once a second, sets GOGC for headroom when that moves it
// by more than a tenth.
func (p *gcPacer) pace(headroom int64) {
	live, allocated := p.read()
	rate := allocated - min(p.last, allocated)
	p.last = allocated
	want := gcPercent(live, rate, uint64(max(headroom, 0)))
	if p.percent != 0 && want*10 > p.percent*9 && want*10 < p.percent*11 {
		return
	}
	p.percent = want
	p.set(want)
}

// paceGC runs the pacer every second, unless GOGC is set.
func (n *Node) paceGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	p := newGCPacer()
	_, p.last = p.read() // the rate counts from here
	n.every(time.Second, func() { p.pace(n.Server.Config().GCHeadroom) })
}
