package tests

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/limitdb/limitdb/rls"
)

// rlsMessaging is Example 2 of envoyproxy/ratelimit's README, unchanged.
const rlsMessaging = `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`

// rlsEdge is a per-IP rule set with a wildcard and a shadow-mode rule.
const rlsEdge = `domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 3
  - key: path
    value: /beta/*
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
`

// rlsServer is a test server with Envoy's rate limit service on its own
// loopback port, and a gRPC client of it built from go-control-plane's
// stubs.
type rlsServer struct {
	*testServer
	conn *grpc.ClientConn
	rls  rlspb.RateLimitServiceClient
}

func startRLS(t *testing.T, rules map[string]string) *rlsServer {
	t.Helper()
	dir := t.TempDir()
	for name, body := range rules {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return startRLSIn(t, clock.NewFake(t0), t.TempDir(), dir)
}

// startRLSIn starts a server whose snapshots live in dataDir (loading the
// one there) with the rules of rulesDir.
func startRLSIn(t *testing.T, clk *clock.Fake, dataDir, rulesDir string) *rlsServer {
	t.Helper()
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir = 0, 0, dataDir
	cfg.RLSConfigDir = rulesDir
	srv := node.New(cfg, engine.New(clk, 0), nil)
	ts := serve(t, srv, clk) // loads the snapshot (node.Run)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &rlsServer{testServer: ts, conn: conn, rls: rlspb.NewRateLimitServiceClient(conn)}
}

// descriptor builds a request descriptor as Envoy's rate_limit actions do.
func descriptor(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// rlsWant is one descriptor's expected status; reset -1: no duration, and
// limit 0: no current_limit.
type rlsWant struct {
	code      rlspb.RateLimitResponse_Code
	remaining uint32
	reset     int64
	limit     uint32
	unit      rlspb.RateLimitResponse_RateLimit_Unit
}

const (
	rlsOK   = rlspb.RateLimitResponse_OK
	rlsOver = rlspb.RateLimitResponse_OVER_LIMIT
)

func (s *rlsServer) expect(t *testing.T, step int, req *rlspb.RateLimitRequest, overall rlspb.RateLimitResponse_Code, ws ...rlsWant) {
	t.Helper()
	resp, err := s.rls.ShouldRateLimit(ctx, req)
	require.NoError(t, err, "step %d", step)
	if resp.OverallCode != overall {
		t.Errorf("step %d: overall_code %v, want %v", step, resp.OverallCode, overall)
	}
	require.Len(t, resp.Statuses, len(ws), "step %d", step)
	for i, w := range ws {
		st := resp.Statuses[i]
		if st.Code != w.code || st.LimitRemaining != w.remaining {
			t.Errorf("step %d, descriptor %d: %v limit_remaining %d, want %v %d", step, i, st.Code, st.LimitRemaining, w.code, w.remaining)
		}
		if w.reset < 0 {
			if st.DurationUntilReset != nil {
				t.Errorf("step %d, descriptor %d: duration_until_reset %v, want none", step, i, st.DurationUntilReset)
			}
		} else if st.DurationUntilReset.GetSeconds() != w.reset || st.DurationUntilReset.GetNanos() != 0 {
			t.Errorf("step %d, descriptor %d: duration_until_reset %v, want %ds", step, i, st.DurationUntilReset, w.reset)
		}
		if w.limit == 0 {
			if st.CurrentLimit != nil {
				t.Errorf("step %d, descriptor %d: current_limit %v, want none", step, i, st.CurrentLimit)
			}
		} else if st.CurrentLimit.GetRequestsPerUnit() != w.limit || st.CurrentLimit.GetUnit() != w.unit {
			t.Errorf("step %d, descriptor %d: current_limit %v, want %d per %v", step, i, st.CurrentLimit, w.limit, w.unit)
		}
	}
}

// TestRLSReadmeExample: Envoy's request shapes against the README's
// messaging rules, on a fake clock.
func TestRLSReadmeExample(t *testing.T) {
	s := startRLS(t, map[string]string{"messaging.yaml": rlsMessaging})
	const day = rlspb.RateLimitResponse_RateLimit_DAY
	marketing := descriptor("message_type", "marketing", "to_number", "2061111111")
	number := descriptor("to_number", "2061111111")
	req := func(domain string, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
		return &rlspb.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: ds}
	}
	// 06:00 UTC: 18 hours to the end of the day's window.
	s.clk.Set(t0 + int64(6*time.Hour))
	const left = 18 * 3600

	// Envoy sends hits_addend 0 unless told otherwise: one hit.
	s.expect(t, 0, req("messaging", 0, marketing, number), rlsOK,
		rlsWant{rlsOK, 4, left, 5, day}, rlsWant{rlsOK, 99, left, 100, day})
	// hits_addend > 1 charges every descriptor that many.
	s.expect(t, 1, req("messaging", 3, marketing, number), rlsOK,
		rlsWant{rlsOK, 1, left, 5, day}, rlsWant{rlsOK, 96, left, 100, day})
	// 4 + 2 > 5: marketing is over; the number is charged all the same.
	s.clk.Advance(time.Hour + 500*time.Millisecond)
	s.expect(t, 2, req("messaging", 2, marketing, number), rlsOver,
		rlsWant{rlsOver, 0, left - 3600, 5, day}, rlsWant{rlsOK, 94, left - 3600, 100, day})
	// A descriptor the rules do not know, and one deeper than any rule,
	// are OK with no limit; the number alone still counts.
	s.expect(t, 3, req("messaging", 0, descriptor("message_type", "transactional"), number, descriptor("to_number", "1", "x", "y")), rlsOK,
		rlsWant{rlsOK, 0, -1, 0, 0}, rlsWant{rlsOK, 93, left - 3600, 100, day}, rlsWant{rlsOK, 0, -1, 0, 0})
	// An unknown domain is OK for every descriptor.
	s.expect(t, 4, req("nowhere", 7, marketing, number), rlsOK,
		rlsWant{rlsOK, 0, -1, 0, 0}, rlsWant{rlsOK, 0, -1, 0, 0})
	// A per-descriptor hits_addend of 0 checks without charging.
	peek := descriptor("to_number", "2061111111")
	peek.HitsAddend = wrapperspb.UInt64(0)
	s.expect(t, 5, req("messaging", 0, peek), rlsOK, rlsWant{rlsOK, 93, left - 3600, 100, day})
	// The counters are keys of limitdb's keyspace, named as
	// envoyproxy/ratelimit names them in Redis (2026-01-01 is Unix day
	// 1767225600), held as fixed windows that expire with their window.
	c := s.client(t, 2)
	key := "messaging_to_number_2061111111_1767225600"
	require.Equal(t, "fwindow", c.Type(ctx, key).Val())
	require.Equal(t, 17*time.Hour-500*time.Millisecond, c.PTTL(ctx, key).Val())
	// The next day is a new window.
	s.clk.Set(t0 + int64(24*time.Hour))
	s.expect(t, 6, req("messaging", 0, marketing), rlsOK, rlsWant{rlsOK, 4, 86400, 5, day})

}

// TestRLSPerSecondAndShadow: a per-second rule, its window's edges, a
// per-descriptor limit override, and a shadow-mode wildcard rule.
func TestRLSPerSecondAndShadow(t *testing.T) {
	s := startRLS(t, map[string]string{"edge.yml": rlsEdge})
	const (
		second = rlspb.RateLimitResponse_RateLimit_SECOND
		minute = rlspb.RateLimitResponse_RateLimit_MINUTE
	)
	ip := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("remote_address", "10.1.1.1")}}
	s.clk.Set(t0 + int64(900*time.Millisecond))
	for i, w := range []rlsWant{{rlsOK, 2, 1, 3, second}, {rlsOK, 1, 1, 3, second}, {rlsOK, 0, 1, 3, second}, {rlsOver, 0, 1, 3, second}} {
		overall := w.code
		s.expect(t, i, ip, overall, w)
	}
	s.clk.Advance(100 * time.Millisecond) // the next second
	s.expect(t, 4, ip, rlsOK, rlsWant{rlsOK, 2, 1, 3, second})

	// Envoy's per-descriptor limit override replaces the rules' limit.
	over := descriptor("remote_address", "10.2.2.2")
	over.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}
	oreq := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{over}}
	s.expect(t, 5, oreq, rlsOK, rlsWant{rlsOK, 0, 59, 1, minute})
	s.expect(t, 6, oreq, rlsOver, rlsWant{rlsOver, 0, 59, 1, minute})

	// Shadow mode: counted, reported with no remaining, never OVER_LIMIT.
	beta := &rlspb.RateLimitRequest{Domain: "edge", HitsAddend: 2, Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("path", "/beta/search")}}
	s.expect(t, 7, beta, rlsOK, rlsWant{rlsOK, 0, 59, 1, minute})
}

