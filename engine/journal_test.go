package engine

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine/gcra"
)

// replayJournal encodes every unit it is told and applies it to a second
// engine, as a replica does: the copy must end equal to the original.
type replayJournal struct {
	mu    sync.Mutex
	units [][]byte // flushed flag, then key/entry pairs, encoded
}

func (r *replayJournal) Record(flushed bool, changes []Change) {
	var b []byte
	if flushed {
		b = append(b, 'F')
	} else {
		b = append(b, 'U')
	}
	for _, c := range changes {
		b = fmt.Appendf(b, "%d:", len(c.Key))
		b = append(b, c.Key...)
		if c.Entry.Kind == KindNone {
			b = append(b, 0)
			continue
		}
		enc, err := c.Entry.AppendBinary(nil)
		if err != nil {
			panic(err)
		}
		b = fmt.Appendf(b, "%c%d:", 1, len(enc))
		b = append(b, enc...)
	}
	r.mu.Lock()
	r.units = append(r.units, b)
	r.mu.Unlock()
}

func (r *replayJournal) Expired(keys [][]byte) {
	for _, k := range keys {
		r.Record(false, []Change{{Key: k}})
	}
}

func (r *replayJournal) applyTo(t *testing.T, e *Engine, now int64) {
	for _, u := range r.units {
		if u[0] == 'F' {
			e.Flush()
		}
		u = u[1:]
		for len(u) > 0 {
			var n int
			var key []byte
			fmt.Sscanf(string(u), "%d:", &n)
			u = u[bytes.IndexByte(u, ':')+1:]
			key, u = u[:n], u[n:]
			if u[0] == 0 {
				e.Delete(key, now)
				u = u[1:]
				continue
			}
			u = u[1:]
			fmt.Sscanf(string(u), "%d:", &n)
			u = u[bytes.IndexByte(u, ':')+1:]
			ent, _, err := DecodeEntry(u[:n])
			if err != nil {
				t.Fatal(err)
			}
			u = u[n:]
			e.Do(key, now, func(Entry) (Entry, bool) { return ent, true })
		}
	}
}

// keyspaceOf encodes every live key of e, sorted by nothing: a map. It is
// enginetest.Keyspace for this package's own tests, which cannot import
// enginetest (it imports engine).
func keyspaceOf(t *testing.T, e *Engine, now int64) map[string]string {
	out := map[string]string{}
	for i := 0; i < e.Shards(); i++ {
		e.RangeShard(i, now, func(key string, ent *Entry) bool {
			b, err := ent.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			out[key] = string(b)
			return true
		})
	}
	return out
}

func TestJournalReplaysToAnEqualKeyspace(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	e := New(clk, 8)
	j := &replayJournal{}
	e.SetJournal(j)
	rng := rand.New(rand.NewSource(1))
	gl, err := gcra.NewLimit(int64(time.Second)/5, 5)
	if err != nil {
		t.Fatal(err)
	}
	cell := CellLimiter{L: gl}
	log, err := NewSlidingLog(20, int64(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSlidingWindow(10, int64(time.Second), 4)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for n := 0; n < 3000; n++ {
				now := clk.Now()
				key := []byte(fmt.Sprint("k", rng.Intn(60)))
				switch rng.Intn(8) {
				case 0:
					Limit(e, append([]byte("cell:"), key...), now, cell, 1)
				case 1:
					Limit(e, append([]byte("log:"), key...), now, log, 1)
				case 2:
					Limit(e, append([]byte("sw:"), key...), now, sw, 1)
				case 3:
					e.SetString(key, now, []byte(fmt.Sprint("v", n)), SetOptions{Expire: now + int64(rng.Intn(3)+1)*int64(time.Second)}, nil)
				case 4:
					e.IncrBy(append([]byte("n:"), key...), now, 1)
				case 5:
					e.Delete(key, now)
				case 6:
					other := []byte(fmt.Sprint("k", rng.Intn(60)))
					e.SetStrings([][]byte{key, other}, [][]byte{[]byte("a"), []byte("b")}, now, false)
				case 7:
					e.Exclusive([][]byte{key}, false, func(tx *Engine) {
						tx.IncrBy(key, now, 1)
						tx.Delete(key, now)
						tx.SetString(key, now, []byte("tx"), SetOptions{}, nil)
					})
				}
			}
		}(int64(g))
	}
	for step := 0; step < 50; step++ {
		clk.Advance(100 * time.Millisecond)
		e.ExpireCycle(clk.Now(), 20)
		if rng.Intn(40) == 0 {
			e.Exclusive(nil, true, func(tx *Engine) { tx.Flush() })
		}
	}
	wg.Wait()
	now := clk.Now()
	copyEng := New(clk, 4)
	j.applyTo(t, copyEng, now)
	want, got := keyspaceOf(t, e, now), keyspaceOf(t, copyEng, now)
	if len(want) == 0 {
		t.Fatal("the load left no key: the test proves nothing")
	}
	if len(got) != len(want) {
		t.Errorf("the copy has %d keys, the original %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %q differs in the copy", k)
		}
	}
}

