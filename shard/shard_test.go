package shard

import (
	"fmt"
	"hash/maphash"
	"sync"
	"testing"
)

func TestInsertGetDelete(t *testing.T) {
	tab := New[int](4)
	if tab.Count() != 4 {
		t.Fatalf("count = %d", tab.Count())
	}
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		*s.Insert(k) = i
		s.Unlock()
	}
	if n := tab.Len(); n != 1000 {
		t.Fatalf("len = %d, want 1000", n)
	}
	for i := 0; i < 1000; i += 2 {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		if !s.Delete(k) {
			t.Errorf("delete %s: not found", k)
		}
		s.Unlock()
	}
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		v := s.Get(k)
		switch {
		case i%2 == 0 && v != nil:
			t.Errorf("%s: still present", k)
		case i%2 == 1 && (v == nil || *v != i):
			t.Errorf("%s: got %v, want %d", k, v, i)
		}
		s.Unlock()
	}
	// Freed slots are reused and come back zeroed.
	k := []byte("fresh")
	s := tab.Lock(k)
	if v := s.Insert(k); *v != 0 {
		t.Errorf("reused slot holds %d, want 0", *v)
	}
	s.Unlock()
}

func TestLockKeysAscendingAndDistinct(t *testing.T) {
	tab := New[int](8)
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a"), []byte("zz"), []byte("q")}
	idx := tab.LockKeys(keys)
	for i := 1; i < len(idx); i++ {
		if idx[i] <= idx[i-1] {
			t.Fatalf("indexes not strictly ascending: %v", idx)
		}
	}
	tab.UnlockIndexes(idx)
	// Everything is unlocked again.
	for i := 0; i < tab.Count(); i++ {
		if !tab.Shard(i).mu.TryLock() {
			t.Fatalf("shard %d left locked", i)
		}
		tab.Shard(i).Unlock()
	}
}

func TestConcurrentCounters(t *testing.T) {
	tab := New[int](16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				k := []byte(fmt.Sprint("c", i%10))
				s := tab.Lock(k)
				*s.Insert(k)++
				s.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 10; i++ {
		k := []byte(fmt.Sprint("c", i))
		s := tab.Lock(k)
		if got := *s.Get(k); got != 800 {
			t.Errorf("%s = %d, want 800", k, got)
		}
		s.Unlock()
	}
}

func BenchmarkLockGet(b *testing.B) {
	tab := New[int](DefaultShards)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("key:", i))
		s := tab.Lock(keys[i])
		s.Insert(keys[i])
		s.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&1023]
		s := tab.Lock(k)
		*s.Get(k)++
		s.Unlock()
	}
}

// TestAgainstMap drives a shard and a Go map through the same random
// inserts, deletes, compactions and resets and compares them throughout.
func TestAgainstMap(t *testing.T) {
	tab := New[int64](1)
	s := tab.Shard(0)
	want := map[string]int64{}
	rng := uint64(42)
	next := func() uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
	check := func(step int) {
		if s.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, s.Len(), len(want))
		}
		seen := 0
		s.Range(func(k string, v *int64) bool {
			seen++
			if w, ok := want[k]; !ok || w != *v {
				t.Fatalf("step %d: %q = %d, want %d (present %v)", step, k, *v, w, ok)
			}
			return true
		})
		if seen != len(want) {
			t.Fatalf("step %d: Range saw %d keys, want %d", step, seen, len(want))
		}
	}
	for step := 0; step < 200000; step++ {
		r := next()
		k := fmt.Sprint("key:", r%5000)
		if r%1000 == 7 { // an occasional long key: multi-byte length prefix
			k += string(make([]byte, 200))
		}
		switch op := (r >> 20) % 10; {
		case op < 5:
			*s.Insert([]byte(k)) = int64(r)
			want[k] = int64(r)
		case op < 9:
			if got := s.Delete([]byte(k)); got != (want[k] != 0 || hasKey(want, k)) {
				t.Fatalf("step %d: delete %q = %v", step, k, got)
			}
			delete(want, k)
		default:
			if v := s.Get([]byte(k)); (v != nil) != hasKey(want, k) || v != nil && *v != want[k] {
				t.Fatalf("step %d: get %q = %v", step, k, v)
			}
		}
		if step%5000 == 0 {
			s.Compact(0)
			check(step)
		}
		if step == 150000 {
			for k := range want { // expire almost everything, then compact
				if len(want) > 10 {
					s.Delete([]byte(k))
					delete(want, k)
				}
			}
			before := s.Bytes()
			if !s.Compact(0) || s.Bytes() >= before/4 {
				t.Fatalf("compaction after mass delete: %d -> %d bytes", before, s.Bytes())
			}
			check(step)
		}
	}
	check(-1)
	s.Reset()
	want = map[string]int64{}
	check(-2)
	*s.Insert([]byte("again")) = 1
	want["again"] = 1
	check(-3)
}

