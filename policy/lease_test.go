package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/lease"
)

// A concurrency policy: RL.HIT acquires a lease of the policy's period and
// tells its id, Release frees it (twice is not an error), Renew extends a
// live one, and a lease nobody releases frees its slot after the period.
func TestConcurrencyPolicyLeases(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "inflight", Algorithm: Concurrency, Limit: 2, Period: 30 * time.Second},
		Policy{Name: "rate", Algorithm: GCRA, Limit: 2, Period: time.Second})
	acquire := func(want bool) string {
		t.Helper()
		r, err := s.Hit(e, []byte("inflight"), []byte("u1"), clk.Now(), 1)
		if err != nil || !r.Leased || r.Limited == want || (r.Lease != "") != want {
			t.Fatalf("acquire: %+v %v, want admitted %v", r, err, want)
		}
		return r.Lease
	}
	a := acquire(true)
	b := acquire(true)
	acquire(false)
	if ok, err := s.Release(e, []byte("inflight"), []byte("u1"), a, clk.Now()); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if ok, err := s.Release(e, []byte("inflight"), []byte("u1"), a, clk.Now()); ok || err != nil {
		t.Fatalf("second release: %v %v, want nothing released and no error", ok, err)
	}
	c := acquire(true)
	clk.Advance(20 * time.Second)
	exp, err := s.Renew(e, []byte("inflight"), []byte("u1"), b, 0, clk.Now())
	if err != nil || exp != clk.Now()+int64(30*time.Second) {
		t.Fatalf("renew with the policy's period: %d %v", exp-clk.Now(), err)
	}
	// c was never released: at 30 s its slot frees by itself; b's renewal holds.
	clk.Advance(10 * time.Second)
	if _, err := s.Renew(e, []byte("inflight"), []byte("u1"), c, 0, clk.Now()); !errors.Is(err, lease.ErrNoLease) {
		t.Fatalf("renew of an expired lease: %v", err)
	}
	acquire(true)
	acquire(false)
	if _, err := s.Release(e, []byte("rate"), []byte("u1"), a, clk.Now()); !errors.Is(err, ErrNotConcurrency) {
		t.Fatalf("release on a gcra policy: %v", err)
	}
	if _, err := s.Release(e, []byte("nope"), []byte("u1"), a, clk.Now()); !errors.Is(err, ErrUnknown) {
		t.Fatalf("release on an unknown policy: %v", err)
	}
}

// RL.HITALL takes a concurrency policy's lease only when every pair
// admits, and tells its id then.
func TestConcurrencyPolicyHitAll(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "inflight", Algorithm: Concurrency, Limit: 5, Period: time.Minute},
		Policy{Name: "daily", Algorithm: FixedWindow, Limit: 1, Period: 24 * time.Hour})
	limited, rs, err := s.HitAll(e, pairs("inflight", "u", "daily", "u"), clk.Now(), 1)
	if err != nil || limited || !rs[0].Leased || len(rs[0].Lease) != 32 || rs[1].Leased {
		t.Fatalf("first: %v %+v %v", limited, rs, err)
	}
	id := rs[0].Lease
	limited, rs, err = s.HitAll(e, pairs("inflight", "u", "daily", "u"), clk.Now(), 1)
	if err != nil || !limited || rs[0].Lease != "" || rs[0].Remaining != 4 {
		t.Fatalf("denied by daily: %v %+v %v, want no lease taken", limited, rs, err)
	}
	if ok, _ := s.Release(e, []byte("inflight"), []byte("u"), id, clk.Now()); !ok {
		t.Fatal("the lease RL.HITALL told is not held")
	}
}

// The rules file takes a concurrency policy: limit slots, leases of
// period; a burst is refused, as for every algorithm without one.
func TestRulesFileConcurrency(t *testing.T) {
	t.Parallel()
	ps, err := ParseRules("limits.yaml", []byte("policies:\n  - name: inflight\n    algorithm: concurrency\n    limit: 20\n    period: 30s\n"))
	if err != nil || len(ps) != 1 || ps[0] != (Policy{Name: "inflight", Algorithm: Concurrency, Limit: 20, Period: 30 * time.Second}) {
		t.Fatalf("%+v %v", ps, err)
	}
	_, err = ParseRules("limits.yaml", []byte("policies:\n  - name: inflight\n    algorithm: concurrency\n    limit: 20\n    period: 30s\n    burst: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "concurrency has no burst") {
		t.Fatalf("a burst on a concurrency policy: %v", err)
	}
}

// RL.RESERVE on a concurrency policy says what to use instead.
func TestConcurrencyPolicyTakesNoReservations(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "inflight", Algorithm: Concurrency, Limit: 2, Period: time.Minute})
	_, err := s.Reserve(e, []byte("inflight"), []byte("u"), clk.Now(), 1, 0)
	if !errors.Is(err, ErrNoReservations) || !strings.Contains(err.Error(), "RL.RELEASE") {
		t.Fatalf("RL.RESERVE on a concurrency policy: %v", err)
	}
	if e.Len() != 0 {
		t.Fatal("a refused reservation wrote a key")
	}
}
