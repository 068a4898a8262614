package twins

import (
	"testing"
	"time"

	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
)

// BenchmarkTwins is the twins of command/scripts' BenchmarkNativeScripts with no
// command layer: each twin on a Host that is only a keyspace on a fake
// clock, on 100k random keys, with the arguments bench/scripts.sh gives.
// The difference between the two is what the command layer adds (the
// table, the gates, the script cache, the batch).
//
//	go test -run NONE -bench Twins -benchmem -count 5 -cpu 1 ./scripting/twins/
//
// rate-limiter-flexible's text comes from tests/clients/node/node_modules
// (npm ci there); without it that case is skipped.
func BenchmarkTwins(b *testing.B) {
	for _, load := range libscripts.NativeLoads() {
		if load.Body == nil { // a command, not a script
			continue
		}
		b.Run(load.Name, func(b *testing.B) {
			tw := New().Get(scripting.SHA1([]byte(load.Body(b))))
			if tw == nil {
				b.Fatalf("%s is not recognised", load.Name)
			}
			h, w := newFakeHost(), resp.NewWriter(nil)
			key := []byte(load.Name + ":000000000000")
			keys, argv := [][]byte{key}, bytesOf(load.Args...)
			digits := key[len(key)-12:]
			rng := uint64(1)
			run := func(n int) {
				for i := 0; i < n; i++ {
					rng ^= rng << 13 // xorshift64
					rng ^= rng >> 7
					rng ^= rng << 17
					k := rng % 100_000
					for j := len(digits) - 1; j >= len(digits)-5; j-- {
						digits[j] = byte('0' + k%10)
						k /= 10
					}
					if !tw.Run(h, w, keys, argv) {
						b.Fatalf("%s declined", load.Name)
					}
					if i%16 == 15 {
						w.Reset()
						h.clk.Advance(64 * time.Microsecond) // 4 µs a command, as at 250k a second
					}
				}
			}
			run(300_000) // every key present
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			run(b.N)
		})
	}
}
