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
// So when collecting at GOGC 100 would cost more than gcBudget of a core, the heap may
// grow by up to gcSpan of garbage between cycles, at most gc-headroom
// bytes. A heap whose cycles are short (a small one: the rate limit
// service's gRPC garbage over a 1 MB heap, even at 30k requests a second)
// keeps Go's default, since a
// larger heap of cold memory only slowed it (bench/rls.sh, p99 at 2000
// req/s 0.8 -> 1.6 ms), and so does a heap larger than gc-headroom. The
// cost is up to gc-headroom more resident memory, only while collecting
// is expensive. A GOGC in the environment is the operator's own choice,
// and is left alone.

const (
	gcSpan    = 2 * time.Second // the time the heap may take to grow between two cycles
	gcBudget  = 0.01            // the share of a core above which collecting is expensive
	gcMinHeap = 4 << 20         // the least a heap grows by between cycles at GOGC 100 (Go's minimum heap)
	gcLong    = 0.002           // CPU seconds from which one cycle is long enough to hold up commands
	gcCalm    = 5               // the cheap seconds in a row that end an expensive spell
)

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

// gcReading is what the pacer reads each second.
type gcReading struct {
	live      uint64  // the heap the last cycle found live
	allocated uint64  // bytes allocated so far
	cycles    uint64  // cycles completed so far
	gcCPU     float64 // CPU seconds the collector has taken so far, its idle-time work left out
}

// gcPacer keeps the collector's GOGC at gcPercent while collecting is
// expensive, and at 100 otherwise.
type gcPacer struct {
	read      func() gcReading
	set       func(int) int // debug.SetGCPercent
	last      gcReading     // at the last pace
	perCycle  float64       // CPU seconds of the last cycles, each
	expensive bool          // collecting at GOGC 100 would cost more than gcBudget
	calm      int           // cheap seconds in a row while expensive
	percent   int           // what it set last; 0: nothing yet
}

func newGCPacer() *gcPacer {
	names := []string{"/gc/heap/live:bytes", "/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles",
		"/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/gc/mark/idle:cpu-seconds"}
	sample := make([]metrics.Sample, len(names))
	for i, n := range names {
		sample[i].Name = n
	}
	u := func(s metrics.Sample) uint64 {
		if s.Value.Kind() == metrics.KindUint64 {
			return s.Value.Uint64()
		}
		return 0
	}
	f := func(s metrics.Sample) float64 {
		if s.Value.Kind() == metrics.KindFloat64 {
			return s.Value.Float64()
		}
		return 0
	}
	read := func() gcReading {
		metrics.Read(sample)
		return gcReading{live: u(sample[0]), allocated: u(sample[1]), cycles: u(sample[2]), gcCPU: f(sample[3]) - f(sample[4])}
	}
	return &gcPacer{read: read, set: debug.SetGCPercent}
}

// pace, called once a second, sets GOGC for headroom when that moves it
// by more than a tenth. Collecting is judged by what it would cost at
// GOGC 100: a cycle each time the heap grows by the live heap (at least
// gcMinHeap), each costing what the last ones cost; expensive past
// gcBudget when a cycle is long (gcLong: short ones, however many, hold
// nothing up for long), cheap again after gcCalm seconds below half of
// either. An idle second (no cycle, less than gcMinHeap allocated)
// changes nothing. Both keep a load that pauses and comes back (a burst,
// a benchmark's rounds) from spending its first second collecting at
// GOGC 100 again: a second the load only partly filled looks cheap.
func (p *gcPacer) pace(headroom int64) {
	now := p.read()
	rate := now.allocated - min(p.last.allocated, now.allocated)
	n := now.cycles - min(p.last.cycles, now.cycles)
	if n > 0 {
		p.perCycle = max(now.gcCPU-p.last.gcCPU, 0) / float64(n)
	}
	p.last = now
	if n == 0 && rate < gcMinHeap {
		return // idle: the heap is not growing, and the next burst finds the room it had
	}
	atDefault := p.perCycle * float64(rate) / float64(max(now.live, gcMinHeap))
	switch {
	case atDefault > gcBudget && p.perCycle > gcLong:
		p.expensive, p.calm = true, 0
	case atDefault < gcBudget/2 || p.perCycle < gcLong/2:
		p.calm++
		p.expensive = p.expensive && p.calm < gcCalm
	}
	want := 100
	if p.expensive {
		// The busiest second of the spell sets the room: a second the
		// load only partly filled would shrink it for the next. The
		// room stays within headroom (a rate of headroom a second fills
		// it), which CONFIG SET may have lowered.
		room := uint64(max(headroom, 0))
		want = max(gcPercent(now.live, rate, room), min(p.percent, gcPercent(now.live, room, room)))
	}
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
	p.last = p.read() // the rates count from here
	n.every(time.Second, func() { p.pace(n.Config().GCHeadroom) })
}