func TestJournalOffRecordsNothing(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	j := &replayJournal{}
	e.SetJournal(j)
	e.IncrBy([]byte("a"), t0, 1)
	e.SetJournal(nil)
	e.IncrBy([]byte("b"), t0, 1)
	e.Flush()
	if len(j.units) != 1 {
		t.Errorf("%d units recorded, want 1 (a write before SetJournal(nil))", len(j.units))
	}
}

// stepJournal keeps the calls of Expired and counts Record's.
type stepJournal struct {
	records int
	steps   [][]string
}

func (j *stepJournal) Record(bool, []Change) { j.records++ }

func (j *stepJournal) Expired(keys [][]byte) {
	var step []string
	for _, k := range keys {
		step = append(step, string(k))
	}
	j.steps = append(j.steps, step)
}

func TestExpiryTellsTheJournalAStepAtATime(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 1)
	for i := 0; i < 10; i++ {
		e.SetString([]byte(fmt.Sprint("k", i)), t0, []byte("v"), SetOptions{Expire: t0 + 1}, nil)
	}
	e.SetString([]byte("live"), t0, []byte("v"), SetOptions{}, nil)
	j := &stepJournal{}
	e.SetJournal(j)
	if n := e.ExpireCycle(t0+1, 20); n != 10 {
		t.Fatalf("the cycle deleted %d keys, want 10", n)
	}
	if j.records != 0 || len(j.steps) != 1 || len(j.steps[0]) != 10 {
		t.Fatalf("journal: %d records and steps %q; want one step of the 10 expired keys", j.records, j.steps)
	}
	told := map[string]bool{}
	for _, k := range j.steps[0] {
		told[k] = true
	}
	for i := 0; i < 10; i++ {
		if k := fmt.Sprint("k", i); !told[k] {
			t.Errorf("%s expired and was not told (told %q)", k, j.steps[0])
		}
	}
}

// lastJournal keeps the last change it was told, encoded.
type lastJournal struct {
	key   string
	entry []byte // nil: a deletion
}

func (j *lastJournal) Record(_ bool, changes []Change) {
	c := changes[len(changes)-1]
	j.key, j.entry = string(c.Key), nil
	if c.Entry.Kind != KindNone {
		b, err := c.Entry.AppendBinary(nil)
		if err != nil {
			panic(err)
		}
		j.entry = b
	}
}

func (j *lastJournal) Expired([][]byte) {}

// What Do tells the journal is what it stored, whether the journal is told
// the entry as written or the key is looked up again (storedState).
func TestDoTellsTheJournalWhatItStored(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ent  Entry
	}{
		{"limiter", Entry{Kind: KindGCRA, A: t0 + 5e9, Expire: t0 + 5e9}},
		{"A, B and C", Entry{Kind: KindTokenBucket, A: 3, B: 4, C: 5, Expire: t0 + 5e9}},
		{"not live: a deletion", Entry{Kind: KindGCRA, A: t0 - 1, Expire: t0 - 1}},
		{"none: a deletion", Entry{}},
		{"Ext state", Entry{Kind: KindString, Ext: []byte("v")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(testClock(), 2)
			j := &lastJournal{}
			e.SetJournal(j)
			key := []byte("k")
			e.Do(key, t0, func(Entry) (Entry, bool) { return Entry{Kind: KindGCRA, A: t0 + 1e9, Expire: t0 + 1e9}, true })
			e.Do(key, t0, func(Entry) (Entry, bool) { return c.ent, true })
			var want []byte
			if got, ok := e.Get(key, t0); ok {
				want, _ = got.AppendBinary(nil)
			}
			if j.key != "k" || string(j.entry) != string(want) {
				t.Errorf("journal told %q = %x, stored %x", j.key, j.entry, want)
			}
		})
	}
}
