package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
)

// The settings test runs envoyproxy/ratelimit with one of its settings
// (an environment variable) and limitdb with the directive that stands
// for it, sends both the same requests and requires the same answers,
// counter keys, per-rule statistics and /rlconfig, as TestRLSConformance
// does with the defaults. Each case checks that the setting changes
// something the requests see, so a directive that did nothing would fail.

// rlsStopRules: three limits a request can carry together, one of them in
// shadow mode.
const rlsStopRules = `domain: stop
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 3
  - key: tenant
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
`

// rlsQuotaRules: a quota_mode rule beside an ordinary one and a shadow
// one.
const rlsQuotaRules = `domain: quota
descriptors:
  - key: user
    quota_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 2
  - key: tenant
    rate_limit:
      unit: hour
      requests_per_unit: 3
  - key: shadow
    shadow_mode: true
    quota_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
`

// rlsMergeRules are one domain in two files; each file has its own
// wildcard, which do not overlap (envoyproxy/ratelimit merges its files
// in its map's order, so which of two overlapping wildcards comes first
// is left to chance there).
var rlsMergeRules = map[string]string{
	"a.yaml": `domain: merged
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 2
  - key: path
    value: /a/*
    rate_limit:
      unit: hour
      requests_per_unit: 1
`,
	"b.yaml": `domain: merged
descriptors:
  - key: tenant
    rate_limit:
      unit: day
      requests_per_unit: 3
    descriptors:
      - key: user
        rate_limit:
          unit: hour
          requests_per_unit: 1
  - key: path
    value: /b/*
    rate_limit:
      unit: hour
      requests_per_unit: 2
`,
}

func stopSteps() []conformanceStep {
	req := requestIn("stop")
	check := func(d *rlcommon.RateLimitDescriptor) *rlcommon.RateLimitDescriptor {
		d.HitsAddend = wrapperspb.UInt64(0)
		return d
	}
	d := descriptor
	return []conformanceStep{
		{"all within: all charged", req(2, d("user", "a"), d("tenant", "t"))},
		{"one would go over: only it is charged", req(2, d("user", "a"), d("tenant", "t"))},
		{"what was charged", req(0, check(d("user", "a")), check(d("tenant", "t")))},
		{"over by the count, a check beside a charge", req(1, check(d("user", "a")), d("tenant", "t"))},
		{"the charge was stopped", req(0, check(d("tenant", "t")))},
		{"near the limit, uncharged", req(1, d("tenant", "t"), d("user", "b"), d("user", "b"), d("user", "b"), d("user", "b"))},
		{"a shadow rule going over stops the others", req(2, d("shadow", "s"), d("tenant", "u"))},
		{"after the shadow rule", req(0, check(d("tenant", "u")), check(d("shadow", "s")))},
		{"the same counter twice, the second over", req(0, addendOf(d("user", "c"), 2), addendOf(d("user", "c"), 2), d("tenant", "v"))},
		{"after the same counter twice", req(0, check(d("user", "c")), check(d("tenant", "v")))},
		{"no rule beside one over", req(5, d("nope", "x"), d("user", "d"))},
	}
}

func quotaSteps() []conformanceStep {
	req := requestIn("quota")
	d := descriptor
	return []conformanceStep{
		{"within", req(0, d("user", "a"), d("tenant", "t"))},
		{"the quota rule over", req(2, d("user", "a"), d("tenant", "t"))},
		{"the ordinary rule over too", req(1, d("user", "a"), d("tenant", "t"))},
		{"the quota rule over alone", req(0, d("user", "a"))},
		{"the ordinary rule over alone", req(0, d("tenant", "t"))},
		{"shadow and quota", req(3, d("shadow", "s"), d("user", "b"))},
	}
}

func mergeSteps() []conformanceStep {
	req := requestIn("merged")
	d := descriptor
	return []conformanceStep{
		{"a rule of each file", req(0, d("user", "a"), d("tenant", "t"))},
		{"nested, from the second file", req(2, d("tenant", "t", "user", "a"), d("user", "a"))},
		{"the first file's wildcard", req(0, d("path", "/a/x"), d("path", "/a/y"))},
		{"the second file's wildcard", req(2, d("path", "/b/x"), d("path", "/c/x"))},
		{"both wildcards over", req(0, d("path", "/a/x"), d("path", "/b/x"))},
	}
}

// requestIn makes requests of domain: hits_addend hits (0: each
// descriptor's own, or 1) over ds.
func requestIn(domain string) func(hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
	return func(hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
		return &rlspb.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: ds}
	}
}

