package engine

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/window"
)

// A sliding log's buffer is one allocation (logbuf.go), when a key is new
// and each time its ring moves, up to maxInlineWords; a larger one is two.
func TestSlidingLogBufferAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	sec := int64(time.Second)
	for _, c := range []struct {
		name   string
		limit  int64
		stamps int   // the ring's stamps (of cost 1) before the request that moves them
		cost   int64 // that request's
		allocs float64
	}{
		{"new key", 100, 0, 1, 1},
		{"4 to 8 slots", 100, 4, 1, 1},
		{"128 to 256 slots", 1000, 128, 1, 1},
		{"256 to 512 slots", 1000, 256, 1, 2},
		{"narrow to wide", 100, 3, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, _ := NewSlidingLog(c.limit, sec)
			ent := Entry{}
			for k := range c.stamps {
				next, r, _, err := l.Apply(ent, t0+int64(k), 1)
				if err != nil || r.Limited {
					t.Fatalf("request %d: %+v %v", k, r, err)
				}
				// Stored: the stage becomes the key's state.
				if s, ok := next.Ext.(stagedExt); ok {
					next.Ext, _ = s.commit(ent.Ext)
				}
				ent = next
			}
			now := t0 + int64(c.stamps)
			var ring window.Ring
			loadRing(&ring, &ent)
			if c.stamps > 0 && l.L.Regrow(&ring, now, c.cost) == 0 {
				t.Fatalf("%d stamps: the next request does not move them", c.stamps)
			}
			n := testing.AllocsPerRun(100, func() {
				if _, _, _, err := l.Apply(ent, now, c.cost); err != nil {
					t.Fatal(err)
				}
			})
			if n != c.allocs {
				t.Errorf("%v allocations, want %v", n, c.allocs)
			}
		})
	}
}

// The serialised form of a sliding log is fixed (A and B 0, then the
// ring's bytes) although in memory A and B hold part of the ring: this
// entry, written by build 5a15253, loads, answers as it did, and is
// written back byte for byte.
func TestSlidingLogOldForm(t *testing.T) {
	t.Parallel()
	// SL.INCR k 5 10s at t0, t0+1s and t0+2s, costing 1, 2 and 1.
	old, _ := hex.DecodeString("0680e0db96a0c0ce972f00001880d0fcd5d5bfce972f0380a8d6b907018094ebdc03020001")
	ent, n, err := DecodeEntry(old)
	if err != nil || n != len(old) || ent.Kind != KindSlidingLog || ent.Expire != t0+12e9 {
		t.Fatalf("decoded %+v, %d of %d bytes: %v", ent, n, len(old), err)
	}
	if b, err := ent.AppendBinary(nil); err != nil || !bytes.Equal(b, old) {
		t.Fatalf("written back as %x (%v), was %x", b, err, old)
	}
	sl, _ := NewSlidingLog(5, 10e9)
	for _, c := range []struct {
		at, remaining int64
	}{{3e9, 1}, {10e9 - 1, 1}, {10e9, 2}, {11e9, 4}, {12e9 - 1, 4}} {
		if _, r, _, err := sl.Apply(ent, t0+c.at, 0); err != nil || r.Remaining != c.remaining {
			t.Errorf("at t0+%dns: remaining %d (%v), want %d", c.at, r.Remaining, err, c.remaining)
		}
	}
}

// An entry Apply returned for one key and stored under another gets a
// buffer of its own: the first key's later writes, in place, leave the
// second's stamps alone.
func TestSlidingLogStateGivenToAnotherKey(t *testing.T) {
	t.Parallel()
	sl, _ := NewSlidingLog(5, 100)
	e := New(testClock(), 1)
	a, b := []byte("a"), []byte("b")
	build(t, e, a, sl, []int64{0, 10})
	e.DoMulti([][]byte{a, b}, t0+20, func(ents []Entry) bool {
		next, r, write, err := sl.Apply(ents[0], t0+20, 1)
		if err != nil || r.Limited || !write {
			t.Fatalf("%+v write=%v %v", r, write, err)
		}
		ents[1] = next // a's staged state, stored under b; a unchanged
		return true
	})
	before := stateOf(t, e, b, t0+30)
	build(t, e, a, sl, []int64{30, 30, 40})
	if after := stateOf(t, e, b, t0+30); !bytes.Equal(after, before) {
		t.Fatalf("writes to a changed b: %x, was %x", after, before)
	}
	if _, r, _, _ := sl.Apply(mustGet(t, e, b, t0+30), t0+30, 0); r.Remaining != 2 {
		t.Errorf("b has %d left, want 2 (three stamps)", r.Remaining)
	}
}

