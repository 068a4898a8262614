package engine

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
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
	e := New(testClock(), 4)
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
	e := New(testClock(), 4)
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

// TestStringOfFloat: a float kept as its bits reads back as its "%.17g"
// text, is an integer exactly when that text is a canonical one, gives
// its float back, and serialises as the same text held as bytes would.
func TestStringOfFloat(t *testing.T) {
	t.Parallel()
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1, 1e16, 1e17 - 1, 1e17, -1e17, 99999999999999984,
		311234567.123456, 1.0000000000000001e-05, 2.5e-7, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), float64(math.MaxInt64), float64(math.MinInt64)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		floats = append(floats, math.Float64frombits(rng.Uint64()), rng.NormFloat64()*1e9, math.Round(rng.NormFloat64()*1e6))
	}
	for _, f := range floats {
		text := strconv.AppendFloat(nil, f, 'g', 17, 64)
		ent := StringOfFloat(f, t0)
		if got := AppendString(nil, ent); string(got) != string(text) {
			t.Fatalf("%v reads back as %q, want %q", f, got, text)
		}
		n, err := AddInt(ent, 0)
		isInt := err == nil
		want, wantInt := canonicalInt(text)
		if isInt != wantInt || n != want {
			t.Fatalf("%q as an integer: %d, %v; want %d, %v", text, n, isInt, want, wantInt)
		}
		got, ok := StringFloat(ent)
		parsed, _ := strconv.ParseFloat(string(text), 64)
		if same := got == parsed && math.Signbit(got) == math.Signbit(parsed); !ok || !same && !math.IsNaN(f) {
			t.Fatalf("%q as a float: %v, %v; want %v", text, got, ok, parsed)
		}
		b, err := ent.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := StringEntry(text, t0).AppendBinary(nil); string(b) != string(want) {
			t.Fatalf("%q serialises as %x, want %x", text, b, want)
		}
	}
	if _, ok := StringFloat(StringEntry([]byte("1.5"), 0)); ok {
		t.Error("a value kept as text reads as a number")
	}
}

func TestDecodeRejectsAFloatsBits(t *testing.T) {
	t.Parallel()
	raw := append([]byte{byte(KindString)}, 0) // no expiry
	raw = binary.AppendVarint(raw, int64(math.Float64bits(1.5)))
	raw = binary.AppendVarint(raw, strFloat)
	raw = append(raw, 0) // no Ext
	if _, _, err := DecodeEntry(raw); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeEntry of a string as a float's bits: %v, want ErrCorrupt", err)
	}
}
