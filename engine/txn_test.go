package engine

import (
	"sync"
	"testing"
)

func TestExclusiveIsolatesItsKeys(t *testing.T) {
	e := New(nil, 8)
	a, b := []byte("a"), []byte("b")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	torn := 0
	wg.Add(1)
	go func() { // a reader that must never see a and b differ
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.DoMulti([][]byte{a, b}, t0, func(ents []Entry) bool {
				if ents[0].A != ents[1].A {
					torn++
				}
				return false
			})
		}
	}()
	for i := 0; i < 2000; i++ {
		e.Exclusive([][]byte{b, a}, false, func() {
			e.IncrBy(a, t0, 1)
			e.IncrBy(b, t0, 1) // re-enters the held shard instead of deadlocking
		})
	}
	close(stop)
	wg.Wait()
	if torn != 0 {
		t.Errorf("a reader saw a half-done transaction %d times", torn)
	}
	if n, _ := e.IncrBy(a, t0, 0); n != 2000 {
		t.Errorf("a = %d, want 2000", n)
	}
}

func TestExclusiveAllShardsReentersEveryLock(t *testing.T) {
	e := New(nil, 8)
	for _, k := range []string{"x", "y", "z"} {
		e.IncrBy([]byte(k), t0, 1)
	}
	e.Exclusive(nil, true, func() {
		if n := e.Len(); n != 3 {
			t.Errorf("Len inside = %d", n)
		}
		seen := 0
		for i := 0; i < e.Shards(); i++ {
			e.RangeShard(i, t0, func(string, *Entry) bool { seen++; return true })
		}
		if seen != 3 {
			t.Errorf("RangeShard inside saw %d keys", seen)
		}
		e.SetStrings([][]byte{[]byte("x"), []byte("w")}, [][]byte{[]byte("1"), []byte("2")}, t0, false)
		e.Flush()
	})
	if n := e.Len(); n != 0 {
		t.Errorf("after Flush inside: %d keys", n)
	}
	// Every lock was released.
	for i := 0; i < e.Shards(); i++ {
		if !e.tab.Shard(i).TryLock() {
			t.Fatalf("shard %d still locked", i)
		}
		e.tab.Shard(i).Unlock()
	}
}

func TestGoroutineIDsDiffer(t *testing.T) {
	mine := goroutineID()
	other := make(chan int64)
	go func() { other <- goroutineID() }()
	if o := <-other; mine <= 0 || o <= 0 || o == mine {
		t.Errorf("goroutine ids %d and %d", mine, o)
	}
	if goroutineID() != mine {
		t.Error("goroutine id not stable")
	}
}
