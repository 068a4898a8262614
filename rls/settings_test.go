package rls

import (
	"strings"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The envoyproxy/ratelimit settings, in-process on a fake clock;
// tests/rls_settings_test.go runs the same settings against the real
// service.

const settingsRules = `domain: s
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: quota
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`

func decideAll(t *testing.T, svc *Service, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitResponse {
	t.Helper()
	resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "s", HitsAddend: hits, Descriptors: ds}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestStopIncrementWhenOverLimit: a descriptor going over leaves the
// request's others uncharged; their statistics count the hits within.
func TestStopIncrementWhenOverLimit(t *testing.T) {
	svc, _ := newService(t, settingsRules)
	svc.SetStopIncrementWhenOverLimit(true)
	const hour = 3600
	check(t, 0, decideAll(t, svc, 2, desc("user", "a"), desc("tenant", "t")), rlspb.RateLimitResponse_OK, want{false, 1, hour}, want{false, 8, hour})
	check(t, 1, decideAll(t, svc, 2, desc("user", "a"), desc("tenant", "t")), rlspb.RateLimitResponse_OVER_LIMIT, want{true, 0, hour}, want{false, 8, hour})
	check(t, 2, decideAll(t, svc, 1, desc("tenant", "t")), rlspb.RateLimitResponse_OK, want{false, 7, hour})
	for _, r := range svc.RuleStats() {
		if r.Key == "s.tenant" && (r.Stats.TotalHits != 5 || r.Stats.WithinLimit != 5) {
			t.Errorf("tenant: %+v, want 5 hits within", r.Stats)
		}
	}
}

// TestShadowQuotaAndHeaders: global shadow mode answers OK overall and
// keeps the rest; a quota_mode rule over answers OK without a reset; the
// headers carry the names they are given.
func TestShadowQuotaAndHeaders(t *testing.T) {
	svc, _ := newService(t, settingsRules)
	svc.SetResponseHeaders(true)
	svc.SetHeaderNames("X-L", "", "X-R")
	svc.SetShadowMode(true)
	resp := decideAll(t, svc, 4, desc("user", "a"))
	check(t, 0, resp, rlspb.RateLimitResponse_OK, want{true, 0, 3600})
	var names []string
	for _, h := range resp.ResponseHeadersToAdd {
		names = append(names, h.Key+"="+h.Value)
	}
	if got := strings.Join(names, " "); got != "X-L=3 RateLimit-Remaining=0 X-R=3600" {
		t.Errorf("headers %s", got)
	}
	svc.SetShadowMode(false)
	check(t, 1, decideAll(t, svc, 2, desc("quota", "q"), desc("tenant", "t")), rlspb.RateLimitResponse_OK, want{false, 0, -1}, want{false, 8, 3600})
	svc.SetQuotaMode(true)
	check(t, 2, decideAll(t, svc, 0, desc("user", "a")), rlspb.RateLimitResponse_OK, want{false, 0, -1})
}

// TestNearLimitRatio: the near-limit share moves near_limit.
func TestNearLimitRatio(t *testing.T) {
	svc, _ := newService(t, settingsRules)
	svc.SetNearLimitRatio(0.5)
	decideAll(t, svc, 8, desc("tenant", "t"))
	for _, r := range svc.RuleStats() {
		if r.Key == "s.tenant" && r.Stats.NearLimit != 3 { // past 5 of 10
			t.Errorf("tenant: %+v, want 3 near", r.Stats)
		}
	}
}

// TestReadOnly: while read-only, a request with any hits is refused and a
// check is answered.
func TestReadOnly(t *testing.T) {
	svc, _ := newService(t, settingsRules)
	decideAll(t, svc, 2, desc("user", "a"))
	svc.SetReadOnly(func() bool { return true })
	if _, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "s", Descriptors: []*rlcommon.RateLimitDescriptor{desc("nope", "x")}}, t0); err != ErrReadOnly {
		t.Errorf("a charge: %v, want ErrReadOnly", err)
	}
	d := desc("user", "a")
	d.HitsAddend = wrapperspb.UInt64(0)
	check(t, 0, decideAll(t, svc, 0, d), rlspb.RateLimitResponse_OK, want{false, 1, 3600})
}

// TestMergeDomains: with merging, a second file of a domain adds its
// top-level rules and may not repeat one; without, it is refused.
func TestMergeDomains(t *testing.T) {
	a := "domain: m\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"
	b := "domain: m\ndescriptors:\n  - key: b\n    rate_limit: {unit: hour, requests_per_unit: 2}\n"
	dupA := "domain: m\ndescriptors:\n  - key: c\n  - key: a\n    rate_limit: {unit: day, requests_per_unit: 2}\n"
	c := &Config{domains: map[string]*node{}}
	if err := c.Add("a.yaml", []byte(a)); err != nil {
		t.Fatal(err)
	}
	if err := c.Add("b.yaml", []byte(b)); err == nil || !strings.Contains(err.Error(), "duplicate domain 'm'") {
		t.Errorf("without merging: %v", err)
	}
	c.mergeDomains = true
	if err := c.Add("b.yaml", []byte(b)); err != nil {
		t.Fatal(err)
	}
	if c.Lookup("m", entries("a", "1")) == nil || c.Lookup("m", entries("b", "1")).RequestsPerUnit != 2 {
		t.Errorf("merged rules:\n%s", c.Dump())
	}
	err := c.Add("c.yaml", []byte(dupA))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:4: descriptors[1]: duplicate descriptor composite key 'm.a'") {
		t.Errorf("a repeated key: %v", err)
	}
	if c.Lookup("m", entries("a", "1")).RequestsPerUnit != 1 {
		t.Error("a refused file changed the rules")
	}
}