// TestRLSHealthAndReflection: grpc.health.v1 says SERVING for the server
// and the RLS service, and reflection lists the service.
func TestRLSHealthAndReflection(t *testing.T) {
	s := startRLS(t, map[string]string{"edge.yaml": rlsEdge})
	h := healthpb.NewHealthClient(s.conn)
	for _, svc := range []string{"", "envoy.service.ratelimit.v3.RateLimitService"} {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status, "service %q", svc)
	}
	stream, err := reflectpb.NewServerReflectionClient(s.conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.Name)
	}
	require.Contains(t, names, "envoy.service.ratelimit.v3.RateLimitService")
	require.NoError(t, stream.CloseSend())
}

// TestRLSBrokenRules: a rules file that does not load keeps the service
// from starting, and says which file, line and field.
func TestRLSBrokenRules(t *testing.T) {
	dir := t.TempDir()
	bad := "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644))
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir, cfg.RLSConfigDir = 0, 0, t.TempDir(), dir
	srv := node.New(cfg, engine.New(clock.NewFake(t0), 0), nil)
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = srv.ServeGRPC(ln)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "bad.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'"), err.Error())

	// grpc-port 0 (the default) starts nothing.
	addr, err := srv.StartGRPC()
	require.NoError(t, err)
	require.Nil(t, addr)
}

