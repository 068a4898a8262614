package rls

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// t0 is 2026-01-01T00:00:00Z, the start of a day (and of every shorter
// window); instants in the tests are t0 plus an offset.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func newService(t *testing.T, yml ...string) (*Service, *engine.Engine) {
	t.Helper()
	eng := engine.New(clock.NewFake(t0), 4)
	c := &Config{domains: map[string]*node{}}
	for _, y := range yml {
		if err := c.Add("rules.yaml", []byte(y)); err != nil {
			t.Fatal(err)
		}
	}
	return New(eng, c), eng
}

// desc builds a request descriptor from key, value pairs.
func desc(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// want is one descriptor's expected status: code, remaining, and the
// seconds to the window's end (-1: no limit, so no duration).
type want struct {
	over      bool
	remaining uint32
	reset     int64
}

func check(t *testing.T, step int, resp *rlspb.RateLimitResponse, overall rlspb.RateLimitResponse_Code, ws ...want) {
	t.Helper()
	if resp.OverallCode != overall {
		t.Errorf("step %d: overall %v, want %v", step, resp.OverallCode, overall)
	}
	if len(resp.Statuses) != len(ws) {
		t.Fatalf("step %d: %d statuses, want %d", step, len(resp.Statuses), len(ws))
	}
	for i, w := range ws {
		st := resp.Statuses[i]
		code := rlspb.RateLimitResponse_OK
		if w.over {
			code = rlspb.RateLimitResponse_OVER_LIMIT
		}
		if st.Code != code || st.LimitRemaining != w.remaining {
			t.Errorf("step %d, descriptor %d: %v remaining %d, want %v remaining %d", step, i, st.Code, st.LimitRemaining, code, w.remaining)
		}
		switch {
		case w.reset < 0 && st.DurationUntilReset != nil:
			t.Errorf("step %d, descriptor %d: duration_until_reset %v, want none", step, i, st.DurationUntilReset)
		case w.reset >= 0 && st.DurationUntilReset.GetSeconds() != w.reset:
			t.Errorf("step %d, descriptor %d: duration_until_reset %v, want %ds", step, i, st.DurationUntilReset, w.reset)
		}
	}
}

// TestFixedWindowSteps walks one rule through a window and into the next.
func TestFixedWindowSteps(t *testing.T) {
	svc, _ := newService(t, readmeEdge)
	ip := desc("remote_address", "10.0.0.1")
	const sec = int64(time.Second)
	steps := []struct {
		at   int64 // ns after t0
		hits uint32
		want want
	}{
		{0, 0, want{false, 9, 1}},                   // hits_addend 0 counts 1
		{sec / 2, 4, want{false, 5, 1}},             // 5 of 10
		{sec / 2, 5, want{false, 0, 1}},             // exactly at the limit
		{sec/2 + 1, 1, want{true, 0, 1}},            // 11 > 10
		{sec - 1, 0, want{true, 0, 1}},              // still over: the counter kept growing
		{sec, 1, want{false, 9, 1}},                 // a new window at the second
		{sec + sec/3, 20, want{true, 0, 1}},         // one request past the whole limit
		{sec + sec/2, 1, want{true, 0, 1}},          // and it was counted
		{3*sec + 999_999_999, 1, want{false, 9, 1}}, // reset counts whole seconds left, rounded up
	}
	for i, s := range steps {
		resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "edge_proxy_per_ip", HitsAddend: s.hits,
			Descriptors: []*rlcommon.RateLimitDescriptor{ip}}, t0+s.at)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		code := rlspb.RateLimitResponse_OK
		if s.want.over {
			code = rlspb.RateLimitResponse_OVER_LIMIT
		}
		check(t, i, resp, code, s.want)
	}
}

func TestResetAlignedToEpoch(t *testing.T) {
	svc, _ := newService(t, readmeMessaging)
	// 10:00:30 UTC: 13 h 59 m 30 s to the end of the day.
	at := t0 + int64(10*time.Hour+30*time.Second)
	resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "messaging",
		Descriptors: []*rlcommon.RateLimitDescriptor{desc("to_number", "1")}}, at)
	if err != nil {
		t.Fatal(err)
	}
	check(t, 0, resp, rlspb.RateLimitResponse_OK, want{false, 99, int64(13*3600 + 59*60 + 30)})
	if l := resp.Statuses[0].CurrentLimit; l.GetRequestsPerUnit() != 100 || l.GetUnit() != rlspb.RateLimitResponse_RateLimit_DAY {
		t.Errorf("current_limit %v", l)
	}
}

