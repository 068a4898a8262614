package engine

import (
	"errors"
	"math"
	"testing"
)

func TestStringValuesReadBackExactly(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "0", "42", "-7", "9223372036854775807", "-9223372036854775808",
		"007", "-0", "+1", " 1", "1.5", "9223372036854775808", "hello", "\x00\xff"} {
		ent := StringEntry([]byte(v), 0)
		if got := string(AppendString(nil, ent)); got != v {
			t.Errorf("%q reads back as %q", v, got)
		}
		b, err := ent.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		dec, _, err := DecodeEntry(b)
		if err != nil || string(AppendString(nil, dec)) != v {
			t.Errorf("%q after a snapshot round trip: %q, %v", v, AppendString(nil, dec), err)
		}
	}
	if ent := StringEntry([]byte("123"), 0); ent.Ext != nil || ent.A != 123 {
		t.Errorf("a canonical integer is not stored as a number: %+v", ent)
	}
}

func TestIncrBy(t *testing.T) {
	t.Parallel()
	e := New(nil, 4)
	key := []byte("n")
	steps := []struct {
		delta, want int64
		err         error
	}{
		{1, 1, nil}, {math.MaxInt64 - 1, math.MaxInt64, nil}, {1, 0, ErrIncrOverflow},
		{math.MinInt64, -1, nil}, {math.MinInt64, 0, ErrIncrOverflow}, {-5, -6, nil},
	}
	for i, s := range steps {
		got, err := e.IncrBy(key, t0, s.delta)
		if !errors.Is(err, s.err) || (err == nil && got != s.want) {
			t.Errorf("step %d: %d, %v; want %d, %v", i, got, err, s.want, s.err)
		}
	}
	e.SetString(key, t0, []byte("x"), SetOptions{}, nil)
	if _, err := e.IncrBy(key, t0, 1); !errors.Is(err, ErrNotInteger) {
		t.Errorf("INCR of a word: %v", err)
	}
}

func TestSetStringsLastValueWins(t *testing.T) {
	t.Parallel()
	e := New(nil, 4)
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a")}
	vals := [][]byte{[]byte("1"), []byte("2"), []byte("3")}
	if !e.SetStrings(keys, vals, t0, false) {
		t.Fatal("MSET refused")
	}
	if v, _, _ := e.GetString([]byte("a"), t0, nil); string(v) != "3" {
		t.Errorf("a = %q, want 3", v)
	}
	if e.SetStrings([][]byte{[]byte("c"), []byte("b")}, vals[:2], t0, true) {
		t.Error("MSETNX stored although b exists")
	}
	if _, ok, _ := e.GetString([]byte("c"), t0, nil); ok {
		t.Error("MSETNX stored c")
	}
}