func mustGet(t *testing.T, e *Engine, key []byte, now int64) Entry {
	t.Helper()
	ent, ok := e.Get(key, now)
	if !ok {
		t.Fatalf("%s absent", key)
	}
	return ent
}

// A sliding log kept by the engine, its ring split over the entry and
// its words, decides as the same log kept whole: at every
// step of random traffic on two keys, whose stamps slide out, move to new
// buffers and widen, and whose slots the slab reuses as keys come and go.
func TestSlidingLogThroughEngine(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		win, limit := rng.Int64N(200)+1, rng.Int64N(40)+1
		sl, _ := NewSlidingLog(limit, win)
		e := New(testClock(), 1)
		keys := [][]byte{[]byte("a"), []byte("b")}
		whole := make([]window.Ring, len(keys))
		now := t0
		for step := range 400 {
			now += rng.Int64N(win/4 + 1)
			k := rng.IntN(len(keys))
			cost := int64(1)
			if rng.IntN(8) == 0 {
				cost = rng.Int64N(limit/2 + 1) // a peek, or a wide stamp
			}
			got, err := Limit(e, keys[k], now, sl, cost)
			if err != nil {
				t.Fatal(err)
			}
			if x := sl.L.Expire(&whole[k]); x != 0 && x <= now {
				whole[k] = window.Ring{} // expired: the engine dropped the key
			}
			want, _ := sl.L.Decide(&whole[k], now, cost)
			if !want.Limited && cost > 0 {
				whole[k] = sl.L.Record(&whole[k], now, cost)
			}
			if w := result(want.Limited, limit, want.Remaining, want.RetryAfter, want.ResetAfter); got != w {
				t.Fatalf("round %d step %d, key %s at %d, cost %d: %+v, kept whole %+v", round, step, keys[k], now, cost, got, w)
			}
			// The parts the engine keeps are the whole ring's: an Oldest
			// lost would cost a read of the buffer, one too new would
			// keep stamps that slid out.
			var split window.Ring
			if ent, ok := e.Get(keys[k], now); ok && loadRing(&split, &ent) {
				w := &whole[k]
				if a, b := split.AppendBinary(nil), w.AppendBinary(nil); !bytes.Equal(a, b) || split.Oldest != w.Oldest {
					t.Fatalf("round %d step %d, key %s: kept %x Oldest %d, whole %x Oldest %d", round, step, keys[k], a, split.Oldest, b, w.Oldest)
				}
			}
		}
	}
}

// where reports where key's sliding log keeps its buffer: "entry" (its
// entry's words), "slot" (the ext slab) or "none".
func where(t *testing.T, e *Engine, key []byte) string {
	t.Helper()
	s := e.tab.Shard(e.tab.Index(key))
	s.Lock()
	defer s.Unlock()
	cur, tag := s.GetTagged(key, e.tab.Hash(key))
	switch {
	case cur == nil:
		return "none"
	case *tag&tagExt != 0 && s.Words(cur) == nil:
		return "slot"
	case *tag&tagExt == 0 && s.Words(cur) != nil:
		return "entry"
	}
	t.Fatalf("%s: tag %#x with %d words", key, *tag, len(s.Words(cur)))
	return ""
}

