package command_test

import (
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/internal/libscripts"
)

// BenchmarkNativeScripts is bench/scripts.sh's load in-process: EVALSHA of
// each script limitdb runs natively, by the text its library sends and with
// the arguments scripts.sh gives, on 100k random keys, through the command
// table in batches of 16 as a pipelined connection runs them. CL.THROTTLE
// on the same keys is the ceiling: one command doing one limiter's work.
//
//	go test -run NONE -bench NativeScripts -benchmem -count 5 -cpu 1 ./command/
//
// rate-limiter-flexible's text comes from tests/clients/node/node_modules
// (npm ci there); without it that case is skipped.
func BenchmarkNativeScripts(b *testing.B) {
	for _, load := range libscripts.NativeLoads() {
		b.Run(load.Name, func(b *testing.B) {
			clk := clock.NewFake(1_700_000_000e9)
			s := newServer(config.Default(), engine.New(clk, 0))
			defer s.Close()
			c := s.NewLocalClient()
			// key is redis-benchmark's __rand_int__: twelve digits, written
			// in place for each command.
			key := []byte(load.Name + ":000000000000")
			args := [][]byte{[]byte("CL.THROTTLE"), key}
			if load.Body != nil {
				sha, err := s.LoadScript([]byte(load.Body(b)))
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := s.NativeRuns(sha); !ok {
					b.Fatalf("%s is not recognised", load.Name)
				}
				args = [][]byte{[]byte("EVALSHA"), []byte(sha), []byte("1"), key}
			}
			for _, a := range load.Args {
				args = append(args, []byte(a))
			}
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
					failed := c.Run(args)
					if i%16 == 15 {
						if failed {
							b.Fatalf("%s refused: %q", load.Name, c.Replies())
						}
						c.EndBatch()
						clk.Advance(64_000) // 4 µs a command, as at 250k a second
					}
				}
			}
			run(300_000) // every key present, as after a round of scripts.sh
			if load.Body != nil {
				if n, _ := s.NativeRuns(string(args[1])); n != 300_000 {
					b.Fatalf("%s ran natively %d times of 300000", load.Name, n)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			run(b.N)
		})
	}
}