func addendOf(d *rlcommon.RateLimitDescriptor, n uint64) *rlcommon.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// TestRLSSettingsConformance: with each envoyproxy/ratelimit setting a
// migrating user relies on, limitdb with the matching directive answers
// as envoyproxy/ratelimit does.
func TestRLSSettingsConformance(t *testing.T) {
	conf := map[string]string{"conf.yaml": rlsConformanceRules}
	headers := func(c *config.Config) { c.RLSResponseHeaders = true }
	cases := []struct {
		name  string
		env   []string
		set   func(*config.Config)
		rules map[string]string
		steps []conformanceStep
		// changed: what the setting must change in the answers, so the
		// case fails when the directive does nothing.
		changed func(t *testing.T, resps []*rlspb.RateLimitResponse)
	}{
		{
			name: "SHADOW_MODE", env: []string{"SHADOW_MODE=true"},
			set:   func(c *config.Config) { c.RLSShadowMode = true },
			rules: conf, steps: conformanceSteps(),
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				over := 0
				for i, r := range resps {
					require.Equal(t, rlsOK, r.OverallCode, "step %d: overall_code in shadow mode", i)
					for _, st := range r.Statuses {
						if st.Code == rlsOver {
							over++
						}
					}
				}
				require.NotZero(t, over, "no descriptor answered OVER_LIMIT in shadow mode")
			},
		},
		{
			name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", env: []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"},
			set:   func(c *config.Config) { c.RLSStopIncrementWhenOverLimit = true },
			rules: map[string]string{"stop.yaml": rlsStopRules}, steps: stopSteps(),
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				// user a went over at step 1, so tenant t kept its 2.
				require.Equal(t, uint32(8), resps[2].Statuses[1].LimitRemaining, "tenant t after a stopped charge")
			},
		},
		{
			name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, the conformance steps", env: []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"},
			set:   func(c *config.Config) { c.RLSStopIncrementWhenOverLimit = true },
			rules: conf, steps: conformanceSteps(),
		},
		{
			name: "LIMIT_*_HEADER",
			env:  []string{"LIMIT_LIMIT_HEADER=X-Limit", "LIMIT_REMAINING_HEADER=X-Left", "LIMIT_RESET_HEADER=X-Reset-After"},
			set: func(c *config.Config) {
				c.RLSHeaderLimit, c.RLSHeaderRemaining, c.RLSHeaderReset = "X-Limit", "X-Left", "X-Reset-After"
			},
			rules: conf, steps: conformanceSteps()[:8],
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				var names []string
				for _, h := range resps[0].ResponseHeadersToAdd {
					names = append(names, h.Key)
				}
				require.Equal(t, []string{"X-Limit", "X-Left", "X-Reset-After"}, names)
			},
		},
		{
			// The statistics differ, which compareRLSState checks: user a
			// (5 an hour) is near from its 3rd hit at 0.5, its 5th at 0.8.
			name: "NEAR_LIMIT_RATIO", env: []string{"NEAR_LIMIT_RATIO=0.5"},
			set:   func(c *config.Config) { c.RLSNearLimitRatio = 0.5 },
			rules: conf, steps: conformanceSteps(),
		},
		{
			name: "MERGE_DOMAIN_CONFIG", env: []string{"MERGE_DOMAIN_CONFIG=true"},
			set:   func(c *config.Config) { c.RLSMergeDomainConfig = true },
			rules: rlsMergeRules, steps: mergeSteps(),
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				for i, st := range resps[0].Statuses {
					require.NotNil(t, st.CurrentLimit, "descriptor %d of the first step: no rule", i)
				}
			},
		},
		{
			name: "quota_mode", rules: map[string]string{"quota.yaml": rlsQuotaRules}, steps: quotaSteps(),
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				require.Equal(t, rlsOK, resps[1].OverallCode, "the quota rule over")
				require.Equal(t, rlsOver, resps[2].OverallCode, "the ordinary rule over")
				require.Nil(t, resps[1].Statuses[0].DurationUntilReset, "a quota status has no duration_until_reset")
			},
		},
		{
			name: "QUOTA_MODE", env: []string{"QUOTA_MODE=true"},
			set:   func(c *config.Config) { c.RLSQuotaMode = true },
			rules: conf, steps: conformanceSteps(),
			changed: func(t *testing.T, resps []*rlspb.RateLimitResponse) {
				for i, r := range resps {
					require.Equal(t, rlsOK, r.OverallCode, "step %d: overall_code in quota mode", i)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			peer := startRatelimitPeer(t, c.rules, append([]string{"LIMIT_RESPONSE_HEADERS_ENABLED=true"}, c.env...)...)
			set := []func(*config.Config){headers}
			if c.set != nil {
				set = append(set, c.set)
			}
			s := startRLSRealClock(t, c.rules, set...)
			awayFromHourEnd(t)
			var resps []*rlspb.RateLimitResponse
			for i, step := range c.steps {
				want, err := peer.rls.ShouldRateLimit(ctx, step.req)
				require.NoError(t, err, "step %d (%s): envoyproxy/ratelimit", i, step.name)
				got, err := s.rls.ShouldRateLimit(ctx, step.req)
				require.NoError(t, err, "step %d (%s): limitdb", i, step.name)
				compareRLS(t, fmt.Sprintf("step %d (%s)", i, step.name), want, got)
				resps = append(resps, got)
			}
			if c.changed != nil {
				c.changed(t, resps)
			}
			compareRLSState(t, peer, s)
			require.Equal(t, rlconfigLines(t, peer.debug), sortedLines(s.srv.RLS().Rules().Dump()), "/rlconfig")
		})
	}
}

