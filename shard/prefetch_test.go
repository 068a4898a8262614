package shard

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestPrefetchChangesNothing: Prefetch on an empty table, on present and
// absent keys and with a shard held by another goroutine returns, and every
// key still reads what it held.
func TestPrefetchChangesNothing(t *testing.T) {
	t.Parallel()
	type value struct{ A int64 }
	tab := New[value](4)
	tab.Prefetch([]uint64{tab.Hash([]byte("nothing yet"))})
	var keys [][]byte
	for i := 0; i < 1000; i++ {
		k := fmt.Appendf(nil, "k%d", i)
		keys = append(keys, k)
		s := tab.Lock(k)
		s.Insert(k).A = int64(i)
		s.Unlock()
	}
	held := tab.Lock(keys[0]) // Prefetch skips it rather than wait
	var hs []uint64
	for i := 0; i < 2*PrefetchMax; i++ { // more than one call takes: the rest is ignored
		hs = append(hs, tab.Hash(keys[i]), tab.Hash(fmt.Appendf(nil, "absent%d", i)))
	}
	tab.Prefetch(hs)
	held.Unlock()
	for i, k := range keys {
		s := tab.Lock(k)
		v := s.Get(k)
		s.Unlock()
		if v == nil || v.A != int64(i) {
			t.Fatalf("%s: %v after Prefetch, want %d", k, v, i)
		}
	}
	if n := tab.Len(); n != len(keys) {
		t.Fatalf("%d keys after Prefetch, want %d", n, len(keys))
	}
}

// BenchmarkPrefetch is the cost of a lookup of a random key among 4
// million (far more than the cache holds), in batches of 16 as a
// pipelined client sends them: looked up one by one, and after one
// Prefetch of the batch.
//
//	go test ./shard -run '^$' -bench Prefetch -count 5
func BenchmarkPrefetch(b *testing.B) {
	tab, keys := filledTable(1 << 22)
	order := rand.Perm(len(keys))
	const batch = 16
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", prefetch), func(b *testing.B) {
			var sum int64
			var hs [batch]uint64
			for i := 0; i < b.N; i += batch {
				at := i & (len(order) - 1)
				if prefetch {
					for j := range hs {
						hs[j] = tab.Hash(keys[order[(at+j)&(len(order)-1)]])
					}
					sum += int64(tab.Prefetch(hs[:]))
				}
				for j := 0; j < batch; j++ {
					k := keys[order[(at+j)&(len(order)-1)]]
					s := tab.Lock(k)
					sum += s.Get(k).A
					s.Unlock()
				}
			}
			if sum == -1 {
				b.Log(sum)
			}
		})
	}
}
