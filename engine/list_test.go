package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func listItems(l *List) []string {
	out := make([]string, l.Len())
	for i := range out {
		out[i] = string(l.Index(i))
	}
	return out
}

func TestListSteps(t *testing.T) {
	t.Parallel()
	l := NewList()
	steps := []struct {
		name string
		op   func()
		want string
	}{
		{"push head a", func() { l.PushHead([]byte("a")) }, "a"},
		{"push head b", func() { l.PushHead([]byte("b")) }, "b a"},
		{"push tail c", func() { l.PushTail([]byte("c")) }, "b a c"},
		{"insert x before 1", func() { l.Insert(1, []byte("x")) }, "b x a c"},
		{"insert y at the end", func() { l.Insert(4, []byte("y")) }, "b x a c y"},
		{"insert z at the head", func() { l.Insert(0, []byte("z")) }, "z b x a c y"},
		{"set 2 to a", func() { l.Set(2, []byte("a")) }, "z b a a c y"},
		{"remove every a", func() { l.Remove([]byte("a"), 0, false) }, "z b c y"},
		{"trim 1..2", func() { l.Trim(1, 2) }, "b c"},
		{"pop head", func() { l.PopHead() }, "c"},
		{"pop tail", func() { l.PopTail() }, ""},
	}
	for i, s := range steps {
		s.op()
		if got := strings.Join(listItems(l), " "); got != s.want {
			t.Fatalf("step %d (%s): %q, want %q", i, s.name, got, s.want)
		}
	}
	if l.items != nil {
		t.Fatal("an emptied list kept its slice")
	}
}

func TestListRemoveCountsFromEitherEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		count    int
		fromTail bool
		want     string
		removed  int
	}{
		{0, false, "b c", 4},
		{2, false, "b a c a", 2},
		{2, true, "a a b c", 2},
		{9, true, "b c", 4},
		{1, true, "a a b a c", 1},
	} {
		t.Run(fmt.Sprintf("%d tail %v", c.count, c.fromTail), func(t *testing.T) {
			l := NewList()
			for _, v := range strings.Fields("a a b a c a") {
				l.PushTail([]byte(v))
			}
			n := l.Remove([]byte("a"), c.count, c.fromTail)
			if got := strings.Join(listItems(l), " "); got != c.want || n != c.removed {
				t.Fatalf("%q, %d removed; want %q, %d", got, n, c.want, c.removed)
			}
		})
	}
}

// TestListMatchesAModel runs random operations on a List and on a plain
// slice: the same elements after each, the byte count exact, the slice
// never holding more than a few times what the list needs, and every state
// surviving the codec.
func TestListMatchesAModel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	l, model := NewList(), []string(nil)
	for step := 0; step < 20000; step++ {
		v := strings.Repeat(string(rune('a'+r.IntN(4))), r.IntN(3))
		n := len(model)
		switch op := r.IntN(9); {
		case op < 2 || n == 0:
			l.PushHead([]byte(v))
			model = slices.Insert(model, 0, v)
		case op < 4:
			l.PushTail([]byte(v))
			model = append(model, v)
		case op == 4:
			if got := string(l.PopHead()); got != model[0] {
				t.Fatalf("step %d: pop head %q, want %q", step, got, model[0])
			}
			model = model[1:]
		case op == 5:
			if got := string(l.PopTail()); got != model[n-1] {
				t.Fatalf("step %d: pop tail %q, want %q", step, got, model[n-1])
			}
			model = model[:n-1]
		case op == 6:
			i := r.IntN(n + 1)
			l.Insert(i, []byte(v))
			model = slices.Insert(model, i, v)
		case op == 7:
			start := r.IntN(n)
			stop := start + r.IntN(n-start)
			if r.IntN(8) == 0 { // grows it again, sometimes
				l.Trim(start, stop)
				model = model[start : stop+1]
			} else {
				i := r.IntN(n)
				l.Set(i, []byte(v))
				model[i] = v
			}
		default:
			count, fromTail := r.IntN(3), r.IntN(2) == 0
			got := l.Remove([]byte(v), count, fromTail)
			want := 0
			var kept []string
			order := slices.Clone(model)
			if fromTail {
				slices.Reverse(order)
			}
			for _, s := range order {
				if s == v && (count == 0 || want < count) {
					want++
					continue
				}
				kept = append(kept, s)
			}
			if fromTail {
				slices.Reverse(kept)
			}
			model = kept
			if got != want {
				t.Fatalf("step %d: removed %d, want %d", step, got, want)
			}
		}
		if !slices.Equal(listItems(l), model) && !(len(model) == 0 && l.Len() == 0) {
			t.Fatalf("step %d: %q, want %q", step, listItems(l), model)
		}
		var bytes int64
		for _, s := range model {
			bytes += int64(len(s))
		}
		if l.bytes != bytes {
			t.Fatalf("step %d: counts %d bytes, holds %d", step, l.bytes, bytes)
		}
		if c := cap(l.items); c > 32 && c > 4*len(model)+8 {
			t.Fatalf("step %d: a slice of %d for %d elements", step, c, len(model))
		}
		if step%500 == 0 && l.Len() > 0 {
			dec := roundTrip(t, Entry{Kind: KindList, Ext: l}).Ext.(*List)
			if !slices.Equal(listItems(dec), model) {
				t.Fatalf("step %d: decoded %q, want %q", step, listItems(dec), model)
			}
		}
	}
}

func TestListCopiesWhatItIsGiven(t *testing.T) {
	t.Parallel()
	l := NewList()
	v := []byte("abc")
	l.PushHead(v)
	l.PushTail(v)
	l.Insert(1, v)
	l.Set(0, v)
	copy(v, "xyz")
	if got := strings.Join(listItems(l), " "); got != "abc abc abc" {
		t.Fatalf("the list shares its caller's bytes: %q", got)
	}
	c := l.cloneExt().(*List)
	l.Set(0, []byte("new"))
	if string(c.Index(0)) != "abc" || c.extBytes() > l.extBytes() {
		t.Fatalf("the clone follows the list: %q", listItems(c))
	}
}
