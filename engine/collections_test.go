package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// roundTrip encodes ent, decodes it and encodes it again: both encodings
// must be equal (a replica's copy serialises like its primary's).
func roundTrip(t *testing.T, ent Entry) Entry {
	t.Helper()
	b, err := ent.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, n, err := DecodeEntry(b)
	if err != nil || n != len(b) {
		t.Fatalf("decode: %v (%d of %d bytes)", err, n, len(b))
	}
	again, err := dec.AppendBinary(nil)
	if err != nil || string(again) != string(b) {
		t.Fatalf("re-encoded differently (%v)", err)
	}
	return dec
}

func hashFields(h *Hash) []string {
	var out []string
	h.Range(func(f, v []byte) bool {
		out = append(out, string(f)+"="+string(v))
		return true
	})
	return out
}

func TestHashKeepsInsertionOrderWhilePacked(t *testing.T) {
	t.Parallel()
	h := NewHash()
	steps := []struct {
		op, field, value string
		want             bool // added or deleted
		fields           string
	}{
		{"set", "a", "1", true, "a=1"},
		{"set", "b", "2", true, "a=1 b=2"},
		{"set", "a", "longer", false, "a=longer b=2"},
		{"set", "c", "", true, "a=longer b=2 c="},
		{"del", "b", "", true, "a=longer c="},
		{"del", "b", "", false, "a=longer c="},
		{"set", "b", "3", true, "a=longer c= b=3"},
		{"set", "a", "x", false, "a=x c= b=3"},
		{"del", "a", "", true, "c= b=3"},
	}
	for i, s := range steps {
		var got bool
		if s.op == "set" {
			got = h.Set([]byte(s.field), []byte(s.value))
		} else {
			got = h.Delete([]byte(s.field))
		}
		if got != s.want || strings.Join(hashFields(h), " ") != s.fields || h.Len() != len(strings.Fields(s.fields)) {
			t.Fatalf("step %d: %s %s = %v, fields %q, want %v, %q", i, s.op, s.field, got, hashFields(h), s.want, s.fields)
		}
	}
	if v, ok := h.Get([]byte("b")); !ok || string(v) != "3" {
		t.Fatalf("Get b = %q, %v", v, ok)
	}
	if h.Encoding() != "listpack" {
		t.Fatalf("encoding %s", h.Encoding())
	}
	dec := roundTrip(t, Entry{Kind: KindHash, Ext: h}).Ext.(*Hash)
	if !slices.Equal(hashFields(dec), hashFields(h)) {
		t.Fatalf("decoded %v, want %v", hashFields(dec), hashFields(h))
	}
}

func TestHashConvertsPastRedisThresholds(t *testing.T) {
	t.Parallel()
	h := NewHash()
	for i := 0; i < maxPackedEntries; i++ {
		h.Set([]byte(fmt.Sprint("f", i)), []byte("v"))
	}
	if h.Encoding() != "listpack" {
		t.Fatal("128 fields converted")
	}
	h.Set([]byte("one more"), []byte("v"))
	if h.Encoding() != "hashtable" || h.Len() != maxPackedEntries+1 {
		t.Fatalf("129 fields: %s, %d", h.Encoding(), h.Len())
	}
	for i := 0; i < 100; i++ {
		h.Delete([]byte(fmt.Sprint("f", i)))
	}
	if h.Encoding() != "hashtable" {
		t.Fatal("a converted hash went back by shrinking")
	}
	if v, ok := h.Get([]byte("f100")); !ok || string(v) != "v" {
		t.Fatalf("f100 = %q, %v after conversion", v, ok)
	}
	dec := roundTrip(t, Entry{Kind: KindHash, Ext: h}).Ext.(*Hash)
	if dec.Encoding() != "listpack" || dec.Len() != 29 {
		t.Fatalf("loaded again: %s, %d fields; want listpack, 29", dec.Encoding(), dec.Len())
	}

	long := NewHash()
	long.Set([]byte("f"), []byte(strings.Repeat("v", maxPackedValue)))
	if long.Encoding() != "listpack" {
		t.Fatal("a 64-byte value converted")
	}
	long.Set([]byte("g"), []byte(strings.Repeat("v", maxPackedValue+1)))
	if long.Encoding() != "hashtable" || long.Len() != 2 {
		t.Fatalf("a 65-byte value: %s, %d", long.Encoding(), long.Len())
	}
}

