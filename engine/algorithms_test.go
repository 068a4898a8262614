package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

// TestAdaptersKeepStateInEntry checks where each algorithm's state lives:
// in A and B (no allocation per request) unless it cannot fit.
func TestAdaptersKeepStateInEntry(t *testing.T) {
	t.Parallel()
	tb, _ := NewTokenBucket(10, 1, int64(time.Second))
	sw, _ := NewSlidingWindow(10, int64(time.Second), 1)
	sw4, _ := NewSlidingWindow(10, int64(time.Second), 4)
	big, _ := NewSlidingWindow(1<<40, int64(time.Second), 1)
	cases := []struct {
		name    string
		apply   func(Entry) (Entry, error)
		wantExt bool
	}{
		{"token bucket", func(e Entry) (Entry, error) { n, _, _, err := tb.Apply(e, t0, 1); return n, err }, false},
		{"sliding window", func(e Entry) (Entry, error) { n, _, _, err := sw.Apply(e, t0, 1); return n, err }, false},
		{"sliding window, precision 4", func(e Entry) (Entry, error) { n, _, _, err := sw4.Apply(e, t0, 1); return n, err }, true},
		{"sliding window, counts past 2^32", func(e Entry) (Entry, error) { n, _, _, err := big.Apply(e, t0, 1<<33); return n, err }, true},
	}
	for _, c := range cases {
		ent, err := c.apply(Entry{})
		if err != nil {
			t.Fatal(err)
		}
		if (ent.Ext != nil) != c.wantExt {
			t.Errorf("%s: Ext = %v, want Ext: %v", c.name, ent.Ext, c.wantExt)
		}
	}
	// A packed sliding window whose counts outgrow 32 bits moves to Ext
	// without losing them.
	ent, _, _, _ := big.Apply(Entry{}, t0, 5)
	ent, _, _, _ = big.Apply(ent, t0, 1<<33)
	if ent.Ext == nil {
		t.Fatal("counts past 2^32 stayed packed")
	}
	if _, r, _, _ := big.Apply(ent, t0, 0); r.Remaining != 1<<40-5-1<<33 {
		t.Errorf("remaining %d after moving to Ext, want %d", r.Remaining, int64(1<<40-5-1<<33))
	}
}