func hasKey(m map[string]int64, k string) bool { _, ok := m[k]; return ok }

// hashOf is the hash Table.Hash gives key in this shard's table.
func (s *Shard[V]) hashOf(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

// TestFlatStorage checks which values leave the Go heap.
func TestFlatStorage(t *testing.T) {
	type entry struct {
		A, B int64
		K    uint8
	}
	if !flat[entry]() || !flat[int64]() || !flat[byte]() {
		t.Error("pointer-free types should be stored off the heap")
	}
	if flat[string]() || flat[*int]() || flat[struct{ X any }]() || flat[[2][]byte]() {
		t.Error("types with pointers must stay on the Go heap")
	}
	s := New[entry](1).Shard(0)
	for i := 0; i < 10000; i++ {
		s.Insert([]byte(fmt.Sprint("k", i))).A = int64(i)
	}
	for i := 0; i < 10000; i++ {
		if v := s.Get([]byte(fmt.Sprint("k", i))); v == nil || v.A != int64(i) {
			t.Fatalf("k%d = %v", i, v)
		}
	}
	s.Reset()
	if s.Get([]byte("k1")) != nil || s.Bytes() != 0 {
		t.Fatal("reset left data")
	}
}

// TestChurnReusesStorage: keys that are deleted and come back (a rate
// limit's keys expiring and being hit again) are stored in the records and
// arena bytes they left, so the shard does not grow; Compact's reserve keeps
// it from shrinking storage that is about to be needed again.
func TestChurnReusesStorage(t *testing.T) {
	s := New[int64](1).Shard(0)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k:%06d", i)
		*s.Insert(keys[i]) = int64(i)
	}
	size := 0 // after the first round, which sizes the free list
	for round := 0; round < 20; round++ {
		for _, k := range keys {
			if !s.Delete(k) {
				t.Fatalf("round %d: %s missing", round, k)
			}
		}
		if s.Compact(len(keys)) {
			t.Fatalf("round %d: compacted storage the reserve asked to keep", round)
		}
		for i := len(keys) - 1; i >= 0; i-- { // another order than the one they left in
			v, tag := s.InsertTagged(keys[i], s.hashOf(keys[i]))
			if *v != 0 || *tag != 0 {
				t.Fatalf("round %d: reused record not fresh: value %d, tag %d", round, *v, *tag)
			}
			*v, *tag = int64(i+round), byte(round)
		}
		if got := s.Bytes(); round == 0 {
			size = got
		} else if got != size {
			t.Fatalf("round %d: storage grew from %d to %d bytes", round, size, got)
		}
	}
	for i, k := range keys {
		v, tag := s.GetTagged(k, s.hashOf(k))
		if v == nil || *v != int64(i+19) || *tag != 19 {
			t.Fatalf("%s: value %v tag %v", k, v, tag)
		}
	}
	// Shorter keys fit in a longer key's place; longer ones go to the end.
	for _, k := range keys {
		s.Delete(k)
	}
	*s.Insert([]byte("short")) = 1
	*s.Insert(make([]byte, 300)) = 2
	if v := s.Get([]byte("short")); v == nil || *v != 1 {
		t.Fatalf("short key: %v", v)
	}
	if v := s.Get(make([]byte, 300)); v == nil || *v != 2 {
		t.Fatalf("long key: %v", v)
	}
	if !s.Compact(0) || s.Len() != 2 {
		t.Fatalf("with no reserve, a mostly empty shard must compact (len %d)", s.Len())
	}
	if v := s.Get([]byte("short")); v == nil || *v != 1 {
		t.Fatalf("short key after compaction: %v", v)
	}
}
