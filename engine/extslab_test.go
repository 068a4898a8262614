package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkSlabs fails unless every shard's ext slab holds exactly its keys'
// Ext state: one slot per key with Ext state (expired keys not yet reaped
// included), no slot shared by two keys (a reused live slot), every other
// slot on the free chain (else leaked), and each slot's state the kind of
// its key's. A sliding log may keep its buffer in its entry's words
// instead (logbuf.go): those must hold a whole log, and no other key may
// have words. It returns the number of keys with Ext state, in a slot or
// in words.
func checkSlabs(t *testing.T, e *Engine) int {
	t.Helper()
	total := 0
	for i := 0; i < e.Shards(); i++ {
		s := e.tab.Shard(i)
		x := &e.side[i].ext
		owner := map[int64]string{}
		var bad []string
		s.Lock()
		inline := 0
		s.Scan(0, -1, func(k string, v *stored, tag byte) bool {
			w := s.Words(v)
			switch {
			case w != nil && (tag != byte(KindSlidingLog) || len(w) != inlineHeader+int(asInline(w).size)):
				bad = append(bad, fmt.Sprintf("key %q of tag %#x: %d words", k, tag, len(w)))
			case w != nil:
				inline++
				if _, err := e.load(i, v, tag).AppendBinary(nil); err != nil {
					bad = append(bad, fmt.Sprintf("key %q: words: %v", k, err))
				}
			}
			if tag&tagExt == 0 {
				return true
			}
			if v.B < 0 || v.B >= int64(len(x.slots)) {
				bad = append(bad, fmt.Sprintf("key %q: slot %d of %d", k, v.B, len(x.slots)))
				return true
			}
			if o, dup := owner[v.B]; dup {
				bad = append(bad, fmt.Sprintf("keys %q and %q share slot %d", o, k, v.B))
				return true
			}
			owner[v.B] = strings.Clone(k)
			if x.slots[v.B].ext == nil {
				bad = append(bad, fmt.Sprintf("key %q: its slot %d is free", k, v.B))
			} else if _, err := e.load(i, v, tag).AppendBinary(nil); err != nil {
				bad = append(bad, fmt.Sprintf("key %q: slot %d: %v", k, v.B, err))
			}
			return true
		})
		free := 0
		for f := x.free; f != 0; f = x.slots[f-1].b {
			if f < 0 || f > int64(len(x.slots)) || free > len(x.slots) {
				bad = append(bad, fmt.Sprintf("free chain broken at %d", f))
				break
			}
			if x.slots[f-1].ext != nil {
				bad = append(bad, fmt.Sprintf("free slot %d holds state", f-1))
			}
			free++
		}
		live, slots := x.live, len(x.slots)
		s.Unlock()
		if live != len(owner) {
			bad = append(bad, fmt.Sprintf("%d slots counted live, %d keys have Ext state", live, len(owner)))
		}
		if free+len(owner) != slots {
			bad = append(bad, fmt.Sprintf("%d slots: %d owned + %d free (leaked %d)", slots, len(owner), free, slots-free-len(owner)))
		}
		for _, b := range bad {
			t.Errorf("shard %d: %s", i, b)
		}
		if len(bad) > 0 {
			t.FailNow()
		}
		total += len(owner) + inline
	}
	return total
}

// remaining is what a peek at key with l says is left, -1 when the key
// holds another kind.
func remaining(t *testing.T, e *Engine, key string, now int64, l Limiter) int64 {
	t.Helper()
	r, err := Limit(e, []byte(key), now, l, 0)
	if errors.Is(err, ErrWrongType) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return r.Remaining
}