// BenchmarkLimit is one request through engine.Limit per algorithm: the
// shard lock, the entry, the algorithm and the reply, as a command runs it
// (less the protocol). 1000 keys, each asked 100 times a second against
// limits of 1000 a second: live keys, admitted requests, the steady state.
//
// The _rand100k cases ask 100k keys in random order, from a keyspace filled
// before the timing: what finding a key costs once the keys outgrow the
// caches. TB.TAKE, SW.INCR and SL.INCR_1000per10s ask each key about once a
// second against limits of 1000 per 10 s (the sliding log's keys hold up
// to ten stamps). CL.THROTTLE and SL.INCR are the
// wire's load (bench/compare.sh: 100 per minute, CL.THROTTLE with a burst of
// 99): each key asked every 2.4 s, the keyspace warmed until every sliding
// log holds its steady 25 stamps, then timed in that steady state.
func BenchmarkLimit(b *testing.B) {
	sec := int64(time.Second)
	tb, _ := NewTokenBucket(1e9, 1, sec) // never full again during the run: the key stays
	lq, _ := NewLeakyQueue(1e9, 1, sec)
	fw, _ := NewFixedWindow(1000, sec)
	sw, _ := NewSlidingWindow(1000, sec, 1)
	sw10, _ := NewSlidingWindow(1000, sec, 10)
	sl, _ := NewSlidingLog(1000, sec)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
	}
	bench := func(name string, run func(e *Engine, key []byte, now int64) error) {
		b.Run(name, func(b *testing.B) {
			e := New(testClock(), 0)
			now := t0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				now += 10 * int64(time.Microsecond)
				if err := run(e, keys[i%len(keys)], now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	bench("TB.TAKE", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, tb, 1); return err })
	bench("LB.QUEUE", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, lq, 1); return err })
	bench("FW.INCR", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, fw, 1); return err })
	bench("SW.INCR", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, sw, 1); return err })
	bench("SW.INCR_PRECISION_10", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, sw10, 1); return err })
	bench("SL.INCR", func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, sl, 1); return err })

	many := make([][]byte, 100_000)
	for i := range many {
		many[i] = fmt.Appendf(nil, "user:%d", i)
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(len(many))
	// benchRand asks the keys of many in a fixed random order, one every
	// step ns, after warm rounds over all of them. The keyspace is built
	// once per case and carries on from one b.N to the next.
	benchRand := func(name string, step int64, warm int, run func(e *Engine, key []byte, now int64) error) {
		var e *Engine
		now := t0
		b.Run(name, func(b *testing.B) {
			if e == nil {
				e = New(testClock(), 0)
				for range warm {
					for _, i := range order {
						now += step
						if err := run(e, many[i], now); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			for i := 0; i < b.N; i++ {
				now += step
				if err := run(e, many[order[i%len(order)]], now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	us := int64(time.Microsecond)
	sw10s, _ := NewSlidingWindow(1000, 10*sec, 10)
	sl10s, _ := NewSlidingLog(1000, 10*sec)
	cell, _ := gcra.CellLimit(99, 100, 60)
	slMin, _ := NewSlidingLog(100, 60*sec)
	benchRand("TB.TAKE_rand100k", 10*us, 1, func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, tb, 1); return err })
	benchRand("SW.INCR_PRECISION_10_rand100k", 10*us, 1, func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, sw10s, 1); return err })
	benchRand("SL.INCR_1000per10s_rand100k", 10*us, 1, func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, sl10s, 1); return err })
	benchRand("CL.THROTTLE_rand100k", 24*us, 25, func(e *Engine, k []byte, now int64) error {
		_, err := Limit(e, k, now, CellLimiter{cell}, 1)
		return err
	})
	benchRand("SL.INCR_rand100k", 24*us, 25, func(e *Engine, k []byte, now int64) error { _, err := Limit(e, k, now, slMin, 1); return err })
}

// BenchmarkLimitPaired is SL.INCR_rand100k and CL.THROTTLE_rand100k in one
// keyspace, as one server holds both in the wire comparison, in
// alternating runs of 1000 requests each: the neighbours' load then weighs
// on both alike, and the ratio of the two (SL/CL, the time of an SL.INCR
// over a CL.THROTTLE's) is steadier than that of two separate runs.
//
// Each key is hit every 2.4 s. With a window of 60 s its log holds a
// steady 25 stamps and every request drops the oldest; with one of an hour
// (a limit per hour, most of whose requests drop nothing) the logs grow
// from 25 stamps, as in the wire benchmark's run of a few seconds.
func BenchmarkLimitPaired(b *testing.B) {
	for _, w := range []time.Duration{time.Minute, time.Hour} {
		b.Run("window="+w.String(), func(b *testing.B) { benchmarkLimitPaired(b, int64(w)) })
	}
}

func benchmarkLimitPaired(b *testing.B, window int64) {
	us := int64(time.Microsecond)
	cell, _ := gcra.CellLimit(99, 100, 60)
	cl := CellLimiter{cell}
	sl, _ := NewSlidingLog(1000, window)
	const keys, run = 100_000, 1000
	cks, sks := make([][]byte, keys), make([][]byte, keys)
	for i := range keys {
		cks[i], sks[i] = fmt.Appendf(nil, "k:%d", i), fmt.Appendf(nil, "s:%d", i)
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(keys)
	e := New(testClock(), 0)
	now, next := t0, 0
	step := func(n int, ks [][]byte, apply func(k []byte) error) time.Duration {
		start := time.Now()
		for range n {
			now += 12 * us // each key every 2.4 s, a request of each kind per 24 µs
			if err := apply(ks[order[next%keys]]); err != nil {
				b.Fatal(err)
			}
			next++
		}
		return time.Since(start)
	}
	doCL := func(k []byte) error { _, err := Limit(e, k, now, cl, 1); return err }
	doSL := func(k []byte) error { _, err := Limit(e, k, now, sl, 1); return err }
	for range 25 { // until the logs hold their steady 25 stamps
		for i := 0; i < keys; i += run {
			step(run, cks, doCL)
			next -= run
			step(run, sks, doSL)
		}
	}
	b.ResetTimer()
	var tCL, tSL time.Duration
	for done := 0; done < b.N; done += run {
		n := min(run, b.N-done)
		tCL += step(n, cks, doCL)
		next -= n
		tSL += step(n, sks, doSL)
	}
	b.ReportMetric(float64(tCL.Nanoseconds())/float64(b.N), "CL-ns/op")
	b.ReportMetric(float64(tSL.Nanoseconds())/float64(b.N), "SL-ns/op")
	b.ReportMetric(float64(tSL)/float64(tCL), "SL/CL")
}
