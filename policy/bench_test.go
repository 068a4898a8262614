package policy

import (
	"bytes"
	"log"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// BenchmarkHit is RL.HIT's work below the protocol: the policy lookup, the
// derived key and the algorithm under the shard lock, per algorithm.
func BenchmarkHit(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(string(alg), func(b *testing.B) {
			// A limit no benchmark reaches, so every key stays live and
			// admitted: the steady state of a busy server.
			s := NewStore(log.New(&bytes.Buffer{}, "", 0))
			if err := s.Set(Policy{Name: "api", Algorithm: alg, Limit: 1_000_000, Period: time.Hour}); err != nil {
				b.Fatal(err)
			}
			clk := clock.NewFake(t0)
			e := engine.New(clk, 0)
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = []byte("user:" + strconv.Itoa(i))
			}
			name := []byte("api")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Hit(e, name, keys[i&1023], clk.Now(), 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHitAll is RL.HITALL of two pairs on (usually) two shards.
func BenchmarkHitAll(b *testing.B) {
	s := NewStore(log.New(&bytes.Buffer{}, "", 0))
	s.Set(Policy{Name: "sec", Algorithm: GCRA, Limit: 1000, Period: time.Second})
	s.Set(Policy{Name: "day", Algorithm: FixedWindow, Limit: 1 << 40, Period: 24 * time.Hour})
	clk := clock.NewFake(t0)
	e := engine.New(clk, 0)
	pairs := []Pair{{[]byte("sec"), []byte("user:1")}, {[]byte("day"), []byte("user:1")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		clk.Advance(time.Microsecond)
		if _, _, err := s.HitAll(e, pairs, clk.Now(), 1); err != nil {
			b.Fatal(err)
		}
	}
}
