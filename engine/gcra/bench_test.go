package gcra

import (
	"testing"

	"github.com/limitdb/limitdb/internal/benchcpu"
)

// The arithmetic of one request, without a keyspace: what CL.THROTTLE and
// GCRA cost once the entry is in hand. Each allocates nothing.

func BenchmarkCellLimit(b *testing.B) {
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		if _, err := CellLimit(99, 100, 60); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThrottle is CL.THROTTLE's step: build the limit from the
// arguments (as every call does) and decide, on a key that is sometimes
// limited.
func BenchmarkThrottle(b *testing.B) {
	now := int64(1_700_000_000) * 1e9
	var tat int64
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		l, _ := CellLimit(99, 100, 60)
		_, next, write, err := Throttle(tat, now+int64(i)*1e6, l, 1)
		if err != nil {
			b.Fatal(err)
		}
		if write {
			tat = next
		}
	}
}

func BenchmarkRedisGCRA(b *testing.B) {
	now := int64(1_700_000_000) * 1e6
	var tat int64
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		l, _ := RedisLimit(99, 100, 60)
		_, next, write, err := RedisGCRA(tat, now+int64(i)*1e3, l, 1)
		if err != nil {
			b.Fatal(err)
		}
		if write {
			tat = next
		}
	}
}
