package engine

import (
	"fmt"
	"testing"
	"time"
)

func TestUsedBytesFollowsKeys(t *testing.T) {
	e := New(nil, 4)
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
	e := New(nil, 1) // one shard; 256 random index slots over 11 keys miss none
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
