package lease

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

const (
	ms = int64(1e6)
	t0 = int64(1_767_225_600_000_000_000)
)

// TestSteps walks one set through fixed instants, each step one call and
// what it must answer.
func TestSteps(t *testing.T) {
	type step struct {
		at      int64 // ms after t0
		op      string
		id      string
		ttl     int64 // ms
		limited bool
		remain  int64
		retry   int64 // ns; acquire only
		ok      bool  // release: released; renew: no error
		held    int64 // after the step
		latest  int64 // ms after t0, -1 for none
	}
	const limit = 2
	steps := []step{
		{at: 0, op: "acquire", id: "a", ttl: 100, remain: 1, retry: -1, held: 1, latest: 100},
		{at: 10, op: "acquire", id: "b", ttl: 50, remain: 0, retry: -1, held: 2, latest: 100},
		{at: 20, op: "acquire", id: "c", ttl: 100, limited: true, remain: 0, retry: 40 * ms, held: 2, latest: 100},
		// Re-acquiring a live id renews it and is admitted though full.
		{at: 20, op: "acquire", id: "b", ttl: 200, remain: 0, retry: -1, held: 2, latest: 220},
		{at: 30, op: "release", id: "a", ok: true, held: 1, latest: 220},
		{at: 30, op: "release", id: "a", ok: false, held: 1, latest: 220},
		{at: 31, op: "renew", id: "a", ttl: 10, ok: false, held: 1, latest: 220},
		{at: 40, op: "renew", id: "b", ttl: 10, ok: true, held: 1, latest: 50},
		// b expires at 50: at 50 it is gone, with nobody releasing it.
		{at: 50, op: "acquire", id: "d", ttl: 5, remain: 1, retry: -1, held: 1, latest: 55},
		{at: 50, op: "renew", id: "b", ttl: 10, ok: false, held: 1, latest: 55},
		{at: 54, op: "release", id: "b", ok: false, held: 1, latest: 55},
		{at: 55, op: "release", id: "d", ok: false, held: 0, latest: -1},
	}
	var s Set
	for i, st := range steps {
		now := t0 + st.at*ms
		switch st.op {
		case "acquire":
			d := s.Acquire(now, limit, 1, st.ttl*ms, st.id, true)
			if d.Limited != st.limited || d.Remaining != st.remain || d.RetryAfter != st.retry {
				t.Fatalf("step %d: %+v, want limited %v remaining %d retry %d", i, d, st.limited, st.remain, st.retry)
			}
		case "release":
			if got := s.Release(now, st.id); got != st.ok {
				t.Fatalf("step %d: released %v, want %v", i, got, st.ok)
			}
		case "renew":
			err := s.Renew(now, st.id, st.ttl*ms)
			if (err == nil) != st.ok || (err != nil && !errors.Is(err, ErrNoLease)) {
				t.Fatalf("step %d: renew: %v, want ok %v", i, err, st.ok)
			}
		}
		if s.Held() != st.held {
			t.Fatalf("step %d: held %d, want %d", i, s.Held(), st.held)
		}
		latest := int64(-1)
		if s.Len() > 0 {
			latest = (s.Latest() - t0) / ms
		}
		if latest != st.latest {
			t.Fatalf("step %d: latest t0+%dms, want t0+%dms", i, latest, st.latest)
		}
	}
}

// TestRetryAfterWeights: a weight that needs several leases to go waits
// for the one that frees the last permit it needs.
func TestRetryAfterWeights(t *testing.T) {
	var s Set
	s.Acquire(t0, 5, 2, 30*ms, "a", true)
	s.Acquire(t0, 5, 1, 10*ms, "b", true)
	s.Acquire(t0, 5, 2, 20*ms, "c", true)
	for _, c := range []struct{ weight, retry int64 }{
		{1, 10 * ms}, // b's one permit
		{2, 20 * ms}, // b's, then c's two
		{3, 20 * ms},
		{4, 30 * ms},
		{5, 30 * ms},
		{6, -1}, // never fits
	} {
		d := s.Peek(t0, 5, c.weight)
		if !d.Limited || d.RetryAfter != c.retry {
			t.Errorf("weight %d: %+v, want limited, retry %d", c.weight, d, c.retry)
		}
	}
}