// TestCacheKey: the counters' keys are envoyproxy/ratelimit's, held as
// fixed windows that expire at the window's end.
func TestCacheKey(t *testing.T) {
	svc, eng := newService(t, readmeMessaging)
	at := t0 + int64(90*time.Minute)
	_, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 3,
		Descriptors: []*rlcommon.RateLimitDescriptor{desc("message_type", "marketing", "to_number", "2061111111")}}, at)
	if err != nil {
		t.Fatal(err)
	}
	day := t0 / 1e9
	key := "messaging_message_type_marketing_to_number_2061111111_" + itoa(day)
	var got engine.Entry
	eng.Do([]byte(key), at, func(e engine.Entry) (engine.Entry, bool) { got = e; return e, false })
	if got.Kind != engine.KindFixedWindow || got.A != t0 || got.B != 3 || got.Expire != t0+int64(24*time.Hour) {
		t.Errorf("%s: %+v", key, got)
	}
}

func itoa(n int64) string { return string(appendCacheKey(nil, "", nil, nil, n)[1:]) }

// TestSeveralDescriptors: each descriptor is counted on its own, and every
// one is charged even when another goes over, as envoyproxy/ratelimit
// charges them (tests/rls_conformance_test.go checks against it).
func TestSeveralDescriptors(t *testing.T) {
	svc, _ := newService(t, readmeMessaging)
	const day = 86400
	marketing := desc("message_type", "marketing", "to_number", "1")
	number := desc("to_number", "1")
	req := func(hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
		return &rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: hits, Descriptors: ds}
	}
	unknown := desc("nothing", "here")
	steps := []struct {
		req     *rlspb.RateLimitRequest
		overall rlspb.RateLimitResponse_Code
		want    []want
	}{
		{req(1, marketing, number, unknown), rlspb.RateLimitResponse_OK, []want{{false, 4, day}, {false, 99, day}, {false, 0, -1}}},
		{req(4, marketing, number), rlspb.RateLimitResponse_OK, []want{{false, 0, day}, {false, 95, day}}},
		// marketing goes to 6, over; the number is charged all the same.
		{req(1, marketing, number), rlspb.RateLimitResponse_OVER_LIMIT, []want{{true, 0, day}, {false, 94, day}}},
		// The number alone is still counted.
		{req(2, number), rlspb.RateLimitResponse_OK, []want{{false, 92, day}}},
	}
	for i, s := range steps {
		resp, err := svc.Decide(s.req, t0)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		check(t, i, resp, s.overall, s.want...)
	}
}

func TestPerDescriptorHitsAndOverride(t *testing.T) {
	svc, _ := newService(t, readmeMessaging)
	d := desc("to_number", "7")
	peek := desc("to_number", "7")
	peek.HitsAddend = wrapperspb.UInt64(0)
	resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 10,
		Descriptors: []*rlcommon.RateLimitDescriptor{d, peek}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The request's 10 hits for the first, a per-descriptor 0 (a check) for
	// the second, on the same counter.
	check(t, 0, resp, rlspb.RateLimitResponse_OK, want{false, 90, 86400}, want{false, 90, 86400})

	over := desc("to_number", "8")
	over.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
	for i, w := range []want{{false, 1, 60}, {false, 0, 60}, {true, 0, 60}} {
		resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "messaging", Descriptors: []*rlcommon.RateLimitDescriptor{over}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		code := rlspb.RateLimitResponse_OK
		if w.over {
			code = rlspb.RateLimitResponse_OVER_LIMIT
		}
		check(t, i, resp, code, w)
	}
}

func TestShadowModeAndUnlimited(t *testing.T) {
	svc, _ := newService(t, wildcards)
	shadow := desc("tenant", "a", "path", "/v1")
	for i := range 8 {
		resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "wild", Descriptors: []*rlcommon.RateLimitDescriptor{shadow, desc("free", "x")}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		rem := uint32(max(6-i, 0))
		// 2026-01-01 is a Thursday, the start of an epoch-aligned week.
		check(t, i, resp, rlspb.RateLimitResponse_OK, want{false, rem, 7 * 86400}, want{false, math.MaxUint32, -1})
	}
}

