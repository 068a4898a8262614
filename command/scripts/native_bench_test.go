package scripts

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/resp"
)

// BenchmarkNativeScripts is bench/scripts.sh's load in-process: EVALSHA of
// each script limitdb runs natively, by the text its library sends and with
// the arguments scripts.sh gives, on 100k random keys, through the command
// table in batches of 16 as a pipelined connection runs them. CL.THROTTLE
// on the same keys is the ceiling: one command doing one limiter's work.
//
//	go test -run NONE -bench NativeScripts -benchmem -count 5 -cpu 1 ./command/scripts/
//
// rate-limiter-flexible's text comes from tests/clients/node/node_modules
// (npm ci there); without it that case is skipped.
func BenchmarkNativeScripts(b *testing.B) {
	for _, load := range libscripts.NativeLoads() {
		b.Run(load.Name, func(b *testing.B) {
			clk := clock.NewFake(1_700_000_000e9)
			s, f := newServerWith(clk)
			defer s.Close()
			c := s.NewLocalClient()
			const batch = 16
			// Each command's key is redis-benchmark's __rand_int__: twelve
			// digits, written in place before each batch.
			cmds := make([][][]byte, batch)
			for i := range cmds {
				key := []byte(load.Name + ":000000000000")
				args := [][]byte{[]byte("CL.THROTTLE"), key}
				if load.Body != nil {
					script, err := f.scripts.Load([]byte(load.Body(b)))
					if err != nil {
						b.Fatal(err)
					}
					if f.natives.Get(script.SHA) == nil {
						b.Fatalf("%s is not recognised", load.Name)
					}
					args = [][]byte{[]byte("EVALSHA"), []byte(script.SHA), []byte("1"), key}
				}
				for _, a := range load.Args {
					args = append(args, []byte(a))
				}
				cmds[i] = args
			}
			rng := uint64(1)
			// run runs n commands; checked, it reads every reply.
			run := func(n int, checked bool) {
				for i := 0; i < n; i += batch {
					m := min(batch, n-i)
					for _, args := range cmds[:m] {
						digits := args[len(args)-len(load.Args)-1]
						digits = digits[len(digits)-12:]
						rng ^= rng << 13 // xorshift64
						rng ^= rng >> 7
						rng ^= rng << 17
						k := rng % 100_000
						for j := len(digits) - 1; j >= len(digits)-5; j-- {
							digits[j] = byte('0' + k%10)
							k /= 10
						}
					}
					if out := c.Pipeline(cmds[:m]); checked {
						for r := bufio.NewReader(bytes.NewReader(out)); ; {
							reply, err := resp.ReadReply(r)
							if err == io.EOF {
								break
							}
							if err != nil || reply.IsError() {
								b.Fatalf("%s refused: %v %q", load.Name, err, out)
							}
						}
					}
					clk.Advance(64_000) // 4 µs a command, as at 250k a second
				}
			}
			run(300_000, true) // every key present, as after a round of scripts.sh
			if load.Body != nil {
				if n := f.natives.Get(string(cmds[0][1])).Runs(); n != 300_000 {
					b.Fatalf("%s ran natively %d times of 300000", load.Name, n)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			run(b.N, false)
		})
	}
}

// newServerWith is newServer with the rate-limit commands beside the
// family's, for the ceiling the benchmarks compare the scripts with.
func newServerWith(clk clock.Clock) (*command.Server, *Family) {
	f := New()
	return command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), keyspace.New(), f, ratelimit.New()), f
}