// TestRLSSurvivesRestart: the counters are in the snapshot, so a restart
// answers where the last run left off.
func TestRLSSurvivesRestart(t *testing.T) {
	rules, data := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "messaging.yaml"), []byte(rlsMessaging), 0o644))
	clk := clock.NewFake(t0 + int64(12*time.Hour))
	const day = rlspb.RateLimitResponse_RateLimit_DAY
	req := &rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 3,
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("message_type", "marketing", "to_number", "1")}}

	// A rule of the algorithm extension keeps its state the same way (a
	// sliding log: its ring of stamps is Ext state in the snapshot).
	require.NoError(t, os.WriteFile(filepath.Join(rules, "log.yaml"), []byte(
		"domain: log\ndescriptors:\n  - key: user\n    rate_limit: {unit: day, requests_per_unit: 3, algorithm: sliding_log}\n"), 0o644))
	logReq := &rlspb.RateLimitRequest{Domain: "log", HitsAddend: 2, Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", "u")}}

	a := startRLSIn(t, clk, data, rules)
	a.expect(t, 0, req, rlsOK, rlsWant{rlsOK, 2, 12 * 3600, 5, day})
	a.expect(t, 1, logReq, rlsOK, rlsWant{rlsOK, 1, 24 * 3600, 3, day})
	require.NoError(t, a.srv.Save())
	require.NoError(t, a.srv.Close())

	clk.Advance(time.Hour)
	b := startRLSIn(t, clk, data, rules)
	req.HitsAddend = 1
	b.expect(t, 2, req, rlsOK, rlsWant{rlsOK, 1, 11 * 3600, 5, day})
	logReq.HitsAddend = 2
	b.expect(t, 3, logReq, rlsOver, rlsWant{rlsOver, 1, 23 * 3600, 3, day})
}