func setMembers(s *Set) []string {
	var out []string
	s.Range(func(m []byte) bool {
		out = append(out, string(m))
		return true
	})
	return out
}

func TestSetIsAnIntsetUntilItCannotBe(t *testing.T) {
	t.Parallel()
	s := NewSet()
	for _, m := range []string{"10", "-3", "7", "10"} {
		s.Add([]byte(m))
	}
	if got := setMembers(s); !slices.Equal(got, []string{"-3", "7", "10"}) || s.Encoding() != "intset" {
		t.Fatalf("members %v (%s), want numeric order in an intset", got, s.Encoding())
	}
	if s.Has([]byte("010")) || !s.Has([]byte("7")) {
		t.Fatal("Has reads members as numbers, not text")
	}
	s.Add([]byte("010"))
	if s.Encoding() != "hashtable" || s.Len() != 4 || !s.Has([]byte("-3")) || !s.Has([]byte("010")) {
		t.Fatalf("after a non-canonical member: %s, %v", s.Encoding(), setMembers(s))
	}
	if !s.Remove([]byte("7")) || s.Remove([]byte("7")) || s.Len() != 3 {
		t.Fatal("Remove")
	}
	roundTrip(t, Entry{Kind: KindSet, Ext: s})

	big := NewSet()
	for i := 0; i < maxIntsetEntries; i++ {
		big.Add([]byte(fmt.Sprint(i)))
	}
	if big.Encoding() != "intset" {
		t.Fatal("512 integers converted")
	}
	big.Add([]byte("512"))
	if big.Encoding() != "hashtable" || big.Len() != 513 || !big.Has([]byte("0")) {
		t.Fatalf("513 integers: %s, %d", big.Encoding(), big.Len())
	}
}

func zitems(z *ZSet) []string {
	var out []string
	z.Scan(0, false, func(it ZItem) bool {
		out = append(out, fmt.Sprintf("%s:%g", it.Member, it.Score))
		return true
	})
	return out
}

func TestZSetOrderRanksAndRanges(t *testing.T) {
	t.Parallel()
	for _, n := range []int{5, 300} { // listpack, then skiplist
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			z := NewZSet()
			for i := n - 1; i >= 0; i-- {
				z.Set(float64(i/2), []byte(fmt.Sprintf("m%03d", i))) // pairs share a score: member order
			}
			wantEnc := "listpack"
			if n > maxPackedEntries {
				wantEnc = "skiplist"
			}
			if z.Encoding() != wantEnc || z.Len() != n {
				t.Fatalf("%s with %d, want %s with %d", z.Encoding(), z.Len(), wantEnc, n)
			}
			for i := 0; i < n; i++ {
				if r, ok := z.Rank([]byte(fmt.Sprintf("m%03d", i))); !ok || r != i {
					t.Fatalf("rank of m%03d = %d, %v", i, r, ok)
				}
				if it := z.At(i); it.Member != fmt.Sprintf("m%03d", i) {
					t.Fatalf("At(%d) = %v", i, it)
				}
			}
			ranges := []struct {
				r    ScoreRange
				want int
			}{
				{ScoreRange{Min: 0, Max: 1}, 4},
				{ScoreRange{Min: 0, Max: 1, MinEx: true}, 2},
				{ScoreRange{Min: 0, Max: 1, MaxEx: true}, 2},
				{ScoreRange{Min: 1, Max: 0}, 0},
				{ScoreRange{Min: -1e9, Max: 1e9}, n},
			}
			for _, c := range ranges {
				if got := z.CountRange(c.r); got != c.want {
					t.Errorf("CountRange(%+v) = %d, want %d", c.r, got, c.want)
				}
				var fwd, rev []string
				z.AscendRange(c.r, false, func(it ZItem) bool { fwd = append(fwd, it.Member); return true })
				z.AscendRange(c.r, true, func(it ZItem) bool { rev = append(rev, it.Member); return true })
				slices.Reverse(rev)
				if len(fwd) != c.want || !slices.Equal(fwd, rev) {
					t.Errorf("AscendRange(%+v): %v forward, %v reversed back", c.r, fwd, rev)
				}
			}
			z.Set(-1, []byte("m001")) // moves to the front
			if it := z.At(0); it.Member != "m001" || it.Score != -1 {
				t.Fatalf("after a score change the first item is %v", it)
			}
			if got := z.RemoveRanks(1, 2); got != 2 || z.Len() != n-2 {
				t.Fatalf("RemoveRanks removed %d, left %d", got, z.Len())
			}
			if it, ok := z.PopMin(); !ok || it.Member != "m001" {
				t.Fatalf("PopMin = %v", it)
			}
			before := zitems(z)
			dec := roundTrip(t, Entry{Kind: KindZSet, Ext: z}).Ext.(*ZSet)
			if !slices.Equal(zitems(dec), before) {
				t.Fatal("a round trip changed the set")
			}
			if got := z.RemoveRange(ScoreRange{Min: -1e9, Max: 1e9}); got != n-3 || z.Len() != 0 {
				t.Fatalf("RemoveRange removed %d, left %d", got, z.Len())
			}
		})
	}
}

