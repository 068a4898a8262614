package rls

import (
	"errors"
	"testing"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// RLS.CHARGE's arguments carry a charge to another node unchanged: the
// node that parses them charges exactly what Apply would have charged
// where they were made.
func TestChargeArgsRoundTrip(t *testing.T) {
	hour := rlspb.RateLimitResponse_RateLimit_HOUR
	fixed := &RateLimit{RequestsPerUnit: 2, Unit: hour}
	shadow := &RateLimit{RequestsPerUnit: 3, Unit: hour, ShadowMode: true}
	lim, err := policy.Limiter(policy.Policy{Algorithm: policy.GCRA, Limit: 5, Period: 3600e9, Burst: 7})
	if err != nil {
		t.Fatal(err)
	}
	gcra := &RateLimit{RequestsPerUnit: 5, Unit: hour, Algorithm: policy.GCRA, Burst: 7, Limiter: lim}
	charges := []Charge{
		{Key: []byte("d_k_v_3600"), Limit: fixed, Hits: 1, Start: 3600},
		{Key: []byte("d_k_w_3600"), Limit: shadow, Hits: 4, Start: 3600},
		{Key: []byte("d_k_v_gcra"), Limit: gcra, Hits: 2},
	}
	for _, mode := range []Mode{PerDescriptor, AllOrNothing, StopWhenOverLimit} {
		args := ChargeArgs(nil, mode, 0.8, charges)
		if string(args[0]) != ChargeCommand {
			t.Fatalf("%v: command %q", mode, args[0])
		}
		gotMode, ratio, got, err := NewRuleCache().ParseChargeArgs(args[1:])
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if gotMode != mode || ratio != 0.8 || len(got) != len(charges) {
			t.Fatalf("%v: mode %v ratio %v %d charges", mode, gotMode, ratio, len(got))
		}
		now := int64(3700e9)
		a, b := engine.New(clock.NewFake(now), 0), engine.New(clock.NewFake(now), 0)
		want, err := Apply(a, charges, now, mode, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		sts, err := Apply(b, got, now, mode, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			w, g := want[i], sts[i]
			w.Limit, g.Limit = nil, nil
			if w != g {
				t.Errorf("%v: charge %d: %+v, want %+v", mode, i, g, w)
			}
			if back := StatusOf(AppendStatus(nil, g)); back != g {
				t.Errorf("%v: charge %d: the reply reads back %+v, want %+v", mode, i, back, g)
			}
		}
	}
}

func TestChargeArgsRefused(t *testing.T) {
	for _, c := range [][]string{
		{"per_descriptor"},
		{"sometimes", "0.8", "k", "1", "HOUR:2:0"},
		{"per_descriptor", "2", "k", "1", "HOUR:2:0"},
		{"per_descriptor", "0.8", "k", "1"},
		{"per_descriptor", "0.8", "k", "-1", "HOUR:2:0"},
		{"per_descriptor", "0.8", "k", "1", "FORTNIGHT:2:0"},
		{"per_descriptor", "0.8", "k", "1", "HOUR:x:0"},
		{"per_descriptor", "0.8", "k", "1", "HOUR:2:zz:3"},
		{"per_descriptor", "0.8", "k", "1", "HOUR:2"},
	} {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		if _, _, _, err := NewRuleCache().ParseChargeArgs(args); !errors.Is(err, ErrChargeSyntax) {
			t.Errorf("%q: %v, want ErrChargeSyntax", c, err)
		}
	}
}

// A rule read from the cache is the rule the parser reads, and a cache
// warmed with every form still refuses what the parser refuses.
func TestRuleCacheAnswersAsTheParser(t *testing.T) {
	rc := NewRuleCache()
	rules := []string{"HOUR:2:3600", "HOUR:2:7200", "HOUR:3:3600:shadow", "HOUR:5:gcra:7", "HOUR:5:gcra:7:shadow", "MINUTE:9:0060"}
	for round := 0; round < 2; round++ { // the second round reads from the cache
		for _, r := range rules {
			fresh, fstart, err := (*RuleCache)(nil).parse(r)
			if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			_, _, got, err := rc.ParseChargeArgs([][]byte{[]byte("per_descriptor"), []byte("0.8"), []byte("k"), []byte("1"), []byte(r)})
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, r, err)
			}
			g := got[0]
			if g.Start != fstart || g.Limit.Unit != fresh.Unit || g.Limit.RequestsPerUnit != fresh.RequestsPerUnit ||
				g.Limit.ShadowMode != fresh.ShadowMode || g.Limit.Algorithm != fresh.Algorithm || g.Limit.Burst != fresh.Burst {
				t.Errorf("round %d: %s: %+v start %d, want %+v start %d", round, r, g.Limit, g.Start, fresh, fstart)
			}
		}
	}
	for _, bad := range []string{"HOUR:2:shadow:5", "HOUR:3:shadow", "HOUR:2:3600:5", "HOUR:2:"} {
		if _, _, _, err := rc.ParseChargeArgs([][]byte{[]byte("per_descriptor"), []byte("0.8"), []byte("k"), []byte("1"), []byte(bad)}); !errors.Is(err, ErrChargeSyntax) {
			t.Errorf("%q with a warm cache: %v, want ErrChargeSyntax", bad, err)
		}
	}
}

// A builder and a cache reused across charges keep each charge's own near
// ratio and unit, whatever the charge before them carried.
func TestChargeArgsReused(t *testing.T) {
	var b ChargeArgsBuilder
	rc := NewRuleCache()
	units := []Unit{rlspb.RateLimitResponse_RateLimit_SECOND, rlspb.RateLimitResponse_RateLimit_WEEK, rlspb.RateLimitResponse_RateLimit_YEAR}
	for i, ratio := range []float32{0.8, 0.5, 0.8, 1, 0} {
		l := &RateLimit{RequestsPerUnit: 9, Unit: units[i%len(units)]}
		args := b.Build(PerDescriptor, ratio, []Charge{{Key: []byte("k"), Limit: l, Hits: 1, Start: 60}})
		_, got, charges, err := rc.ParseChargeArgs(args[1:])
		if err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
		if got != ratio || charges[0].Limit.Unit != l.Unit {
			t.Errorf("charge %d: ratio %v unit %v, want %v %v", i, got, charges[0].Limit.Unit, ratio, l.Unit)
		}
		if want := l.Unit.String(); unitName(l.Unit) != want {
			t.Errorf("unit %s named %s", want, unitName(l.Unit))
		}
	}
}

// ChargeArgs appends to the arguments it is given, as its name says: a
// caller's earlier command stays.
func TestChargeArgsAppends(t *testing.T) {
	l := &RateLimit{RequestsPerUnit: 2, Unit: rlspb.RateLimitResponse_RateLimit_HOUR}
	asking := [][]byte{[]byte("ASKING")}
	args := ChargeArgs(asking, PerDescriptor, 0.8, []Charge{{Key: []byte("k"), Limit: l, Hits: 1, Start: 3600}})
	if len(args) != 1+6 || string(args[0]) != "ASKING" || string(args[1]) != ChargeCommand {
		t.Errorf("ChargeArgs after ASKING: %q", args)
	}
}
