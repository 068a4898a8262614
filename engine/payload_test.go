package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestUsedBytesCountsPayloads: UsedBytes, which maxmemory compares, is at
// every step the sum of what MEMORY USAGE reports for each live key,
// payloads included (a sliding log's stamps in its entry or on the heap,
// a string's bytes, a sliding window's counts), through growth, shrinking,
// kind changes, deletes and expiry, and 0 once every key is gone.
func TestUsedBytesCountsPayloads(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	r := rand.New(rand.NewPCG(1, 2))
	bigLog, _ := NewSlidingLog(1000, int64(time.Hour))
	smallLog, _ := NewSlidingLog(20, int64(time.Second))
	precise, _ := NewSlidingWindow(100, int64(time.Minute), 10)
	bucket, _ := NewTokenBucket(5, 1, int64(time.Second))
	now := t0
	sum := func() int64 {
		var n int64
		for i := 0; i < e.Shards(); i++ {
			var keys []string
			e.RangeShard(i, now, func(k string, _ *Entry) bool { keys = append(keys, k); return true })
			for _, k := range keys {
				b, ok := e.KeyBytes([]byte(k), now)
				if ok {
					n += b
				}
			}
		}
		return n
	}
	for step := 0; step < 3000; step++ {
		key := []byte(fmt.Sprint("k", r.IntN(40)))
		op := r.IntN(9)
		switch op {
		case 0, 1:
			Limit(e, key, now, bigLog, 1+int64(r.IntN(3))) // grows past the entry's words onto the heap
		case 2:
			Limit(e, key, now, smallLog, 1)
		case 3:
			Limit(e, key, now, precise, 1)
		case 4:
			e.SetString(key, now, []byte(strings.Repeat("v", r.IntN(300))), SetOptions{}, nil)
		case 5:
			e.Delete(key, now)
		case 6:
			Limit(e, key, now, bucket, 1)
		case 8: // several keys at once, one of them twice (DoMulti)
			other := []byte(fmt.Sprint("k", r.IntN(40)))
			e.SetStrings([][]byte{key, other, key}, [][]byte{[]byte(strings.Repeat("a", r.IntN(200))), []byte("b"), []byte(strings.Repeat("c", r.IntN(200)))}, now, false)
		case 7:
			now += int64(time.Duration(r.IntN(2000)) * time.Millisecond)
			e.ExpireCycle(now, 64)
		}
		// Keys of another kind answer WRONGTYPE and stay as they are.
		e.Len() // a read locks every shard: the counts are settled
		if got, want := e.UsedBytes(), sum(); got != want && !expiredLeft(e, now) {
			b, _ := e.KeyBytes(key, now)
			t.Fatalf("step %d (op %d on %s, now %d bytes): UsedBytes %d, MEMORY USAGE of the keys sums to %d", step, op, key, b, got, want)
		}
	}
	e.Flush()
	if got := e.UsedBytes(); got != 0 {
		t.Fatalf("UsedBytes %d after Flush", got)
	}
}

// expiredLeft reports whether a key is stored that is expired at now and
// not yet reaped: it still counts in UsedBytes but MEMORY USAGE skips it.
func expiredLeft(e *Engine, now int64) bool {
	left := false
	for i := 0; i < e.Shards(); i++ {
		e.RangeShard(i, 0, func(_ string, ent *Entry) bool {
			if !ent.Live(now) {
				left = true
			}
			return !left
		})
	}
	return left
}