// TestRLSReload: the rules directory is watched on the server's clock; an
// edit applies to the next request, a broken edit keeps the last good rules
// and says which file, line and field.
func TestRLSReload(t *testing.T) {
	rules := t.TempDir()
	file := filepath.Join(rules, "messaging.yaml")
	require.NoError(t, os.WriteFile(file, []byte(rlsMessaging), 0o644))
	s := startRLSIn(t, clock.NewFake(t0), t.TempDir(), rules)
	const day = rlspb.RateLimitResponse_RateLimit_DAY
	req := &rlspb.RateLimitRequest{Domain: "messaging", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("to_number", "1")}}
	s.expect(t, 0, req, rlsOK, rlsWant{rlsOK, 99, 86400, 100, day})

	// pollUntil steps the fake clock a second at a time, one poll each,
	// until cond holds.
	pollUntil := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			s.clk.Advance(time.Second)
			return cond()
		}, 5*time.Second, 10*time.Millisecond, what)
	}
	limitOf := func() uint32 {
		if l := s.srv.RLS().Rules().Lookup("messaging", []rls.Entry{{Key: "to_number", Value: "1"}}); l != nil {
			return l.RequestsPerUnit
		}
		return 0
	}

	writeRules(t, file, strings.Replace(rlsMessaging, "requests_per_unit: 100", "requests_per_unit: 3", 1))
	pollUntil("the edit applied", func() bool { return limitOf() == 3 })
	// The counter is the same key: one hit already, so 1 left of 3.
	s.expect(t, 1, req, rlsOK, rlsWant{rlsOK, 1, 86400 - int64(time.Duration(s.clk.Now()-t0)/time.Second), 3, day})

	writeRules(t, file, strings.Replace(rlsMessaging, "unit: day\n      requests_per_unit: 100", "unit: fortnight\n      requests_per_unit: 100", 1))
	pollUntil("the broken file noticed", func() bool { return s.srv.RLS().LastError() != "" })
	require.Contains(t, s.srv.RLS().LastError(), "messaging.yaml:15: descriptors[1].rate_limit.unit: invalid rate limit unit 'fortnight'")
	require.Equal(t, uint32(3), limitOf(), "the last good rules stay")
	s.expect(t, 2, req, rlsOK, rlsWant{rlsOK, 0, 86400 - int64(time.Duration(s.clk.Now()-t0)/time.Second), 3, day})
}

// TestRLSShouldCommand: RL.SHOULD answers from RESP what ShouldRateLimit
// answers, from the same counters.
func TestRLSShouldCommand(t *testing.T) {
	s := startRLS(t, map[string]string{"messaging.yaml": rlsMessaging, "edge.yml": rlsEdge})
	require.NoError(t, s.srv.StartRLS())
	c := s.client(t, 2)
	steps := []struct {
		args []any
		want []any
	}{
		{[]any{"messaging", "message_type", "marketing", "to_number", "1", "HITS", "4"}, []any{"OK", "OK", int64(5), int64(1), int64(86400)}},
		{[]any{"messaging", "message_type", "marketing", "to_number", "1", "hits", "0"}, []any{"OK", "OK", int64(5), int64(1), int64(86400)}},
		{[]any{"messaging", "message_type", "marketing", "to_number", "1"}, []any{"OK", "OK", int64(5), int64(0), int64(86400)}},
		{[]any{"messaging", "message_type", "marketing", "to_number", "1"}, []any{"OVER_LIMIT", "OVER_LIMIT", int64(5), int64(0), int64(86400)}},
		// No rule, and an unknown domain: OK with no limit.
		{[]any{"messaging", "nope", "x"}, []any{"OK", "OK", nil, int64(0), nil}},
		{[]any{"unknown", "to_number", "1"}, []any{"OK", "OK", nil, int64(0), nil}},
		// Shadow mode: over, but OK.
		{[]any{"edge", "path", "/beta/x", "HITS", "2"}, []any{"OK", "OK", int64(1), int64(0), int64(60)}},
	}
	for i, st := range steps {
		got, err := c.Do(ctx, append([]any{"RL.SHOULD"}, st.args...)...).Result()
		require.NoError(t, err, "step %d", i)
		require.Equal(t, st.want, got, "step %d: RL.SHOULD %v", i, st.args)
	}
	// The gRPC side sees the counter RL.SHOULD charged.
	req := &rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 0,
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("message_type", "marketing", "to_number", "1")}}
	s.expect(t, len(steps), req, rlsOver, rlsWant{rlsOver, 0, 86400, 5, rlspb.RateLimitResponse_RateLimit_DAY})

	for _, bad := range [][]any{
		{"RL.SHOULD", "messaging", "to_number"},
		{"RL.SHOULD", "messaging", "to_number", "1", "x"},
		{"RL.SHOULD", "messaging", "to_number", "1", "HITS", "-1"},
	} {
		require.Error(t, c.Do(ctx, bad...).Err(), "%v", bad)
	}
}