// TestExtSlotFollowsKey walks a key through every way it can gain or lose
// Ext state and checks the slabs after each step: a step that forgets to
// free a slot, or hands a live one out again, fails here.
func TestExtSlotFollowsKey(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	sl, _ := NewSlidingLog(3, sec)
	big, _ := NewSlidingWindow(1<<40, sec, 1)
	hit := func(t *testing.T, e *Engine, key string, now int64, l Limiter, cost int64) {
		t.Helper()
		if r, err := Limit(e, []byte(key), now, l, cost); err != nil || r.Limited {
			t.Fatalf("%s at t0%+d: %+v %v", key, now-t0, r, err)
		}
	}
	set := func(e *Engine, key, val string) {
		e.SetString([]byte(key), t0, []byte(val), SetOptions{}, nil)
	}
	cases := []struct {
		name  string
		steps func(t *testing.T, e *Engine)
		want  int // keys with Ext state at the end
	}{
		{"expires and comes back: same slot, fresh state", func(t *testing.T, e *Engine) {
			hit(t, e, "k", t0, sl, 3)
			hit(t, e, "k", t0+2*sec, sl, 1)
			if n := remaining(t, e, "k", t0+2*sec, sl); n != 2 {
				t.Fatalf("remaining %d after coming back, want 2", n)
			}
		}, 1},
		{"expired and read: reaped", func(t *testing.T, e *Engine) {
			hit(t, e, "k", t0, sl, 1)
			if _, ok := e.Get([]byte("k"), t0+2*sec); ok {
				t.Fatal("expired key read back")
			}
		}, 0},
		{"active expiry", func(t *testing.T, e *Engine) {
			hit(t, e, "a", t0, sl, 1)
			hit(t, e, "b", t0, sl, 1)
			set(e, "s", "not a number")
			if n := e.ExpireCycle(t0+2*sec, 20); n != 2 {
				t.Fatalf("ExpireCycle reaped %d keys, want 2", n)
			}
		}, 1},
		{"overwritten by kinds with and without Ext", func(t *testing.T, e *Engine) {
			hit(t, e, "k", t0, sl, 1)
			set(e, "k", "42") // an integer: no Ext
			if got := checkSlabs(t, e); got != 0 {
				t.Fatalf("integer string over a log: %d keys with Ext", got)
			}
			set(e, "k", "abc")
			if remaining(t, e, "k", t0, sl) != -1 {
				t.Fatal("a string answered as a sliding log")
			}
			set(e, "k", "7")
			hit(t, e, "k2", t0, sl, 1)
			set(e, "k2", "xyz") // Ext over Ext: the key keeps its slot
		}, 1},
		{"sliding window moves to Ext and back", func(t *testing.T, e *Engine) {
			hit(t, e, "w", t0, big, 1<<33) // counts past 2^32: Ext
			if got := checkSlabs(t, e); got != 1 {
				t.Fatalf("after counts past 2^32: %d keys with Ext, want 1", got)
			}
			hit(t, e, "w", t0+2*sec, big, 1) // packed again
			if n := remaining(t, e, "w", t0+2*sec, big); n != 1<<40-1 {
				t.Fatalf("remaining %d, want %d", n, int64(1<<40-1))
			}
		}, 0},
		{"DEL", func(t *testing.T, e *Engine) {
			hit(t, e, "k", t0, sl, 1)
			e.Delete([]byte("k"), t0)
		}, 0},
		{"evicted", func(t *testing.T, e *Engine) {
			hit(t, e, "k", t0, sl, 1)
			if ev, _ := e.EvictSoonest(t0, 16); !ev {
				t.Fatal("nothing evicted")
			}
		}, 0},
		{"flushed, then used again", func(t *testing.T, e *Engine) {
			hit(t, e, "a", t0, sl, 1)
			set(e, "s", "abc")
			e.Flush()
			if got := checkSlabs(t, e); got != 0 {
				t.Fatalf("after Flush: %d keys with Ext", got)
			}
			hit(t, e, "a", t0, sl, 2)
			if n := remaining(t, e, "a", t0, sl); n != 1 {
				t.Fatalf("remaining %d after Flush, want 1", n)
			}
		}, 1},
		{"a freed slot reused leaves the other keys alone", func(t *testing.T, e *Engine) {
			hit(t, e, "a", t0, sl, 1)
			hit(t, e, "b", t0, sl, 2)
			hit(t, e, "c", t0, sl, 3)
			e.Delete([]byte("b"), t0)
			hit(t, e, "d", t0, sl, 1) // takes b's slot
			for key, want := range map[string]int64{"a": 2, "b": 3, "c": 0, "d": 2} {
				if n := remaining(t, e, key, t0, sl); n != want {
					t.Errorf("%s: remaining %d, want %d", key, n, want)
				}
			}
		}, 3},
		{"inside a transaction", func(t *testing.T, e *Engine) {
			e.Exclusive(nil, true, func(tx *Engine) {
				hit(t, tx, "a", t0, sl, 1)
				hit(t, tx, "b", t0, sl, 1)
				tx.Delete([]byte("a"), t0)
				set(tx, "b", "1")
				hit(t, tx, "c", t0, sl, 1)
			})
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(testClock(), 1)
			c.steps(t, e)
			if got := checkSlabs(t, e); got != c.want {
				t.Fatalf("%d keys with Ext state, want %d", got, c.want)
			}
		})
	}
}