// TestAgainstModel drives a set and a plain list of leases with the same
// random calls: held, latest, earliest and every answer agree, through the
// index the set builds past indexAt leases.
func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type ml struct{ exp, w int64 }
	model := map[string]ml{}
	var s Set
	now := t0
	const limit = 80
	for i := 0; i < 20000; i++ {
		now += rng.Int64N(3 * ms)
		for id, l := range model {
			if l.exp <= now {
				delete(model, id)
			}
		}
		id := string(rune('a' + rng.IntN(26)))
		id += string(rune('a' + rng.IntN(4)))
		var held int64
		for _, l := range model {
			held += l.w
		}
		switch rng.IntN(4) {
		case 0, 1:
			w, ttl := 1+rng.Int64N(3), 1+rng.Int64N(200*ms)
			d := s.Acquire(now, limit, w, ttl, id, true)
			if l, live := model[id]; live {
				if d.Limited || !d.Renewed {
					t.Fatalf("%d: re-acquire of live %q: %+v", i, id, d)
				}
				model[id] = ml{now + ttl, l.w}
			} else if held+w <= limit {
				if d.Limited {
					t.Fatalf("%d: %q of %d denied with %d held: %+v", i, id, w, held, d)
				}
				model[id] = ml{now + ttl, w}
			} else if !d.Limited || d.RetryAfter <= 0 {
				t.Fatalf("%d: %q of %d admitted with %d held: %+v", i, id, w, held, d)
			}
		case 2:
			_, live := model[id]
			if got := s.Release(now, id); got != live {
				t.Fatalf("%d: release %q = %v, live %v", i, id, got, live)
			}
			delete(model, id)
		case 3:
			ttl := 1 + rng.Int64N(200*ms)
			_, live := model[id]
			if err := s.Renew(now, id, ttl); (err == nil) != live {
				t.Fatalf("%d: renew %q: %v, live %v", i, id, err, live)
			}
			if live {
				model[id] = ml{now + ttl, model[id].w}
			}
		}
		s.Reclaim(now)
		held = 0
		var latest, earliest int64
		for _, l := range model {
			held += l.w
			latest = max(latest, l.exp)
			if earliest == 0 || l.exp < earliest {
				earliest = l.exp
			}
		}
		if s.Held() != held || s.Len() != len(model) || s.Latest() != latest || s.Earliest() != earliest {
			t.Fatalf("%d: held %d len %d latest %d earliest %d; model %d %d %d %d", i, s.Held(), s.Len(), s.Latest(), s.Earliest(), held, len(model), latest, earliest)
		}
		if i%500 == 0 {
			b := s.AppendBinary(nil)
			got, err := Decode(b)
			if err != nil || !bytes.Equal(got.AppendBinary(nil), b) || got.Held() != held || got.Latest() != latest {
				t.Fatalf("%d: round trip: %v", i, err)
			}
		}
	}
}

func TestDecodeRefusesCorrupt(t *testing.T) {
	var s Set
	s.Acquire(t0, 3, 1, ms, "a", true)
	s.Acquire(t0, 3, 1, ms, "b", true)
	good := s.AppendBinary(nil)
	dup := bytes.Replace(good, []byte("b"), []byte("a"), 1)
	zeroWeight := (&Set{heap: []Lease{{Expire: t0, Weight: 0, ID: "x"}}}).AppendBinary(nil)
	emptyID := (&Set{heap: []Lease{{Expire: t0, Weight: 1}}}).AppendBinary(nil)
	for name, b := range map[string][]byte{
		"truncated":   good[:len(good)-1],
		"trailing":    append(append([]byte(nil), good...), 0),
		"repeated id": dup,
		"zero weight": zeroWeight,
		"empty id":    emptyID,
		"huge count":  {0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestNewIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID()
		if len(id) != 32 || seen[id] {
			t.Fatalf("id %q (len %d, seen %v)", id, len(id), seen[id])
		}
		seen[id] = true
	}
}