func TestZSetScoreZeroIsPositive(t *testing.T) {
	t.Parallel()
	z := NewZSet()
	z.Set(negZero(), []byte("a"))
	if s, _ := z.Score([]byte("a")); 1/s < 0 {
		t.Fatal("kept -0, which Redis answers as 0")
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestCollectionsInTheKeyspace(t *testing.T) {
	t.Parallel()
	e := New(clock.NewFake(t0), 4)
	j := &replayJournal{}
	e.SetJournal(j)
	key := []byte("h")
	found, err := e.DoHash(key, t0, false, func(*Hash) bool { t.Fatal("ran on an absent key without create"); return false })
	if found || err != nil {
		t.Fatalf("absent: %v, %v", found, err)
	}
	e.DoHash(key, t0, true, func(*Hash) bool { return false }) // nothing set: nothing stored
	if _, _, ok := e.Peek(key, t0); ok {
		t.Fatal("an untouched new hash was stored")
	}
	e.DoHash(key, t0, true, func(h *Hash) bool { h.Set([]byte("f"), []byte("v")); return true })
	if kind, _, ok := e.Peek(key, t0); !ok || kind != KindHash {
		t.Fatalf("after HSET: %v, %v", kind, ok)
	}
	if _, err := e.DoSet(key, t0, true, func(*Set) bool { return true }); !errors.Is(err, ErrWrongType) {
		t.Fatalf("a set operation on a hash: %v", err)
	}
	if _, _, err := e.GetString(key, t0, nil); !errors.Is(err, ErrWrongType) {
		t.Fatalf("GET on a hash: %v", err)
	}
	copied, _ := e.Get(key, t0)
	e.DoHash(key, t0, false, func(h *Hash) bool { h.Set([]byte("g"), []byte("w")); return true })
	if copied.Ext.(*Hash).Len() != 1 {
		t.Fatal("Get's copy changed with the key")
	}
	if set, err := e.SetExpire(key, t0, t0+100, ExpireAlways); !set || err != nil {
		t.Fatalf("EXPIRE on a hash: %v, %v", set, err)
	}
	e.DoHash(key, t0, false, func(h *Hash) bool { h.Delete([]byte("f")); return true })
	if _, exp, _ := e.Peek(key, t0); exp != t0+100 {
		t.Fatalf("a write lost the expiry: %d", exp)
	}
	e.DoHash(key, t0, false, func(h *Hash) bool { h.Delete([]byte("g")); return true })
	if _, _, ok := e.Peek(key, t0); ok {
		t.Fatal("an emptied hash kept its key")
	}
	if e.UsedBytes() != 0 {
		t.Fatalf("UsedBytes %d with no keys", e.UsedBytes())
	}
	e.DoZSet([]byte("z"), t0, true, func(z *ZSet) bool { z.Set(1, []byte("a")); return true })
	e.DoSet([]byte("s"), t0, true, func(s *Set) bool { s.Add([]byte("1")); return true })
	e.DoList([]byte("l"), t0, true, func(l *List) bool { l.PushHead([]byte("a")); l.PushTail([]byte("b")); return true })
	e.DoList([]byte("l"), t0, false, func(l *List) bool { l.PopHead(); return true })
	e.DoList([]byte("gone"), t0, true, func(l *List) bool { l.PushHead([]byte("a")); return true })
	e.DoList([]byte("gone"), t0, false, func(l *List) bool { l.PopTail(); return true })
	replica := New(clock.NewFake(t0), 4)
	j.applyTo(t, replica, t0)
	want, got := keyspaceOf(t, e, t0), keyspaceOf(t, replica, t0)
	if len(want) != 3 || fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("the journal's replay differs: %q, want %q", got, want)
	}
}

// TestCollectionMemoryIsAccounted: UsedBytes is the sum of KeyBytes over
// the keys while collections grow, convert, shrink and go.
func TestCollectionMemoryIsAccounted(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	keys := []string{"h", "s", "z", "l"}
	check := func(step string) {
		t.Helper()
		var sum int64
		for _, k := range keys {
			n, _ := e.KeyBytes([]byte(k), t0)
			sum += n
		}
		if got := e.UsedBytes(); got != sum {
			t.Fatalf("%s: UsedBytes %d, sum of KeyBytes %d", step, got, sum)
		}
	}
	for i := 0; i < 600; i++ {
		m := []byte(fmt.Sprint(i))
		e.DoHash([]byte("h"), t0, true, func(h *Hash) bool { return h.Set(m, m) })
		e.DoSet([]byte("s"), t0, true, func(s *Set) bool { return s.Add(m) })
		e.DoZSet([]byte("z"), t0, true, func(z *ZSet) bool { return z.Set(float64(i), m) })
		e.DoList([]byte("l"), t0, true, func(l *List) bool { l.PushHead(m); return true })
		if i == 5 || i == 200 {
			check(fmt.Sprint("grown to ", i+1))
		}
	}
	if n, _ := e.KeyBytes([]byte("h"), t0); n < 600*10 {
		t.Fatalf("a 600-field hash is only %d bytes", n)
	}
	check("converted")
	for i := 0; i < 600; i++ {
		m := []byte(fmt.Sprint(i))
		e.DoHash([]byte("h"), t0, false, func(h *Hash) bool { return h.Delete(m) })
		e.DoSet([]byte("s"), t0, false, func(s *Set) bool { return s.Remove(m) })
		e.DoZSet([]byte("z"), t0, false, func(z *ZSet) bool { return z.Remove(m) })
		e.DoList([]byte("l"), t0, false, func(l *List) bool { l.PopTail(); return true })
		if i == 300 {
			check("shrunk")
		}
	}
	check("emptied")
	if e.UsedBytes() != 0 {
		t.Fatalf("UsedBytes %d after every key went", e.UsedBytes())
	}
}

func TestIncrByFloatAddsInLongDouble(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 1)
	key := []byte("f")
	// What Redis 7.0 answers on x86-64 for the same sequence.
	steps := []struct{ incr, want string }{
		{"0.1", "0.1"}, {"0.2", "0.3"}, {"-0.3", "0"}, {"1e3", "1000"}, {"3.0000000000000000001", "1003"},
		{"-1003.5", "-0.5"}, {"1.5e10", "14999999999.5"},
	}
	for i, s := range steps {
		incr, ok := ParseLongDouble([]byte(s.incr))
		if !ok {
			t.Fatalf("step %d: %q does not parse", i, s.incr)
		}
		got, err := e.IncrByFloat(key, t0, incr)
		if err != nil || string(got) != s.want {
			t.Fatalf("step %d: + %s = %q (%v), want %q", i, s.incr, got, err, s.want)
		}
	}
	for _, bad := range []string{"", " 1", "1 ", "abc", "nan", "0b1", "1e5000", "1e-5000", "1_000"} {
		if _, ok := ParseLongDouble([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if f, ok := ParseLongDouble([]byte("0x10")); !ok || string(AppendLongDouble(nil, f)) != "16" {
		t.Errorf("0x10 reads as %v, %v; strtold reads 16", f, ok)
	}
	inf, _ := ParseLongDouble([]byte("-inf"))
	if _, err := e.IncrByFloat(key, t0, inf); !errors.Is(err, ErrNaNOrInf) {
		t.Fatalf("adding -inf: %v", err)
	}
	e.SetString([]byte("s"), t0, []byte("x"), SetOptions{}, nil)
	one, _ := ParseLongDouble([]byte("1"))
	if _, err := e.IncrByFloat([]byte("s"), t0, one); !errors.Is(err, ErrNotFloat) {
		t.Fatalf("a text value: %v", err)
	}
}

// TestRenameMovesEveryKind: RENAME moves any kind's state, Ext state in
// slots or in a sliding log's words included, leaving the source absent,
// the accounting exact and the moved state independent of the old one.
func TestRenameMovesEveryKind(t *testing.T) {
	t.Parallel()
	e := New(clock.NewFake(t0), 4)
	log, err := NewSlidingLog(20, int64(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSlidingWindow(10, int64(time.Second), 4)
	if err != nil {
		t.Fatal(err)
	}
	Limit(e, []byte("log"), t0, log, 3)
	Limit(e, []byte("sw"), t0, sw, 2)
	e.SetString([]byte("str"), t0, []byte("text"), SetOptions{Expire: t0 + 5e9}, nil)
	e.DoHash([]byte("h"), t0, true, func(h *Hash) bool { return h.Set([]byte("f"), []byte("v")) })
	e.DoZSet([]byte("z"), t0, true, func(z *ZSet) bool { return z.Set(1, []byte("m")) })
	e.DoList([]byte("l"), t0, true, func(l *List) bool { l.PushTail([]byte("e")); return true })
	for _, k := range []string{"log", "sw", "str", "h", "z", "l"} {
		before := keyspaceOf(t, e, t0)[k]
		if done, err := e.Rename([]byte(k), []byte(k+"2"), t0, false); !done || err != nil {
			t.Fatalf("rename %s: %v, %v", k, done, err)
		}
		after := keyspaceOf(t, e, t0)
		if _, ok := after[k]; ok || after[k+"2"] != before {
			t.Fatalf("rename %s: source left or state changed", k)
		}
	}
	if _, err := e.Rename([]byte("absent"), []byte("x"), t0, false); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("renaming an absent key: %v", err)
	}
	if done, _ := e.Rename([]byte("h2"), []byte("z2"), t0, true); done {
		t.Fatal("RENAMENX replaced an existing key")
	}
	e.DoHash([]byte("h2"), t0, false, func(h *Hash) bool { return h.Set([]byte("g"), []byte("w")) })
	Limit(e, []byte("log2"), t0, log, 1)
	e.DoList([]byte("l2"), t0, false, func(l *List) bool { l.PushTail([]byte("f")); return true })
	var sum int64
	for _, k := range []string{"log2", "sw2", "str2", "h2", "z2", "l2"} {
		n, ok := e.KeyBytes([]byte(k), t0)
		if !ok {
			t.Fatalf("%s gone", k)
		}
		sum += n
	}
	if e.UsedBytes() != sum {
		t.Fatalf("UsedBytes %d, sum of KeyBytes %d", e.UsedBytes(), sum)
	}
}

// BenchmarkHashGet is HMGET's lookup in a packed hash of 20 short fields,
// as a bottleneck limiter's settings: a field near the end.
func BenchmarkHashGet(b *testing.B) {
	h := NewHash()
	for i := range 20 {
		h.Set([]byte(fmt.Sprintf("field%d", i)), []byte(fmt.Sprint(i*1000)))
	}
	field := []byte("field17")
	b.ResetTimer()
	for range b.N {
		if _, ok := h.Get(field); !ok {
			b.Fatal("missing")
		}
	}
}

// TestZSetAgainstAModel runs random operations on sorted sets that stay
// small (packed), that grow past 128 members, and that take a long member,
// and after each compares every answer and the whole order with a sorted
// slice; clones and round trips must equal the original.
func TestZSetAgainstAModel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		members int
		long    bool
	}{{"small", 40, false}, {"growing", 300, false}, {"long member", 40, true}} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(c.members)))
			z := NewZSet()
			var model []ZItem
			find := func(m string) int {
				return slices.IndexFunc(model, func(it ZItem) bool { return it.Member == m })
			}
			member := func() string {
				m := fmt.Sprintf("m%d", r.Intn(c.members))
				if c.long && r.Intn(20) == 0 {
					m += strings.Repeat("x", maxPackedValue)
				}
				return m
			}
			if c.members > maxPackedEntries { // past the packed form first
				for i := 0; i < c.members; i++ {
					z.Set(float64(i%7), []byte(fmt.Sprintf("m%d", i)))
					model = append(model, ZItem{float64(i % 7), fmt.Sprintf("m%d", i)})
				}
				slices.SortFunc(model, zcompare)
			}
			for step := 0; step < 3000; step++ {
				score := float64(r.Intn(20) - 5)
				switch op := r.Intn(10); {
				case op < 5:
					m := member()
					i := find(m)
					added := z.Set(score, []byte(m))
					if added != (i < 0) {
						t.Fatalf("step %d: Set(%v, %s) added %v", step, score, m, added)
					}
					if i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
					model = append(model, ZItem{score, m})
					slices.SortFunc(model, zcompare)
				case op == 5:
					m := member()
					i := find(m)
					if got := z.Remove([]byte(m)); got != (i >= 0) {
						t.Fatalf("step %d: Remove(%s) = %v", step, m, got)
					}
					if i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
				case op == 6:
					rg := ScoreRange{Min: score, Max: score + float64(r.Intn(4)), MinEx: r.Intn(2) == 0, MaxEx: r.Intn(2) == 0}
					var want []ZItem
					for _, it := range model {
						if rg.aboveMin(it.Score) && rg.belowMax(it.Score) {
							want = append(want, it)
						}
					}
					var fwd, rev []ZItem
					z.AscendRange(rg, false, func(it ZItem) bool { fwd = append(fwd, it); return true })
					z.AscendRange(rg, true, func(it ZItem) bool { rev = append(rev, it); return true })
					slices.Reverse(rev)
					if z.CountRange(rg) != len(want) || !slices.Equal(fwd, want) || !slices.Equal(rev, want) {
						t.Fatalf("step %d: range %+v: count %d, %v, reversed %v, want %v", step, rg, z.CountRange(rg), fwd, rev, want)
					}
					if r.Intn(3) == 0 {
						if got := z.RemoveRange(rg); got != len(want) {
							t.Fatalf("step %d: RemoveRange removed %d, want %d", step, got, len(want))
						}
						model = slices.DeleteFunc(model, func(it ZItem) bool { return rg.aboveMin(it.Score) && rg.belowMax(it.Score) })
					}
				case op == 7 && len(model) > 0:
					a := r.Intn(len(model))
					b := a + r.Intn(3)
					got := z.RemoveRanks(a, min(b, len(model)-1))
					if want := min(b, len(model)-1) - a + 1; got != want {
						t.Fatalf("step %d: RemoveRanks(%d, %d) = %d, want %d", step, a, b, got, want)
					}
					model = slices.Delete(model, a, min(b, len(model)-1)+1)
				case op == 8 && len(model) > 0:
					pop, want := z.PopMin, model[0]
					if r.Intn(2) == 0 {
						pop, want = z.PopMax, model[len(model)-1]
					}
					if it, ok := pop(); !ok || it != want {
						t.Fatalf("step %d: pop = %v, want %v", step, it, want)
					}
					model = slices.DeleteFunc(model, func(it ZItem) bool { return it == want })
				default:
					m := member()
					i := find(m)
					s, ok := z.Score([]byte(m))
					rank, rok := z.Rank([]byte(m))
					if ok != (i >= 0) || rok != ok || (ok && (s != model[i].Score || rank != i)) {
						t.Fatalf("step %d: Score/Rank(%s) = %v %v %d %v, model index %d", step, m, s, ok, rank, rok, i)
					}
				}
				if got := zlist(z); z.Len() != len(model) || !slices.Equal(got, model) {
					t.Fatalf("step %d: set %v, model %v", step, got, model)
				}
				for i, it := range model {
					if z.At(i) != it {
						t.Fatalf("step %d: At(%d) = %v, want %v", step, i, z.At(i), it)
					}
				}
				if step%100 == 0 {
					if clone := z.cloneExt().(*ZSet); !slices.Equal(zlist(clone), model) || clone.Encoding() != z.Encoding() {
						t.Fatalf("step %d: clone differs", step)
					}
					dec := roundTrip(t, Entry{Kind: KindZSet, Ext: z}).Ext.(*ZSet)
					if !slices.Equal(zlist(dec), model) {
						t.Fatalf("step %d: round trip differs", step)
					}
				}
			}
			if c.members > maxPackedEntries && z.Encoding() != "skiplist" {
				t.Errorf("a set that grew to %d members is %s", c.members, z.Encoding())
			}
		})
	}
}

// zcompare orders items as a sorted set does, for slices.SortFunc.
func zcompare(a, b ZItem) int {
	switch {
	case zless(a, b):
		return -1
	case zless(b, a):
		return 1
	}
	return 0
}

// zlist is z's items in order.
func zlist(z *ZSet) []ZItem {
	var out []ZItem
	z.Scan(0, false, func(it ZItem) bool { out = append(out, it); return true })
	return out
}
