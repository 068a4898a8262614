// Package benchcpu adds a cpu-ns/op figure to Go benchmarks: the process's
// CPU time (user and system, GC included) per operation. On a machine
// shared with other work, wall-clock ns/op mostly measures the neighbours;
// CPU time much less so. Only benchmarks import it.
package benchcpu

import (
	"syscall"
	"testing"
)

// Report starts counting; call the function it returns when the timed loop
// ends: defer benchcpu.Report(b)() right after b.ResetTimer.
func Report(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
