package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/metrics"
	"github.com/limitdb/limitdb/node"
)

// The conformance test runs one rules file and one request sequence
// against limitdb and against the real envoyproxy/ratelimit (its Redis
// fixed window, default settings, backed by redis-server) and requires the
// same answers, the same counter keys and the same per-rule statistics.
// .ci/run builds envoyproxy/ratelimit; elsewhere the test skips when it is
// absent (point RATELIMIT_BIN at a service_cmd binary to run it).

// rlsConformanceRules exercise every rule feature the answers depend on.
// Every window is an hour or longer and the test starts away from an
// hour's end, so no window rolls over while it runs.
const rlsConformanceRules = `domain: conf
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 5
  - key: plan
    value: gold
    rate_limit:
      unit: hour
      requests_per_unit: 3
    descriptors:
      - key: user
        rate_limit:
          unit: day
          requests_per_unit: 2
  - key: path
    value: /api/*
    rate_limit:
      unit: hour
      requests_per_unit: 2
  - key: path
    value: /shared/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 3
  - key: org
    value: acme
    descriptors:
      - key: path
        value: /v1/*
        share_threshold: true
        rate_limit:
          unit: hour
          requests_per_unit: 2
      - key: path
        rate_limit:
          unit: week
          requests_per_unit: 4
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: free
    rate_limit:
      unlimited: true
  - key: tenant
    rate_limit:
      name: tenant_default
      unit: hour
      requests_per_unit: 10
  - key: tier
    value: vip
    rate_limit:
      name: vip
      unit: hour
      requests_per_unit: 1
      replaces:
        - name: tenant_default
  - key: internal
    rate_limit:
      name: internal
      unlimited: true
      replaces:
        - name: vip
  - key: route
    value_to_metric: true
    rate_limit:
      unit: hour
      requests_per_unit: 4
  - key: client
    detailed_metric: true
    rate_limit:
      unit: month
      requests_per_unit: 3
`

// conformanceStep is one request; its answers are compared, not written
// down: the real service is the expectation.
type conformanceStep struct {
	name string
	req  *rlspb.RateLimitRequest
}