// snapshot is every live key's serialised entry, as persistence saves
// them (RangeShardTransient, AppendBinary).
func snapshot(t *testing.T, e *Engine, now int64) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for i := 0; i < e.Shards(); i++ {
		e.RangeShardTransient(i, now, func(key string, ent *Entry) bool {
			b, err := ent.AppendBinary(nil)
			if err != nil {
				t.Fatalf("%q: %v", key, err)
			}
			out[strings.Clone(key)] = b
			return true
		})
	}
	return out
}

// restore stores a snapshot's entries as persistence loads them (Do).
func restore(t *testing.T, e *Engine, snap map[string][]byte, now int64) {
	t.Helper()
	for _, key := range slices.Sorted(maps.Keys(snap)) {
		ent, _, err := DecodeEntry(snap[key])
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		e.Do([]byte(key), now, func(Entry) (Entry, bool) { return ent, true })
	}
}

// A snapshot restores every key's state exactly, into an empty keyspace
// and over the keys themselves, with one slot per key with Ext state.
func TestExtSlabSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	sl, _ := NewSlidingLog(5, sec)
	sw, _ := NewSlidingWindow(10, sec, 10)
	e := New(testClock(), 4)
	for k := 0; k < 40; k++ {
		key := []byte(fmt.Sprint("k", k))
		now := t0 + int64(k)*int64(time.Millisecond)
		var err error
		switch k % 5 {
		case 0:
			_, err = Limit(e, key, now, sl, int64(1+k%3))
		case 1:
			_, err = Limit(e, key, now, sw, int64(1+k%4))
		case 2:
			e.SetString(key, now, []byte(fmt.Sprint("v", k)), SetOptions{}, nil)
		case 3:
			e.IncrBy(key, now, int64(k))
		case 4:
			_, err = Limit(e, key, t0-2*sec, sl, 1) // expired by now
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	now := t0 + sec/2
	snap := snapshot(t, e, now)
	wantExt := 0
	for _, b := range snap {
		ent, _, _ := DecodeEntry(b)
		if ent.Ext != nil {
			wantExt++
		}
	}
	if wantExt != 24 { // 8 logs, 8 windows, 8 strings
		t.Fatalf("%d live keys with Ext state in the snapshot, want 24", wantExt)
	}
	fresh := New(testClock(), 4)
	restore(t, fresh, snap, now)
	if got := snapshot(t, fresh, now); !maps.EqualFunc(got, snap, bytes.Equal) {
		t.Fatal("restored keyspace differs from the saved one")
	}
	if got := checkSlabs(t, fresh); got != wantExt {
		t.Fatalf("restored: %d keys with Ext state, want %d", got, wantExt)
	}
	restore(t, e, snap, now) // over the same keys: each keeps its slot
	if got := snapshot(t, e, now); !maps.EqualFunc(got, snap, bytes.Equal) {
		t.Fatal("keyspace restored over itself differs from the saved one")
	}
	checkSlabs(t, e)
}

// mixOp is one random operation of TestExtSlabRandomMix on a keyspace; it
// returns what a client would see.
type mixOp func(e *Engine, now int64) string

// TestExtSlabRandomMix runs the same random mix of operations on a
// keyspace of one shard and one of eight, where keys share slabs
// differently: any slot handed to two keys, or read for the wrong key,
// makes their answers differ; checkSlabs counts the slots throughout. A
// second run adds eviction (random, so checked against the invariants
// only).
func TestExtSlabRandomMix(t *testing.T) {
	t.Parallel()
	for _, evict := range []bool{false, true} {
		t.Run(fmt.Sprintf("evict=%v", evict), func(t *testing.T) {
			ops := 4000
			if testing.Short() {
				ops = 1000
			}
			seed := uint64(1)
			if evict {
				seed = 2
			}
			rng := rand.New(rand.NewPCG(seed, 5))
			a, b := New(testClock(), 1), New(testClock(), 8)
			now := t0
			for n := 0; n < ops; n++ {
				op, name := randomOp(t, rng, evict)
				now += rng.Int64N(int64(300 * time.Millisecond))
				ra := op(a, now)
				if !evict {
					if rb := op(b, now); ra != rb {
						t.Fatalf("op %d (%s): one shard says %q, eight say %q", n, name, ra, rb)
					}
				}
				if n%50 == 0 || name == "flush" {
					checkSlabs(t, a)
					checkSlabs(t, b)
				}
			}
			checkSlabs(t, a)
			if !evict {
				checkSlabs(t, b)
				if sa, sb := snapshot(t, a, now), snapshot(t, b, now); !maps.EqualFunc(sa, sb, bytes.Equal) {
					t.Fatal("the two keyspaces ended with different states")
				}
			}
		})
	}
}

func randomOp(t *testing.T, rng *rand.Rand, evict bool) (mixOp, string) {
	sec := int64(time.Second)
	sl, _ := NewSlidingLog(4, sec)
	sw, _ := NewSlidingWindow(10, sec, 10)
	big, _ := NewSlidingWindow(1<<40, sec, 1)
	key := []byte(fmt.Sprint("k", rng.IntN(30)))
	key2 := []byte(fmt.Sprint("k", rng.IntN(30)))
	cost := 1 + rng.Int64N(2)
	limit := func(l Limiter, cost int64) mixOp {
		return func(e *Engine, now int64) string {
			r, err := Limit(e, key, now, l, cost)
			return fmt.Sprint(r, err)
		}
	}
	switch p := rng.IntN(100); {
	case p < 25:
		return limit(sl, cost), "SL.INCR"
	case p < 40:
		return limit(sw, cost), "SW.INCR PRECISION 10"
	case p < 48:
		if rng.IntN(2) == 0 {
			cost = 1 << 33
		}
		return limit(big, cost), "SW.INCR past 2^32"
	case p < 58:
		val := []byte(fmt.Sprint("v", rng.IntN(3)))
		if rng.IntN(2) == 0 {
			val = []byte(fmt.Sprint(rng.IntN(100)))
		}
		ex := int64(0)
		if rng.IntN(2) == 0 {
			ex = 1 + rng.Int64N(2*sec)
		}
		nx := rng.IntN(4) == 0
		return func(e *Engine, now int64) string {
			o := SetOptions{NX: nx}
			if ex != 0 {
				o.Expire = now + ex
			}
			_, _, done, err := e.SetString(key, now, val, o, nil)
			return fmt.Sprint(done, err)
		}, "SET"
	case p < 62:
		return func(e *Engine, now int64) string {
			n, err := e.IncrBy(key, now, 1)
			return fmt.Sprint(n, err)
		}, "INCR"
	case p < 70:
		return func(e *Engine, now int64) string { return fmt.Sprint(e.Delete(key, now)) }, "DEL"
	case p < 75:
		return func(e *Engine, now int64) string {
			ent, ok := e.Get(key, now)
			b, err := ent.AppendBinary(nil)
			return fmt.Sprintf("%v %x %v", ok, b, err)
		}, "GET"
	case p < 82:
		store := rng.IntN(2) == 0
		return func(e *Engine, now int64) string {
			var res []string
			stored := false
			e.DoMulti([][]byte{key, key2}, now, func(ents []Entry) bool {
				for j := range ents {
					if ents[j].Kind != KindNone && ents[j].Kind != KindSlidingLog {
						res = append(res, "WRONGTYPE")
						return false
					}
					next, r, write, err := sl.Apply(ents[j], now, 1)
					res = append(res, fmt.Sprint(r, write, err))
					if !write {
						return false
					}
					ents[j] = next
				}
				stored = store
				return store
			})
			return fmt.Sprint(res, stored)
		}, "RL.HITALL"
	case p < 87:
		return func(e *Engine, now int64) string {
			var out string
			e.Exclusive([][]byte{key, key2}, false, func(tx *Engine) {
				r, err := Limit(tx, key, now, sl, 1)
				out = fmt.Sprint(r, err, tx.Delete(key2, now))
			})
			return out
		}, "MULTI/EXEC"
	case p < 93:
		return func(e *Engine, now int64) string {
			e.ExpireCycle(now, 4) // reaps only expired keys: the same answers
			return ""
		}, "expire cycle"
	case p < 96 && evict:
		return func(e *Engine, now int64) string {
			e.EvictSoonest(now, 3)
			return ""
		}, "evict"
	case p < 96:
		return func(e *Engine, now int64) string {
			restore(t, e, snapshot(t, e, now), now)
			return ""
		}, "snapshot reload"
	case p < 97:
		return func(e *Engine, now int64) string { e.Flush(); return "" }, "flush"
	}
	return func(e *Engine, now int64) string { return "" }, "nothing"
}

// A slab left mostly free by keys that went is compacted by active expiry:
// it shrinks to the keys left, each of which keeps its own state.
func TestExtSlabCompacts(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 1)
	set := func(key string, n int) { // strings of 1 to 3 words, in the slab
		e.SetString([]byte(key), t0, []byte(strings.Repeat("v", 8*n)), SetOptions{}, nil)
	}
	for i := range 1000 {
		set(fmt.Sprint("k", i), i%3+1)
	}
	for i := range 1000 {
		if i%50 != 0 {
			e.Delete([]byte(fmt.Sprint("k", i)), t0+10)
		}
	}
	before := map[string][]byte{}
	for i := 0; i < 1000; i += 50 {
		k := fmt.Sprint("k", i)
		before[k] = stateOf(t, e, []byte(k), t0+10)
	}
	if n := len(e.side[0].ext.slots); n < 1000 {
		t.Fatalf("slab of %d slots before, want the 1000 it grew to", n)
	}
	e.ExpireCycle(t0+10, 20)
	if n := len(e.side[0].ext.slots); n != 20 {
		t.Errorf("slab of %d slots after active expiry, want the 20 keys left", n)
	}
	if got := checkSlabs(t, e); got != 20 {
		t.Errorf("%d keys with Ext state, want 20", got)
	}
	for k, b := range before {
		if after := stateOf(t, e, []byte(k), t0+10); !bytes.Equal(after, b) {
			t.Errorf("%s: state %x after compaction, was %x", k, after, b)
		}
	}
	// The compacted slab grows again as keys come.
	for i := range 100 {
		set(fmt.Sprint("n", i), 1)
	}
	if got := checkSlabs(t, e); got != 120 {
		t.Errorf("%d keys with Ext state after new keys, want 120", got)
	}
}