// rlconfigLines is envoyproxy/ratelimit's /rlconfig at addr, its lines
// sorted (it lists them in its maps' order).
func rlconfigLines(t *testing.T, addr string) []string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/rlconfig")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return sortedLines(string(body))
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// TestRLSOnReplica: a read-only replica answers checks (every hits_addend
// 0, RL.SHOULD ... HITS 0) from the counters its primary sent, and refuses requests that would
// charge, over gRPC (UNAVAILABLE, READONLY), /json (503) and RL.SHOULD
// (READONLY), so its counters never part from the primary's; promoted, it
// charges.
func TestRLSOnReplica(t *testing.T) {
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "api.yaml"), []byte(`domain: api
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 5
`), 0o644))
	p := startRLSIn(t, clock.NewFake(t0), t.TempDir(), rules)
	r := startRLSIn(t, clock.NewFake(t0), t.TempDir(), rules)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p.testServer)

	charge := &rlspb.RateLimitRequest{Domain: "api", HitsAddend: 3, Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", "a")}}
	check := &rlspb.RateLimitRequest{Domain: "api", Descriptors: []*rlcommon.RateLimitDescriptor{
		addendOf(descriptor("user", "a"), 0), addendOf(descriptor("user", "b"), 0)}}
	hour := rlspb.RateLimitResponse_RateLimit_HOUR
	p.expect(t, 0, charge, rlsOK, rlsWant{rlsOK, 2, 3600, 5, hour})
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "WAIT 1: the replica acknowledged")
	keys := keyspaceOf(t, r.srv.Engine())
	require.Equal(t, keyspaceOf(t, p.srv.Engine()), keys, "the replica's keyspace")

	// A check answers from the primary's counters.
	r.expect(t, 1, check, rlsOK, rlsWant{rlsOK, 2, 3600, 5, hour}, rlsWant{rlsOK, 5, 3600, 5, hour})

	// A charge is refused, whichever way it comes, even one of no rule.
	for i, req := range []*rlspb.RateLimitRequest{charge,
		{Domain: "api", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", "c")}},
		{Domain: "api", Descriptors: []*rlcommon.RateLimitDescriptor{addendOf(descriptor("user", "a"), 0), descriptor("nope", "x")}},
	} {
		_, err = r.rls.ShouldRateLimit(ctx, req)
		require.Equal(t, codes.Unavailable, status.Code(err), "request %d: %v", i, err)
		require.Equal(t, "READONLY You can't write against a read only replica.", status.Convert(err).Message(), "request %d", i)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go r.srv.ServeRLSHTTP(ln)
	res, err := http.Post("http://"+ln.Addr().String()+"/json", "application/json",
		strings.NewReader(`{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}]}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "/json: %s", body)
	require.Contains(t, string(body), "READONLY")
	err = rc.Do(ctx, "RL.SHOULD", "api", "user", "a").Err()
	require.EqualError(t, err, "READONLY You can't write against a read only replica.")
	// RL.SHOULD ... HITS 0 is a check, which the replica answers.
	got, err := rc.Do(ctx, "RL.SHOULD", "api", "user", "a", "HITS", "0").Slice()
	require.NoError(t, err)
	require.Equal(t, []any{"OK", "OK", int64(5), int64(2), int64(3600)}, got, "RL.SHOULD HITS 0 on the replica")
	require.Equal(t, keys, keyspaceOf(t, r.srv.Engine()), "a refused request changed the replica")
	r.expect(t, 2, check, rlsOK, rlsWant{rlsOK, 2, 3600, 5, hour}, rlsWant{rlsOK, 5, 3600, 5, hour})

	// Promoted, it charges its copy, which was the primary's.
	require.NoError(t, rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	r.expect(t, 3, charge, rlsOver, rlsWant{rlsOver, 0, 3600, 5, hour})
}

// TestRLShouldInShadowMode: with rls-shadow-mode, RL.SHOULD's overall code
// is OK while its descriptor's says OVER_LIMIT, as the gRPC answer's.
func TestRLShouldInShadowMode(t *testing.T) {
	s := startRLSRealClock(t, map[string]string{"api.yaml": `domain: api
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 1
`}, func(c *config.Config) { c.RLSShadowMode = true })
	c := s.client(t, 2)
	var got []any
	for range 2 {
		var err error
		got, err = c.Do(ctx, "RL.SHOULD", "api", "user", "a").Slice()
		require.NoError(t, err)
	}
	require.Equal(t, []any{"OK", "OVER_LIMIT", int64(1), int64(0)}, got[:4], "the second request, over its limit, in shadow mode")
}
