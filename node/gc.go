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
// gc-headroom lets the heap grow by at least that many bytes between
// cycles: a small heap, the usual one, collects as often as a heap
// gc-headroom large would, and a heap larger than gc-headroom is
// collected as Go's default collects it. The cost is up to gc-headroom
// more resident memory while garbage is being made. A GOGC in the
// environment is the operator's own choice, and is left alone.

// gcPercent is the GOGC that lets a heap of live bytes grow by at least
// headroom: Go's 100 when that is enough, or headroom is 0.
func gcPercent(live, headroom uint64) int {
	if headroom == 0 || live == 0 || headroom <= live {
		return 100
	}
	return int(min(headroom*100/live, 100_000))
}

// gcPacer keeps the collector's GOGC at gcPercent of the heap the last
// cycle found live.
type gcPacer struct {
	live    func() uint64 // the heap the last cycle found live
	set     func(int) int // debug.SetGCPercent
	percent int           // what it set last; 0: nothing yet
}

func newGCPacer() *gcPacer {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	return &gcPacer{live: live, set: debug.SetGCPercent}
}

// pace sets GOGC for headroom, when that moves it by more than a tenth.
func (p *gcPacer) pace(headroom int64) {
	want := gcPercent(p.live(), uint64(max(headroom, 0)))
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
	n.every(time.Second, func() { p.pace(n.Server.Config().GCHeadroom) })
}
