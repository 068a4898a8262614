package command

import (
	"fmt"
	"io"
	"log"
	"syscall"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// BenchmarkDispatchThrottle is one CL.THROTTLE through the command table,
// gates, handler, limiter, reply and the statistics kept after it.
func BenchmarkDispatchThrottle(b *testing.B) {
	clk := clock.NewFake(1_700_000_000e9)
	s := New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0))
	c := s.NewLocalClient()
	cmds := make([][][]byte, 1000)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("CL.THROTTLE"), []byte(fmt.Sprint("user:", i)), []byte("15"), []byte("30"), []byte("60")}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		s.handle(c.Client, cmds[i%len(cmds)])
		if i%16 == 15 { // end a batch as the transport does
			c.endBatch()
			c.w.Reset()
		}
		if i%len(cmds) == len(cmds)-1 {
			clk.Advance(1e9) // half a token per key per round: keys stay, half are denied
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