// TestRLSHTTP: envoyproxy/ratelimit's HTTP side: /json answers the JSON
// form of the gRPC request from the same counters (429 when over),
// /healthcheck says OK, /rlconfig lists the rules one per line.
func TestRLSHTTP(t *testing.T) {
	s := startRLS(t, map[string]string{"messaging.yaml": rlsMessaging, "edge.yml": rlsEdge})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.srv.ServeRLSHTTP(ln)
	base := "http://" + ln.Addr().String()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/json", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(out)
	}

	code, body := get("/healthcheck")
	require.Equal(t, 200, code)
	require.Equal(t, "OK", body)

	code, body = get("/rlconfig")
	require.Equal(t, 200, code)
	require.Equal(t, "edge.path_/beta/*: unit=MINUTE requests_per_unit=1, shadow_mode: true, quota_mode: false\n"+
		"edge.remote_address: unit=SECOND requests_per_unit=3, shadow_mode: false, quota_mode: false\n"+
		"messaging.message_type_marketing.to_number: unit=DAY requests_per_unit=5, shadow_mode: false, quota_mode: false\n"+
		"messaging.to_number: unit=DAY requests_per_unit=100, shadow_mode: false, quota_mode: false\n", body)

	const req = `{"domain":"messaging","hits_addend":5,"descriptors":[{"entries":[{"key":"message_type","value":"marketing"},{"key":"to_number","value":"1"}]}]}`
	steps := []struct {
		code    int
		overall string
		remain  float64
	}{{200, "OK", 0}, {429, "OVER_LIMIT", 0}}
	for i, st := range steps {
		code, body = post(req)
		require.Equal(t, st.code, code, "step %d: %s", i, body)
		var got struct {
			OverallCode string `json:"overallCode"`
			Statuses    []struct {
				Code           string  `json:"code"`
				LimitRemaining float64 `json:"limitRemaining"`
				CurrentLimit   struct {
					RequestsPerUnit float64 `json:"requestsPerUnit"`
					Unit            string  `json:"unit"`
				} `json:"currentLimit"`
				DurationUntilReset string `json:"durationUntilReset"`
			} `json:"statuses"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		require.Equal(t, st.overall, got.OverallCode, "step %d: %s", i, body)
		require.Len(t, got.Statuses, 1)
		require.Equal(t, st.overall, got.Statuses[0].Code, "step %d", i)
		require.Equal(t, st.remain, got.Statuses[0].LimitRemaining, "step %d", i)
		require.Equal(t, float64(5), got.Statuses[0].CurrentLimit.RequestsPerUnit)
		require.Equal(t, "DAY", got.Statuses[0].CurrentLimit.Unit)
		require.Equal(t, "86400s", got.Statuses[0].DurationUntilReset)
	}
	// The gRPC port sees what /json charged.
	s.expect(t, 2, &rlspb.RateLimitRequest{Domain: "messaging",
		Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("message_type", "marketing", "to_number", "1")}},
		rlsOver, rlsWant{rlsOver, 0, 86400, 5, rlspb.RateLimitResponse_RateLimit_DAY})

	for _, bad := range []string{`{`, `{"domain":""}`, `{"domain":"messaging","descriptors":[]}`, `{"nope":1}`} {
		code, _ = post(bad)
		require.Equal(t, 400, code, bad)
	}
	resp, err := http.Get(base + "/json")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestRLSResponseHeaders: rls-response-headers yes adds the RateLimit-*
// headers to the gRPC answer; the default adds none.
func TestRLSResponseHeaders(t *testing.T) {
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "messaging.yaml"), []byte(rlsMessaging), 0o644))
	req := &rlspb.RateLimitRequest{Domain: "messaging", HitsAddend: 2, Descriptors: []*rlcommon.RateLimitDescriptor{
		descriptor("to_number", "1"), descriptor("message_type", "marketing", "to_number", "1")}}
	for _, on := range []bool{false, true} {
		clk := clock.NewFake(t0 + int64(20*time.Hour))
		cfg := config.Default()
		cfg.Save, cfg.Port, cfg.Dir, cfg.RLSConfigDir, cfg.RLSResponseHeaders = 0, 0, t.TempDir(), rules, on
		srv := node.New(cfg, engine.New(clk, 0), nil)
		serve(t, srv, clk)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go srv.ServeGRPC(ln)
		conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		resp, err := rlspb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, req)
		require.NoError(t, err)
		var got []string
		for _, h := range resp.ResponseHeadersToAdd {
			got = append(got, h.Key+": "+h.Value)
		}
		if !on {
			require.Empty(t, got)
			continue
		}
		// The marketing rule (5 a day) is the most restrictive: 3 left.
		require.Equal(t, []string{"RateLimit-Limit: 5", "RateLimit-Remaining: 3", "RateLimit-Reset: 14400"}, got)
	}
}

// TestRLSAlgorithmsAllOrNothing: over gRPC, a rule with limitdb's
// algorithm extension and the rls-all-or-nothing directive.
func TestRLSAlgorithmsAllOrNothing(t *testing.T) {
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "api.yaml"), []byte(`domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: gcra, burst: 2}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 100}
`), 0o644))
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir, cfg.RLSConfigDir, cfg.RLSAllOrNothing = 0, 0, t.TempDir(), rules, true
	srv := node.New(cfg, engine.New(clk, 0), nil)
	ts := serve(t, srv, clk)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	s := &rlsServer{testServer: ts, conn: conn, rls: rlspb.NewRateLimitServiceClient(conn)}

	const (
		second = rlspb.RateLimitResponse_RateLimit_SECOND
		minute = rlspb.RateLimitResponse_RateLimit_MINUTE
	)
	req := &rlspb.RateLimitRequest{Domain: "api", Descriptors: []*rlcommon.RateLimitDescriptor{
		descriptor("user", "u1"), descriptor("tenant", "t1")}}
	// GCRA, one a second and two at once: two pass, the third is refused
	// and, all or nothing, the tenant's window is not charged for it.
	s.expect(t, 0, req, rlsOK, rlsWant{rlsOK, 1, 1, 1, second}, rlsWant{rlsOK, 99, 60, 100, minute})
	s.expect(t, 1, req, rlsOK, rlsWant{rlsOK, 0, 2, 1, second}, rlsWant{rlsOK, 98, 60, 100, minute})
	s.expect(t, 2, req, rlsOver, rlsWant{rlsOver, 0, 1, 1, second}, rlsWant{rlsOK, 98, 60, 100, minute})
	// A second later one more fits.
	s.clk.Advance(time.Second)
	s.expect(t, 3, req, rlsOK, rlsWant{rlsOK, 0, 2, 1, second}, rlsWant{rlsOK, 97, 59, 100, minute})
	c := s.client(t, 2)
	require.Equal(t, "gcra", c.Type(ctx, "api_user_u1_gcra").Val())
}