// TestReplaces: a rule named in the replaces of another rule matched by
// the same request is left out: OK, no limit, nothing charged, counted
// nowhere; alone it applies. An unlimited rule's replaces count, and a
// replaced rule's own replaces still apply.
func TestReplaces(t *testing.T) {
	svc, _ := newService(t, `domain: r
descriptors:
  - key: tenant
    rate_limit: {name: default, unit: hour, requests_per_unit: 10}
  - key: tier
    rate_limit: {name: vip, unit: hour, requests_per_unit: 2, replaces: [{name: default}]}
  - key: internal
    rate_limit: {unlimited: true, replaces: [{name: vip}]}
`)
	req := func(ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
		return &rlspb.RateLimitRequest{Domain: "r", Descriptors: ds}
	}
	steps := []struct {
		req     *rlspb.RateLimitRequest
		overall rlspb.RateLimitResponse_Code
		want    []want
	}{
		{req(desc("tenant", "a"), desc("tier", "gold")), rlspb.RateLimitResponse_OK, []want{{false, 0, -1}, {false, 1, 3600}}},
		{req(desc("tenant", "a")), rlspb.RateLimitResponse_OK, []want{{false, 9, 3600}}},
		{req(desc("tenant", "a"), desc("tier", "gold"), desc("internal", "x")), rlspb.RateLimitResponse_OK,
			[]want{{false, 0, -1}, {false, 0, -1}, {false, math.MaxUint32, -1}}},
		{req(desc("tier", "gold"), desc("tier", "gold")), rlspb.RateLimitResponse_OVER_LIMIT, []want{{false, 0, 3600}, {true, 0, 3600}}},
	}
	for i, s := range steps {
		resp, err := svc.Decide(s.req, t0)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		check(t, i, resp, s.overall, s.want...)
	}
	for _, r := range svc.RuleStats() {
		if r.Key == "tenant" && r.Stats.TotalHits != 1 {
			t.Errorf("tenant counted %d hits, want 1 (replaced hits count nowhere)", r.Stats.TotalHits)
		}
	}
}

func TestWrongType(t *testing.T) {
	svc, eng := newService(t, readmeEdge)
	key := []byte("edge_proxy_per_ip_remote_address_1_" + itoa(t0/1e9))
	eng.Do(key, t0, func(engine.Entry) (engine.Entry, bool) {
		return engine.Entry{Kind: engine.KindGCRA, A: t0 + 1e12, Expire: t0 + 1e12}, true
	})
	_, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "edge_proxy_per_ip", Descriptors: []*rlcommon.RateLimitDescriptor{desc("remote_address", "1")}}, t0)
	if err == nil {
		t.Fatal("no error on a key of another type")
	}
}

func TestStats(t *testing.T) {
	lim := &RateLimit{RequestsPerUnit: 10, Unit: rlspb.RateLimitResponse_RateLimit_SECOND}
	cases := []struct {
		before, after int64
		want          Stats
	}{
		{0, 1, Stats{TotalHits: 1, WithinLimit: 1}},
		{7, 9, Stats{TotalHits: 2, WithinLimit: 2, NearLimit: 1}},  // near from 8 on
		{8, 10, Stats{TotalHits: 2, WithinLimit: 2, NearLimit: 2}}, // all near
		{9, 12, Stats{TotalHits: 3, OverLimit: 2, NearLimit: 1}},
		{10, 11, Stats{TotalHits: 1, OverLimit: 1}},
	}
	for _, c := range cases {
		got := tally{nearRatio: NearLimitRatio}.decide(Charge{Limit: lim, Hits: uint64(c.after - c.before)}, c.before, c.after, 1).Stats
		if got != c.want {
			t.Errorf("%d -> %d: %+v, want %+v", c.before, c.after, got, c.want)
		}
	}
}

// TestConcurrentDecisions: requests decided at once, of one and of several
// descriptors, each get their own descriptors' answers although the
// service reuses its working memory from request to request, and every
// hit is counted once.
func TestConcurrentDecisions(t *testing.T) {
	svc, _ := newService(t, "domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n      requests_per_unit: 1000000\n")
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := fmt.Sprint("w", w)
			for i := range rounds {
				ds := []*rlcommon.RateLimitDescriptor{desc("user", mine)}
				if i%2 == 1 { // a longer request: the user's, a shared one and one of no rule
					ds = append(ds, desc("user", "shared"), desc("none", "x"))
				}
				resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "d", Descriptors: ds}, t0)
				if err != nil {
					errs <- err
					return
				}
				if len(resp.Statuses) != len(ds) {
					errs <- fmt.Errorf("%s, request %d: %d statuses for %d descriptors", mine, i, len(resp.Statuses), len(ds))
					return
				}
				if got, want := resp.Statuses[0].LimitRemaining, uint32(1000000-i-1); got != want {
					errs <- fmt.Errorf("%s, request %d: remaining %d, want %d", mine, i, got, want)
					return
				}
				if len(ds) == 3 && resp.Statuses[2].CurrentLimit != nil {
					errs <- fmt.Errorf("%s, request %d: a descriptor of no rule answered with a limit", mine, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user", "shared")}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Statuses[0].LimitRemaining, uint32(1000000-workers*rounds/2-1); got != want {
		t.Errorf("the shared user has %d left, want %d", got, want)
	}
}
