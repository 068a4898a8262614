package shard

import (
	"fmt"
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
