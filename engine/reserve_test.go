package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/limitdb/limitdb/clock"
)

// reserveOn reserves cost on key with a and returns the id.
func reserveOn(t *testing.T, e *Engine, key string, a Adjuster, now, cost, ttl int64) ReservationID {
	t.Helper()
	var id ReservationID
	var err error
	var ok bool
	e.Do([]byte(key), now, func(ent Entry) (Entry, bool) {
		var next Entry
		next, _, id, ok, err = Reserve(ent, a, now, cost, ttl, false)
		return next, ok && err == nil
	})
	if err != nil || !ok {
		t.Fatalf("reserve %d on %s: admitted %v, %v", cost, key, ok, err)
	}
	return id
}

// TestReservedRoundTrip: a key with reservations open, on each algorithm
// that takes them (a sliding window's counts past 32 bits in Ext state
// too), decodes from its serialised form to an entry that encodes the
// same and settles the same.
func TestReservedRoundTrip(t *testing.T) {
	t.Parallel()
	tb, _ := NewTokenBucket(10, 1, 1e9)
	fw, _ := NewFixedWindow(10, 60e9)
	sw, _ := NewSlidingWindow(1<<40, 60e9, 1)
	for _, tc := range []struct {
		name string
		a    Adjuster
		cost int64
	}{{"tbucket", tb, 4}, {"fwindow", fw, 3}, {"swindow-ext", sw, 1 << 33}} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(clock.NewFake(t0), 1)
			id := reserveOn(t, e, "k", tc.a, t0, tc.cost, 60e9)
			reserveOn(t, e, "k", tc.a, t0+1, tc.cost, 30e9)
			ent, _ := e.Get([]byte("k"), t0+2)
			if ent.Kind != KindReserve {
				t.Fatalf("kind %v, want %v", ent.Kind, KindReserve)
			}
			b, err := ent.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			got, n, err := DecodeEntry(b)
			if err != nil || n != len(b) {
				t.Fatalf("decode: n=%d of %d, %v", n, len(b), err)
			}
			b2, _ := got.AppendBinary(nil)
			if !bytes.Equal(b, b2) {
				t.Fatalf("re-encoded %x, want %x", b2, b)
			}
			_, r1, s1, _, err1 := Settle(ent, tc.a, t0+3, id, 1)
			_, r2, s2, _, err2 := Settle(got, tc.a, t0+3, id, 1)
			if r1 != r2 || s1 != s2 || err1 != nil || err2 != nil || s1 != Settled {
				t.Fatalf("settle on the original: %+v %v %v; on the decoded: %+v %v %v", r1, s1, err1, r2, s2, err2)
			}
		})
	}
}

func TestReservedDecodeRejectsCorruption(t *testing.T) {
	t.Parallel()
	tb, _ := NewTokenBucket(10, 1, 1e9)
	e := New(clock.NewFake(t0), 1)
	reserveOn(t, e, "k", tb, t0, 3, 60e9)
	ent, _ := e.Get([]byte("k"), t0)
	good, _ := ent.AppendBinary(nil)
	str, _ := Entry{Kind: KindString, Ext: []byte("x")}.AppendBinary(nil)
	inner := append([]byte{byte(KindReserve), 0, 0, 0, byte(len(str) + 3)}, str...)
	inner = append(inner, 2, 2, 0) // seq 1, last 1, no reservation: around a string
	for i, b := range [][]byte{good[:len(good)-1], inner} {
		if _, _, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("case %d: DecodeEntry err = %v, want ErrCorrupt", i, err)
		}
	}
}

// TestReservationMemory measures what one more open reservation costs a
// key (MEMORY USAGE, maxmemory): reservationBytes, 32 bytes, and about 10
// bytes of its serialised form in snapshots and the change stream.
func TestReservationMemory(t *testing.T) {
	t.Parallel()
	tb, _ := NewTokenBucket(1<<20, 1<<20, 1e9)
	e := New(clock.NewFake(t0), 1)
	reserveOn(t, e, "k", tb, t0, 1, 60e9)
	one, _ := e.KeyBytes([]byte("k"), t0)
	ent, _ := e.Get([]byte("k"), t0)
	b1, _ := ent.AppendBinary(nil)
	const n = 1000
	for i := 1; i < n; i++ {
		reserveOn(t, e, "k", tb, t0+int64(i), 1, 60e9)
	}
	many, _ := e.KeyBytes([]byte("k"), t0+n)
	ent, _ = e.Get([]byte("k"), t0+n)
	bn, _ := ent.AppendBinary(nil)
	per := (many - one) / (n - 1)
	t.Logf("per open reservation: %d bytes in memory, %d bytes serialised", per, (len(bn)-len(b1))/(n-1))
	if per != reservationBytes {
		t.Errorf("per open reservation: %d bytes, want %d", per, reservationBytes)
	}
}

// TestSettleOnce: the same id settles once; the second says so and
// changes nothing; an id past its deadline is expired; one never issued
// is unknown; the key goes back to its algorithm's kind once nothing is
// open and every id issued has expired.
func TestSettleOnce(t *testing.T) {
	t.Parallel()
	fw, _ := NewFixedWindow(10, 600e9)
	e := New(clock.NewFake(t0), 1)
	id := reserveOn(t, e, "k", fw, t0, 5, 10e9)
	settle := func(now int64, id ReservationID) (SettleStatus, int64, error) {
		var st SettleStatus
		var rem int64
		var err error
		e.Do([]byte("k"), now, func(ent Entry) (Entry, bool) {
			next, r, s, w, serr := Settle(ent, fw, now, id, 1)
			st, rem, err = s, r.Remaining, serr
			return next, w
		})
		return st, rem, err
	}
	for i, step := range []struct {
		now  int64
		id   ReservationID
		st   SettleStatus
		rem  int64
		err  error
		kind Kind
	}{
		{t0 + 1, id, Settled, 9, nil, KindReserve},
		{t0 + 2, id, SettledAlready, 9, nil, KindReserve},
		{t0 + 3, ReservationID{Deadline: id.Deadline, Seq: 2}, 0, 0, ErrReservationUnknown, KindReserve},
		{t0 + 10e9, id, 0, 0, ErrReservationExpired, KindReserve},
	} {
		st, rem, err := settle(step.now, step.id)
		kind, _, _ := e.Peek([]byte("k"), step.now)
		if st != step.st || rem != step.rem || !errors.Is(err, step.err) || kind != step.kind {
			t.Errorf("step %d: %v, remaining %d, %v, kind %v; want %v, %d, %v, %v", i, st, rem, err, kind, step.st, step.rem, step.err, step.kind)
		}
	}
	// The next write of the key (a request) drops the wrapper.
	e.Do([]byte("k"), t0+10e9, func(ent Entry) (Entry, bool) {
		inner, _ := Reservations(ent, KindFixedWindow, t0+10e9)
		next, _, _, _ := fw.Apply(inner, t0+10e9, 1)
		return Rewrap(ent, next, t0+10e9), true
	})
	if kind, _, _ := e.Peek([]byte("k"), t0+10e9); kind != KindFixedWindow {
		t.Errorf("after a request past every deadline: kind %v, want %v", kind, KindFixedWindow)
	}
}