// A sliding log keeps its buffer in its key's entry up to maxInlineWords,
// in the ext slab beyond, and moves between the two as its ring grows and
// shrinks, deciding throughout as the same log kept whole.
func TestSlidingLogEntryAndSlot(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	sl, _ := NewSlidingLog(1000, sec)
	e := New(testClock(), 1)
	key := []byte("k")
	var whole window.Ring
	hit := func(now int64) {
		t.Helper()
		got, err := Limit(e, key, now, sl, 1)
		want, _ := sl.L.Decide(&whole, now, 1)
		whole = sl.L.Record(&whole, now, 1)
		if w := result(want.Limited, 1000, want.Remaining, want.RetryAfter, want.ResetAfter); err != nil || got != w {
			t.Fatalf("at t0%+d: %+v %v, kept whole %+v", now-t0, got, err, w)
		}
	}
	seen := map[string]bool{}
	for i := range 400 { // 400 stamps: the ring grows past 256 slots
		hit(t0 + int64(i))
		w := where(t, e, key)
		if want := map[bool]string{true: "entry", false: "slot"}[whole.Cap() <= maxInlineWords]; w != want {
			t.Fatalf("%d stamps in %d slots: buffer in the %s, want the %s", whole.Len(), whole.Cap(), w, want)
		}
		seen[w] = true
		checkSlabs(t, e)
	}
	// A second later all but the newest stamps have slid out: the ring
	// shrinks back into the entry.
	for i := range 40 {
		hit(t0 + sec + 400 + int64(i)*sec/50)
	}
	if w := where(t, e, key); w != "entry" || !seen["slot"] || !seen["entry"] {
		t.Fatalf("after shrinking: buffer in the %s (seen %v)", w, seen)
	}
	if got := checkSlabs(t, e); got != 1 {
		t.Fatalf("%d keys with Ext state, want 1", got)
	}
}

// DoMulti stores one key's staged words after writes that move the
// shard's arena (new keys that make it grow): the key keeps the request
// it admitted, and a key given another key's staged state gets a copy.
func TestDoMultiWordsAcrossArenaMove(t *testing.T) {
	t.Parallel()
	sl, _ := NewSlidingLog(5, 100)
	e := New(testClock(), 1)
	for i := range 200 { // an arena of some pages, outside the Go heap
		build(t, e, fmt.Appendf(nil, "old%d", i), sl, []int64{0})
	}
	a, b := []byte("a"), []byte("b")
	build(t, e, a, sl, []int64{0, 10})
	build(t, e, b, sl, []int64{0})
	keys := [][]byte{}
	for i := range 500 {
		keys = append(keys, fmt.Appendf(nil, "new%d", i))
	}
	keys = append(keys, a, b)
	e.DoMulti(keys, t0+20, func(ents []Entry) bool {
		for k := range ents {
			next, r, write, err := sl.Apply(ents[k], t0+20, 1)
			if err != nil || r.Limited || !write {
				t.Fatalf("%s: %+v write=%v %v", keys[k], r, write, err)
			}
			ents[k] = next
		}
		ents[len(ents)-1] = ents[len(ents)-2] // b gets a's staged state
		return true
	})
	if sa, sb := stateOf(t, e, a, t0+20), stateOf(t, e, b, t0+20); !bytes.Equal(sa, sb) {
		t.Fatalf("b holds %x, not a's state %x", sb, sa)
	}
	for key, want := range map[string]int64{"a": 2, "b": 2, "new7": 4, "old3": 4} {
		if n := remaining(t, e, key, t0+20, sl); n != want {
			t.Errorf("%s: remaining %d, want %d", key, n, want)
		}
	}
	build(t, e, a, sl, []int64{30}) // a's words are its own again
	if n := remaining(t, e, "b", t0+30, sl); n != 2 {
		t.Errorf("b after a write to a: remaining %d, want 2", n)
	}
	checkSlabs(t, e)
}

// A write of a sliding log's entry as loaded (EXPIRE, PEXPIRE) keeps its
// stamps where they are.
func TestSlidingLogRewrittenAsLoaded(t *testing.T) {
	t.Parallel()
	sl, _ := NewSlidingLog(5, 100)
	e := New(testClock(), 1)
	key := []byte("k")
	build(t, e, key, sl, []int64{0, 1, 2})
	before := remaining(t, e, "k", t0+3, sl)
	e.Do(key, t0+3, func(ent Entry) (Entry, bool) {
		ent.Expire += 1000
		return ent, true
	})
	if n := remaining(t, e, "k", t0+3, sl); n != before || n != 2 {
		t.Fatalf("remaining %d after the rewrite, %d before, want 2", n, before)
	}
	if w := where(t, e, key); w != "entry" {
		t.Fatalf("buffer in the %s", w)
	}
	checkSlabs(t, e)
}