func conformanceSteps() []conformanceStep {
	req := func(domain string, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlspb.RateLimitRequest {
		return &rlspb.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: ds}
	}
	addend := func(d *rlcommon.RateLimitDescriptor, n uint64) *rlcommon.RateLimitDescriptor {
		d.HitsAddend = wrapperspb.UInt64(n)
		return d
	}
	override := func(d *rlcommon.RateLimitDescriptor, n uint32, unit typev3.RateLimitUnit) *rlcommon.RateLimitDescriptor {
		d.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: n, Unit: unit}
		return d
	}
	d := descriptor
	return []conformanceStep{
		{"one descriptor, hits_addend 0 counts as 1", req("conf", 0, d("user", "a"))},
		{"hits_addend 3", req("conf", 3, d("user", "a"))},
		{"hits_addend 2 goes over", req("conf", 2, d("user", "a"))},
		{"over stays over", req("conf", 0, d("user", "a"))},
		{"another value, its own counter", req("conf", 0, d("user", "b"))},
		{"several descriptors", req("conf", 1, d("user", "c"), d("plan", "gold"), d("plan", "gold", "user", "c"))},
		{"several descriptors, one goes over", req("conf", 2, d("user", "c"), d("plan", "gold"), d("plan", "gold", "user", "c"))},
		{"after one went over", req("conf", 0, d("user", "c"), d("plan", "gold"))},
		{"per-descriptor hits_addend 0 checks", req("conf", 0, addend(d("user", "c"), 0), addend(d("user", "d"), 0))},
		{"per-descriptor hits_addend beside the request's", req("conf", 2, addend(d("user", "e"), 4), d("user", "f"))},
		{"unknown domain", req("nowhere", 0, d("user", "a"), d("x", "y"))},
		{"unknown descriptor", req("conf", 0, d("nope", "x"), d("user", "g"))},
		{"deeper than the rules", req("conf", 0, d("user", "a", "x", "y"))},
		{"shorter than the rules", req("conf", 0, d("org", "acme"))},
		{"per-descriptor override", req("conf", 0, override(d("user", "h"), 2, typev3.RateLimitUnit_HOUR))},
		{"per-descriptor override, again", req("conf", 2, override(d("user", "h"), 2, typev3.RateLimitUnit_HOUR))},
		{"override of a descriptor without a rule", req("conf", 0, override(d("nope", "y"), 1, typev3.RateLimitUnit_DAY))},
		{"override in an unknown domain", req("nowhere", 0, override(d("user", "h"), 1, typev3.RateLimitUnit_HOUR))},
		{"override counts apart from the rule", req("conf", 0, d("user", "h"))},
		{"wildcard", req("conf", 0, d("path", "/api/a"))},
		{"wildcard, another value", req("conf", 2, d("path", "/api/b"))},
		{"wildcard, another value over", req("conf", 2, d("path", "/api/a"))},
		{"wildcard not matching", req("conf", 0, d("path", "/other"))},
		{"share_threshold", req("conf", 2, d("path", "/shared/a"))},
		{"share_threshold shares", req("conf", 1, d("path", "/shared/b"))},
		{"share_threshold over together", req("conf", 0, d("path", "/shared/c"))},
		{"nested wildcard with share_threshold", req("conf", 0, d("org", "acme", "path", "/v1/x"), d("org", "acme", "path", "/v1/y"))},
		{"nested wildcard over", req("conf", 0, d("org", "acme", "path", "/v1/z"))},
		{"nested default key", req("conf", 3, d("org", "acme", "path", "/v2/x"))},
		{"nested default key, over", req("conf", 2, d("org", "acme", "path", "/v2/y"))},
		{"shadow_mode", req("conf", 0, d("shadow", "s"))},
		{"shadow_mode over stays OK", req("conf", 2, d("shadow", "s"))},
		{"shadow_mode beside a limit over", req("conf", 0, d("shadow", "s"), d("user", "a"))},
		{"unlimited", req("conf", 9, d("free", "x"))},
		{"unlimited beside a limit", req("conf", 0, d("free", "x"), d("user", "i"))},
		{"replaced", req("conf", 0, d("tenant", "t1"), d("tier", "vip"))},
		{"replaced, again", req("conf", 0, d("tenant", "t1"), d("tier", "vip"))},
		{"not replaced alone", req("conf", 0, d("tenant", "t1"))},
		{"an unlimited rule replaces a replacer", req("conf", 0, d("tenant", "t2"), d("tier", "vip"), d("internal", "i"))},
		{"value_to_metric", req("conf", 0, d("route", "/a"), d("route", "/b"))},
		{"detailed_metric", req("conf", 2, d("client", "c1"), d("client", "c2"))},
		{"detailed_metric over", req("conf", 2, d("client", "c1"))},
		{"detailed_metric of an address", req("conf", 0, d("client", "10.0.0.1:80|x"))},
		{"empty value", req("conf", 0, d("user", ""))},
		{"no entries", req("conf", 0, &rlcommon.RateLimitDescriptor{}, d("user", "j"))},
		{"the same counter twice in one request", req("conf", 2, d("user", "k"), d("user", "k"), d("path", "/shared/d"))},
	}
}

// rlsPeer is a running envoyproxy/ratelimit: its gRPC client, its Redis
// and its Prometheus endpoint.
type rlsPeer struct {
	rls     rlspb.RateLimitServiceClient
	redis   *redis.Client
	metrics string // host:port
	debug   string // host:port of /rlconfig
}

// ratelimitBin is envoyproxy/ratelimit's service_cmd: $RATELIMIT_BIN, or
// where .ci/run and bench/rls.sh install it.
func ratelimitBin(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RATELIMIT_BIN"), "/tmp/peers/service_cmd"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing(t, "envoyproxy/ratelimit is not installed (GOBIN=/tmp/peers go install github.com/envoyproxy/ratelimit/src/service_cmd@latest, or set RATELIMIT_BIN)")
	return ""
}

