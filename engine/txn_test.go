package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestExclusiveIsolatesItsKeys(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 8)
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
		e.Exclusive([][]byte{b, a}, false, func(tx *Engine) {
			tx.IncrBy(a, t0, 1)
			tx.IncrBy(b, t0, 1) // through the handle: the held shard is not locked again
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
	t.Parallel()
	e := New(testClock(), 8)
	for _, k := range []string{"x", "y", "z"} {
		e.IncrBy([]byte(k), t0, 1)
	}
	e.Exclusive(nil, true, func(tx *Engine) {
		if n := tx.Len(); n != 3 {
			t.Errorf("Len inside = %d", n)
		}
		seen := 0
		for i := 0; i < tx.Shards(); i++ {
			tx.RangeShard(i, t0, func(string, *Entry) bool { seen++; return true })
		}
		if seen != 3 {
			t.Errorf("RangeShard inside saw %d keys", seen)
		}
		tx.SetStrings([][]byte{[]byte("x"), []byte("w")}, [][]byte{[]byte("1"), []byte("2")}, t0, false)
		tx.Flush()
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

// TestHandleLocksWhatItDoesNotHold: a transaction's handle locks the
// shards its transaction does not hold, and only the handle skips the held
// ones: another goroutine's call on a held key waits until fn returns.
func TestHandleLocksWhatItDoesNotHold(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 8)
	a := []byte("a")
	var other []byte // a key in another shard than a's
	for i := 0; other == nil; i++ {
		if k := []byte(fmt.Sprint("k", i)); e.tab.Index(k) != e.tab.Index(a) {
			other = k
		}
	}
	done := make(chan struct{})
	e.Exclusive([][]byte{a}, false, func(tx *Engine) {
		go func() {
			e.IncrBy(a, t0, 10) // waits for the transaction
			close(done)
		}()
		tx.IncrBy(other, t0, 1) // not held: the handle locks and unlocks it
		if n, _ := e.IncrBy(other, t0, 1); n != 2 {
			t.Errorf("other = %d through the engine, want 2", n)
		}
		select {
		case <-done:
			t.Error("a call on a held key ran inside the transaction")
		case <-time.After(20 * time.Millisecond):
		}
		if n, _ := tx.IncrBy(a, t0, 1); n != 1 {
			t.Errorf("a = %d inside, want 1", n)
		}
	})
	<-done
	if n, _ := e.IncrBy(a, t0, 0); n != 11 {
		t.Errorf("a = %d after, want 11", n)
	}
}
