package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/metrics"
)

// TestRLSMetrics: after gRPC and RL.SHOULD traffic, /metrics serves each
// rule's counters under envoyproxy/ratelimit's Prometheus names and labels,
// and INFO rls lists the same counters. (Prometheus lists a shorter label
// set before a longer one.)
func TestRLSMetrics(t *testing.T) {
	s := startRLS(t, map[string]string{"messaging.yaml": rlsMessaging, "edge.yml": rlsEdge})
	require.NoError(t, s.srv.StartRLS())
	addr, err := metrics.Serve(s.srv.CommandServer(), s.srv.Snapshots(), s.srv.Policies(), s.srv.RLS(), s.srv.Analytics(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	c := s.client(t, 2)

	// marketing to 1: 4 within the 5 a day, then 2 more: 1 near, 1 over.
	s.expect(t, 0, &rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 4,
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("message_type", "marketing", "to_number", "1")}},
		rlsOK, rlsWant{rlsOK, 1, 86400, 5, rlspb.RateLimitResponse_RateLimit_DAY})
	require.NoError(t, c.Do(ctx, "RL.SHOULD", "messaging", "message_type", "marketing", "to_number", "1", "HITS", "2").Err())
	// Any message to 2: 1 within the 100 a day.
	s.expect(t, 2, &rlspb.RateLimitRequest{Domain: "messaging",
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("to_number", "2")}},
		rlsOK, rlsWant{rlsOK, 99, 86400, 100, rlspb.RateLimitResponse_RateLimit_DAY})
	// The shadow rule, 1 a minute: 2 hits, 1 near and 1 over, both let
	// through; shadow_mode counts the one over, as over_limit does.
	require.NoError(t, c.Do(ctx, "RL.SHOULD", "edge", "path", "/beta/x", "HITS", "2").Err())
	// No rule: counted nowhere.
	require.NoError(t, c.Do(ctx, "RL.SHOULD", "messaging", "nope", "x").Err())

	res, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var got []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "ratelimit_service_rate_limit_") {
			got = append(got, line)
		}
	}
	want := []string{
		`ratelimit_service_rate_limit_near_limit{domain="edge",key1="path_/beta/*"} 1`,
		`ratelimit_service_rate_limit_near_limit{domain="messaging",key1="to_number"} 0`,
		`ratelimit_service_rate_limit_near_limit{domain="messaging",key1="message_type_marketing",key2="to_number"} 1`,
		`ratelimit_service_rate_limit_over_limit{domain="edge",key1="path_/beta/*"} 1`,
		`ratelimit_service_rate_limit_over_limit{domain="messaging",key1="to_number"} 0`,
		`ratelimit_service_rate_limit_over_limit{domain="messaging",key1="message_type_marketing",key2="to_number"} 1`,
		`ratelimit_service_rate_limit_shadow_mode{domain="edge",key1="path_/beta/*"} 1`,
		`ratelimit_service_rate_limit_shadow_mode{domain="messaging",key1="to_number"} 0`,
		`ratelimit_service_rate_limit_shadow_mode{domain="messaging",key1="message_type_marketing",key2="to_number"} 0`,
		`ratelimit_service_rate_limit_total_hits{domain="edge",key1="path_/beta/*"} 2`,
		`ratelimit_service_rate_limit_total_hits{domain="messaging",key1="to_number"} 1`,
		`ratelimit_service_rate_limit_total_hits{domain="messaging",key1="message_type_marketing",key2="to_number"} 6`,
		`ratelimit_service_rate_limit_within_limit{domain="edge",key1="path_/beta/*"} 0`,
		`ratelimit_service_rate_limit_within_limit{domain="messaging",key1="to_number"} 1`,
		`ratelimit_service_rate_limit_within_limit{domain="messaging",key1="message_type_marketing",key2="to_number"} 4`,
	}
	require.Equal(t, want, got, "metrics:\n%s", body)
	require.Contains(t, string(body), "# TYPE ratelimit_service_rate_limit_total_hits counter\n")

	info, err := c.Info(ctx, "rls").Result()
	require.NoError(t, err)
	require.Equal(t, "# Rls\r\n"+
		"rls_edge.path_/beta/*:total_hits=2,over_limit=1,near_limit=1,within_limit=0,shadow_mode=1\r\n"+
		"rls_messaging.message_type_marketing.to_number:total_hits=6,over_limit=1,near_limit=1,within_limit=4,shadow_mode=0\r\n"+
		"rls_messaging.to_number:total_hits=1,over_limit=0,near_limit=0,within_limit=1,shadow_mode=0\r\n", info)
}