// startRatelimitPeer runs redis-server, then, once it answers,
// envoyproxy/ratelimit with rules on loopback ports, with env added to
// its environment.
func startRatelimitPeer(t *testing.T, rules map[string]string, env ...string) *rlsPeer {
	t.Helper()
	bin := ratelimitBin(t)
	rdb := startRedis(t)
	sock := rdb.Options().Addr
	root := t.TempDir()
	cfgDir := filepath.Join(root, "ratelimit", "config")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	for name, body := range rules {
		require.NoError(t, os.WriteFile(filepath.Join(cfgDir, name), []byte(body), 0o644))
	}
	port, grpcPort, debugPort, promPort := freePort(t), freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(port),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(debugPort),
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"REDIS_SOCKET_TYPE=unix", "REDIS_URL="+sock,
		"USE_STATSD=false", "USE_PROMETHEUS=true", "PROMETHEUS_ADDR=127.0.0.1:"+strconv.Itoa(promPort),
		"STATS_FLUSH_INTERVAL=100ms", "LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	logf := filepath.Join(root, "log")
	out, err := os.Create(logf)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); out.Close() })
	health := fmt.Sprintf("http://127.0.0.1:%d/healthcheck", port)
	for i := 0; ; i++ {
		res, err := http.Get(health)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if i == 200 {
			log, _ := os.ReadFile(logf)
			t.Fatalf("envoyproxy/ratelimit did not start: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &rlsPeer{rls: rlspb.NewRateLimitServiceClient(conn), redis: rdb, metrics: net.JoinHostPort("127.0.0.1", strconv.Itoa(promPort)),
		debug: net.JoinHostPort("127.0.0.1", strconv.Itoa(debugPort))}
}

// startRLSRealClock is a limitdb server with rules on the wall clock, as
// the peer runs, so both count in the same windows; set changes its
// directives.
func startRLSRealClock(t *testing.T, rules map[string]string, set ...func(*config.Config)) *rlsServer {
	t.Helper()
	dir := t.TempDir()
	for name, body := range rules {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir = 0, 0, t.TempDir()
	cfg.RLSConfigDir = dir
	for _, f := range set {
		f(&cfg)
	}
	srv := node.New(cfg, engine.New(clock.Real(), 0), nil)
	ts := serve(t, srv, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &rlsServer{testServer: ts, conn: conn, rls: rlspb.NewRateLimitServiceClient(conn)}
}

// awayFromHourEnd waits, when the hour ends within the next two minutes,
// until just after it ends: every window of the test (an hour or longer,
// all aligned to the epoch) then stays open while it runs.
func awayFromHourEnd(t *testing.T) {
	now := time.Now()
	end := now.Truncate(time.Hour).Add(time.Hour)
	if left := end.Sub(now); left < 2*time.Minute {
		t.Logf("waiting %v for the hour to end", left)
		time.Sleep(left + time.Second)
	}
}

// TestRLSConformance: limitdb answers as envoyproxy/ratelimit answers.
func TestRLSConformance(t *testing.T) {
	rules := map[string]string{"conf.yaml": rlsConformanceRules}
	peer := startRatelimitPeer(t, rules, "LIMIT_RESPONSE_HEADERS_ENABLED=true")
	s := startRLSRealClock(t, rules)
	s.srv.RLS().SetResponseHeaders(true)
	awayFromHourEnd(t)

	for i, step := range conformanceSteps() {
		want, err := peer.rls.ShouldRateLimit(ctx, step.req)
		require.NoError(t, err, "step %d (%s): envoyproxy/ratelimit", i, step.name)
		got, err := s.rls.ShouldRateLimit(ctx, step.req)
		require.NoError(t, err, "step %d (%s): limitdb", i, step.name)
		compareRLS(t, fmt.Sprintf("step %d (%s)", i, step.name), want, got)
	}

	compareRLSState(t, peer, s)
}

// compareRLSState requires s to hold the peer's counters under the same
// keys and to serve its per-rule statistics.
func compareRLSState(t *testing.T, peer *rlsPeer, s *rlsServer) {
	t.Helper()
	// The same counters under the same keys, but for the keys that hold
	// 0: envoyproxy/ratelimit's INCRBY 0 (hits_addend 0) creates one,
	// where limitdb writes nothing, an absent counter being a 0 count.
	all, err := peer.redis.Keys(ctx, "*").Result()
	require.NoError(t, err)
	var peerKeys []string
	for _, k := range all {
		if v, err := peer.redis.Get(ctx, k).Result(); err != nil || v != "0" {
			peerKeys = append(peerKeys, k)
		}
	}
	ourKeys, err := s.client(t, 2).Keys(ctx, "*").Result()
	require.NoError(t, err)
	sort.Strings(peerKeys)
	sort.Strings(ourKeys)
	require.Equal(t, peerKeys, ourKeys, "counter keys")

	// The same per-rule statistics under the same Prometheus names and
	// labels (detailed_metric and value_to_metric name them after the
	// request's values). The peer publishes every STATS_FLUSH_INTERVAL, and
	// only the counters that moved; limitdb lists a rule's five counters
	// from its first hit, so 0s are left out of the comparison.
	addr, err := metrics.Serve(s.srv.CommandServer(), s.srv.Snapshots(), s.srv.Policies(), s.srv.RLS(), s.srv.Analytics(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	ours := rlsSeries(t, addr.String())
	var theirs []string
	for i := 0; i < 50; i++ {
		if theirs = rlsSeries(t, peer.metrics); slices.Equal(theirs, ours) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, theirs, ours, "per-rule statistics")
}

// rlsSeries are the per-rule counters' lines of the Prometheus endpoint
// at addr, but for those at 0, sorted.
func rlsSeries(t *testing.T, addr string) []string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		for _, c := range []string{"total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode"} {
			if strings.HasPrefix(line, "ratelimit_service_rate_limit_"+c+"{") && !strings.HasSuffix(line, "} 0") {
				out = append(out, line)
			}
		}
	}
	sort.Strings(out)
	return out
}

// compareRLS requires got to answer as want: the overall code, per
// descriptor the code, current_limit, limit_remaining and
// duration_until_reset, and the RateLimit-* headers (times within a
// second: the two read the clock apart).
func compareRLS(t *testing.T, step string, want, got *rlspb.RateLimitResponse) {
	t.Helper()
	if len(got.ResponseHeadersToAdd) != len(want.ResponseHeadersToAdd) {
		t.Errorf("%s: headers %v, envoyproxy/ratelimit %v", step, got.ResponseHeadersToAdd, want.ResponseHeadersToAdd)
	} else {
		for i, w := range want.ResponseHeadersToAdd {
			g := got.ResponseHeadersToAdd[i]
			gv, _ := strconv.Atoi(g.Value)
			wv, _ := strconv.Atoi(w.Value)
			// The third is the reset, in seconds.
			if g.Key != w.Key || (g.Value != w.Value && (i != 2 || gv-wv > 1 || wv-gv > 1)) {
				t.Errorf("%s: header %s: %s, envoyproxy/ratelimit %s: %s", step, g.Key, g.Value, w.Key, w.Value)
			}
		}
	}
	if got.OverallCode != want.OverallCode {
		t.Errorf("%s: overall_code %v, envoyproxy/ratelimit %v", step, got.OverallCode, want.OverallCode)
	}
	if len(got.Statuses) != len(want.Statuses) {
		t.Fatalf("%s: %d statuses, envoyproxy/ratelimit %d", step, len(got.Statuses), len(want.Statuses))
	}
	for i, w := range want.Statuses {
		g := got.Statuses[i]
		if g.Code != w.Code || g.LimitRemaining != w.LimitRemaining {
			t.Errorf("%s, descriptor %d: %v limit_remaining %d, envoyproxy/ratelimit %v %d", step, i, g.Code, g.LimitRemaining, w.Code, w.LimitRemaining)
		}
		if (g.CurrentLimit == nil) != (w.CurrentLimit == nil) ||
			g.CurrentLimit.GetRequestsPerUnit() != w.CurrentLimit.GetRequestsPerUnit() ||
			g.CurrentLimit.GetUnit() != w.CurrentLimit.GetUnit() || g.CurrentLimit.GetName() != w.CurrentLimit.GetName() {
			t.Errorf("%s, descriptor %d: current_limit %v, envoyproxy/ratelimit %v", step, i, g.CurrentLimit, w.CurrentLimit)
		}
		gd, wd := g.DurationUntilReset, w.DurationUntilReset
		if (gd == nil) != (wd == nil) || gd.AsDuration()-wd.AsDuration() > time.Second || wd.AsDuration()-gd.AsDuration() > time.Second {
			t.Errorf("%s, descriptor %d: duration_until_reset %v, envoyproxy/ratelimit %v", step, i, gd, wd)
		}
	}
}
