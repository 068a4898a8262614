package region

import (
	"fmt"
	"io"
	"log"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// benchStore is a store with a local and a global policy of each window
// algorithm and gcra, its global ones counted with two peer regions whose
// counts are heard for every key.
func benchStore(b *testing.B, keys int) (*policy.Store, *engine.Engine, *clock.Fake, *Region) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := policy.NewStore(log.New(io.Discard, "", 0))
	for _, alg := range []policy.Algorithm{policy.FixedWindow, policy.SlidingWindow, policy.GCRA} {
		for _, g := range []bool{false, true} {
			p := policy.Policy{Name: fmt.Sprintf("%s-%v", alg, g), Algorithm: alg, Limit: 1 << 40, Period: time.Hour, Global: g}
			if err := s.Set(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	r := New(Options{Name: "eu", Peers: []Peer{{"us", "127.0.0.1:1"}, {"ap", "127.0.0.1:2"}}, Clock: clk, Logger: log.New(io.Discard, "", 0),
		Interval: func() time.Duration { return 50 * time.Millisecond }, Timeout: func() time.Duration { return time.Second },
		OnPartition: func() string { return KeepLast }}, s)
	s.SetPeers(r)
	e := engine.New(clk, 0)
	return s, e, clk, r
}

// BenchmarkHit compares a global policy's RL.HIT with a local one's on the
// same store (bench/global.sh prints the ratio): the admission is local,
// and the global one adds the peers' heard counts and the slot to send.
func BenchmarkHit(b *testing.B) {
	for _, alg := range []policy.Algorithm{policy.FixedWindow, policy.SlidingWindow, policy.GCRA} {
		for _, g := range []bool{false, true} {
			scope := "local"
			if g {
				scope = "global"
			}
			b.Run(fmt.Sprintf("%s/%s", alg, scope), func(b *testing.B) {
				s, e, clk, r := benchStore(b, 1000)
				name := []byte(fmt.Sprintf("%s-%v", alg, g))
				keys := make([][]byte, 1000)
				for i := range keys {
					keys[i] = []byte("user:" + strconv.Itoa(i))
					s.Hit(e, name, keys[i], clk.Now(), 1)
				}
				go func() { // a sender draining the slots as Run does
					for range time.Tick(50 * time.Millisecond) {
						r.tab.TakeDirty(nil)
					}
				}()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.Hit(e, name, keys[i%len(keys)], clk.Now(), 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSyncBytes measures the bytes one region sends one peer per
// interval when every one of keys keys changed in it, and reports them per
// second at the default 50 ms interval (sync-bytes/s).
func BenchmarkSyncBytes(b *testing.B) {
	const keys = 100000
	s, e, clk, r := benchStore(b, keys)
	name := []byte(fmt.Sprintf("%s-%v", policy.SlidingWindow, true))
	for i := 0; i < keys; i++ {
		s.Hit(e, name, []byte("user:"+strconv.Itoa(i)), clk.Now(), 1)
	}
	var ups []policy.Update
	var wire []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ups = r.tab.All(ups[:0])
		wire = appendPush(wire[:0], "eu", clk.Now(), ups)
	}
	b.ReportMetric(float64(len(wire)), "bytes/batch")
	b.ReportMetric(float64(len(wire))*20, "sync-bytes/s")
}
