package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/gcra"
)

func TestUsedBytesFollowsKeys(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	put := func(key string, exp int64) {
		e.Do([]byte(key), t0, func(Entry) (Entry, bool) { return Entry{Kind: KindGCRA, A: exp, Expire: exp}, true })
	}
	want := func(step string, keys ...string) {
		t.Helper()
		var n int64
		for _, k := range keys {
			n += keyCost([]byte(k))
		}
		if got := e.UsedBytes(); got != n {
			t.Fatalf("%s: UsedBytes %d, want %d", step, got, n)
		}
	}
	hour, sec := t0+int64(time.Hour), t0+int64(time.Second)
	put("a", hour)
	put("bb", sec)
	put("ccc", hour)
	want("inserted", "a", "bb", "ccc")
	put("a", hour+1) // an update costs nothing more
	want("updated", "a", "bb", "ccc")
	e.Delete([]byte("ccc"), t0)
	want("deleted", "a", "bb")
	e.ExpireCycle(t0+2*int64(time.Second), 20)
	want("expired", "a")
	e.Flush()
	want("flushed")
}

func TestEvictSoonestTakesEarliestExpiry(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 1) // one shard; 256 random index slots over 11 keys miss none
	for i := 1; i <= 10; i++ {
		exp := t0 + int64(i)*int64(time.Minute)
		e.Do([]byte(fmt.Sprint("k", i)), t0, func(Entry) (Entry, bool) { return Entry{Kind: KindGCRA, A: exp, Expire: exp}, true })
	}
	e.Do([]byte("forever"), t0, func(Entry) (Entry, bool) { return Entry{Kind: KindString, A: 1}, true })
	for i := 1; i <= 10; i++ {
		if ev, _ := e.EvictSoonest(t0, 256); !ev {
			t.Fatalf("eviction %d found nothing", i)
		}
		if _, ok := e.Get([]byte(fmt.Sprint("k", i)), t0); ok {
			t.Fatalf("eviction %d left k%d, the earliest to expire", i, i)
		}
	}
	if ev, _ := e.EvictSoonest(t0, 256); ev {
		t.Fatal("evicted a key that never expires")
	}
	if _, ok := e.Get([]byte("forever"), t0); !ok {
		t.Fatal("key without expiry was evicted")
	}
}

// KeyBytes counts a key's entry and, beyond it, its Ext state: a sliding
// log's buffer as it grows, a string's bytes, a sliding window's counts.
func TestKeyBytes(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	sec := int64(time.Second)
	bytesOf := func(key string, now int64) int64 {
		t.Helper()
		n, ok := e.KeyBytes([]byte(key), now)
		if !ok {
			t.Fatalf("%s: absent", key)
		}
		return n
	}
	if _, ok := e.KeyBytes([]byte("nope"), t0); ok {
		t.Error("an absent key has a size")
	}
	cell, _ := gcra.CellLimit(9, 10, 60)
	if _, err := Limit(e, []byte("g"), t0, CellLimiter{cell}, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := bytesOf("g", t0), keyCost([]byte("g")); got != want {
		t.Errorf("GCRA key: %d bytes, want its entry's %d", got, want)
	}
	if _, ok := e.KeyBytes([]byte("g"), t0+61*sec); ok {
		t.Error("an expired key has a size")
	}

	sl, _ := NewSlidingLog(100, 60*sec)
	sizes := map[int64]bool{}
	for i := range 40 {
		if _, err := Limit(e, []byte("s"), t0+int64(i), sl, 1); err != nil {
			t.Fatal(err)
		}
		sizes[bytesOf("s", t0+int64(i))] = true
	}
	// 40 stamps of 8 bytes: buffers of 4, 8, 16, 32 and 64 words.
	if n := bytesOf("s", t0+40); n < keyCost([]byte("s"))+extSlotBytes+40*8 || len(sizes) != 5 {
		t.Errorf("sliding log of 40 stamps: %d bytes, %d sizes on the way (want 5)", n, len(sizes))
	}

	if _, _, _, err := e.SetString([]byte("str"), t0, []byte("0123456789abcdef0123456789abcdef"), SetOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := bytesOf("str", t0); n < keyCost([]byte("str"))+32 {
		t.Errorf("a 32-byte string: %d bytes", n)
	}

	sw, _ := NewSlidingWindow(10, 60*sec, 30)
	for range 2 { // the second write gives the box its second set of counts
		if _, err := Limit(e, []byte("w"), t0, sw, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := bytesOf("w", t0); n < keyCost([]byte("w"))+2*31*8 {
		t.Errorf("a sliding window of 30 sub-windows: %d bytes, less than its two sets of counts", n)
	}
}
