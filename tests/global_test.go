package tests

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/limitdb/limitdb/policy"
	"github.com/redis/go-redis/v9"
)

// regionSet is three regions (eu, us, ap) on one fake clock, each pair
// linked through delaying proxies: RTT eu-us 40 ms, eu-ap 80 ms, us-ap
// 150 ms.
type regionSet struct {
	clk     *clock.Fake
	names   []string
	nodes   map[string]*node.Node
	clients map[string]*redis.Client
	proxies map[[2]string]*delayProxy // [from, to]
	logs    map[string]*syncBuffer
	cfgs    map[string]config.Config
	addrs   map[string]string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var regionRTT = map[[2]string]time.Duration{
	{"eu", "us"}: 40 * time.Millisecond, {"eu", "ap"}: 80 * time.Millisecond, {"us", "ap"}: 150 * time.Millisecond,
}

func rtt(a, b string) time.Duration {
	if d, ok := regionRTT[[2]string{a, b}]; ok {
		return d
	}
	return regionRTT[[2]string{b, a}]
}

func startRegions(t *testing.T, onPartition string, mods ...func(*config.Config)) *regionSet {
	t.Helper()
	rs := &regionSet{clk: clock.NewFake(t0), names: []string{"eu", "us", "ap"}, nodes: map[string]*node.Node{},
		clients: map[string]*redis.Client{}, proxies: map[[2]string]*delayProxy{}, logs: map[string]*syncBuffer{},
		cfgs: map[string]config.Config{}, addrs: map[string]string{}}
	lns := map[string]net.Listener{}
	for _, n := range rs.names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[n] = ln
	}
	for _, from := range rs.names {
		for _, to := range rs.names {
			if from != to {
				rs.proxies[[2]string{from, to}] = newDelayProxy(t, rs.clk, lns[to].Addr().String(), rtt(from, to)/2)
			}
		}
	}
	for _, n := range rs.names {
		cfg := config.Default()
		cfg.Save, cfg.Port, cfg.Dir = 0, 0, t.TempDir()
		cfg.Region, cfg.OnPartition = n, onPartition
		cfg.RegionPeerTimeout = 500 * time.Millisecond
		var peers []string
		for _, to := range rs.names {
			if to != n {
				peers = append(peers, to+"="+rs.proxies[[2]string{n, to}].addr())
			}
		}
		cfg.RegionPeers = strings.Join(peers, " ")
		for _, mod := range mods {
			mod(&cfg)
		}
		rs.cfgs[n], rs.addrs[n] = cfg, lns[n].Addr().String()
		rs.logs[n] = &syncBuffer{}
		srv := node.New(cfg, engine.New(rs.clk, 0), log.New(rs.logs[n], "", 0))
		runNode(t, srv, lns[n])
		rs.nodes[n] = srv
		c := redis.NewClient(&redis.Options{Addr: lns[n].Addr().String(), Protocol: 2})
		t.Cleanup(func() { c.Close() })
		rs.clients[n] = c
	}
	return rs
}

// restart closes region n's node and starts it again on the same address
// and data directory.
func (rs *regionSet) restart(t *testing.T, n string) {
	t.Helper()
	rs.clients[n].Close()
	if err := rs.nodes[n].Close(); err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	waitFor(t, n+"'s port to be free again", func() bool {
		var err error
		ln, err = net.Listen("tcp", rs.addrs[n])
		return err == nil
	})
	srv := node.New(rs.cfgs[n], engine.New(rs.clk, 0), log.New(rs.logs[n], "", 0))
	runNode(t, srv, ln)
	rs.nodes[n] = srv
	c := redis.NewClient(&redis.Options{Addr: rs.addrs[n], Protocol: 2})
	t.Cleanup(func() { c.Close() })
	rs.clients[n] = c
}

// define sets the same policy in every region.
func (rs *regionSet) define(t *testing.T, args ...any) {
	t.Helper()
	for _, n := range rs.names {
		if err := rs.clients[n].Do(context.Background(), append([]any{"RL.POLICY", "SET"}, args...)...).Err(); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

// pace advances the fake clock by 1 ms every millisecond of real time
// until stop, so that the regions' sync loops and the proxies' delays run
// at about the pace of real time.
func (rs *regionSet) pace() (stop func()) {
	ts := &testServer{clk: rs.clk}
	return ts.stepping(time.Millisecond)
}

// hit sends RL.HIT policy key to region n and reports whether it was admitted.
func (rs *regionSet) hit(t *testing.T, n, pol, key string) bool {
	v, err := rs.clients[n].Do(context.Background(), "RL.HIT", pol, key).Slice()
	if err != nil {
		t.Fatalf("%s: RL.HIT: %v", n, err)
	}
	return v[0].(int64) == 0
}

// maxLags reads each region's peers' max lag from INFO regions.
func (rs *regionSet) lags(t *testing.T, n string) []policy.PeerLag {
	t.Helper()
	return rs.nodes[n].Policies().Lags()
}

// run sends a client at rate per second of fake time for d, share[n] of
// it to region n, and returns the admitted count and the largest bound
// any region reported.
func (rs *regionSet) run(t *testing.T, pol, key string, rate float64, d time.Duration, share map[string]float64) (admitted int, bound int64) {
	t.Helper()
	stop := rs.pace()
	defer stop()
	p, _ := rs.nodes["eu"].Policies().Get(pol)
	owed := map[string]float64{}
	end := rs.clk.Now() + int64(d)
	step := 5 * time.Millisecond
	for next := rs.clk.Now(); next < end; next += int64(step) {
		for rs.clk.Now() < next {
			<-rs.clk.After(time.Millisecond)
		}
		for _, n := range rs.names {
			owed[n] += rate * share[n] * step.Seconds()
			for ; owed[n] >= 1; owed[n]-- {
				if rs.hit(t, n, pol, key) {
					admitted++
				}
			}
		}
	}
	for _, n := range rs.names {
		bound = max(bound, policy.Bound(p.Policy, rs.lags(t, n)))
	}
	return admitted, bound
}

// TestGlobalPolicyAdmitsWithinTheBound: a client at twice its limit,
// spread evenly over three regions or 90% in one, is admitted at most the
// limit plus the bound the regions report, per window; a local policy in
// the same run admits each region's own limit.
func TestGlobalPolicyAdmitsWithinTheBound(t *testing.T) {
	rs := startRegions(t, config.PartitionKeepLast)
	const limit, windows = 200, 2
	window := time.Second
	rs.define(t, "g", "fixed_window", limit, "1s", "SCOPE", "global")
	rs.define(t, "sw", "sliding_window", limit, "1s", "SCOPE", "global")
	rs.define(t, "loc", "fixed_window", limit, "1s")
	shapes := map[string]map[string]float64{
		"even":   {"eu": 1.0 / 3, "us": 1.0 / 3, "ap": 1.0 / 3},
		"90%-us": {"eu": 0.05, "us": 0.9, "ap": 0.05},
	}
	rate := 2 * float64(limit) / window.Seconds()
	for _, name := range []string{"even", "90%-us"} {
		for _, pol := range []string{"g", "sw"} {
			t.Run(name+"/"+pol, func(t *testing.T) {
				// Start at a window's start.
				w := int64(window)
				rs.clk.Set((rs.clk.Now()/w + 1) * w)
				got, bound := rs.run(t, pol, "client-"+name, rate, windows*window, shapes[name])
				cap := windows * (limit + bound)
				t.Logf("%s %s: admitted %d over %d windows of %d (bound %d per window)", pol, name, got, windows, limit, bound)
				if int64(got) > cap {
					t.Fatalf("admitted %d, more than %d windows x (limit %d + bound %d) = %d", got, windows, limit, bound, cap)
				}
				if got < windows*limit*8/10 {
					t.Fatalf("admitted %d, far below %d windows x %d: the regions deny what they should admit", got, windows, limit)
				}
			})
		}
	}
	t.Run("local", func(t *testing.T) {
		rs.clk.Set((rs.clk.Now()/int64(window) + 1) * int64(window))
		got, _ := rs.run(t, "loc", "client-local", rate, window, shapes["even"])
		if got < 3*limit*6/10 {
			t.Fatalf("a local policy admitted %d: each region should admit its own share, about %d", got, 2*limit)
		}
	})
	for _, n := range rs.names {
		info := rs.clients[n].Info(context.Background(), "regions").Val()
		if !strings.Contains(info, "region:"+n) || !strings.Contains(info, "global_g:algorithm=fixed_window") || strings.Contains(info, "state=partitioned") {
			t.Fatalf("%s INFO regions:\n%s", n, info)
		}
	}
	// RL.POLICY GET reports the bound and each peer's lag.
	m, err := rs.clients["eu"].Do(context.Background(), "RL.POLICY", "GET", "g").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m[20:24]) != fmt.Sprint([]any{"scope", "global", "bound", m[23]}) {
		t.Fatalf("RL.POLICY GET g: %v", m)
	}
	peers := m[25].([]any)
	if len(peers) != 2 || peers[0].([]any)[0] != "us" || peers[0].([]any)[1].(int64) < 50 {
		t.Fatalf("peers %v: want us then ap, lag at least the 50 ms interval", peers)
	}
}

// TestGlobalPolicyPartitionAndHeal: a region cut off for longer than
// region-peer-timeout is reported partitioned (INFO, the log) and counted
// as on-partition says; after the link heals the regions converge.
func TestGlobalPolicyPartitionAndHeal(t *testing.T) {
	rs := startRegions(t, config.PartitionFairShare)
	rs.define(t, "g", "fixed_window", 300, "60s", "SCOPE", "global")
	stop := rs.pace()
	defer stop()
	ctx := context.Background()
	// Some traffic, heard everywhere.
	for i := 0; i < 30; i++ {
		rs.hit(t, "ap", "g", "k")
	}
	waitFor(t, "eu to hear ap's 30", func() bool { return remaining(t, rs.clients["eu"], "g", "k") == 270 })
	// Cut ap off both ways.
	for k, p := range rs.proxies {
		if k[0] == "ap" || k[1] == "ap" {
			p.partition(true)
		}
	}
	waitFor(t, "eu to see ap partitioned", func() bool {
		return strings.Contains(rs.clients["eu"].Info(ctx, "regions").Val(), "region_partitioned_peers:1")
	})
	if !strings.Contains(rs.logs["eu"].String(), "peer ap silent") {
		t.Fatalf("eu's log says nothing of the partition:\n%s", rs.logs["eu"].String())
	}
	// fair-share: ap counts as at least 300/3 = 100, not its 30.
	if got := remaining(t, rs.clients["eu"], "g", "k"); got != 200 {
		t.Fatalf("eu during the partition: remaining %d, want 200 (ap counted at its fair share, 100)", got)
	}
	// ap goes on alone; the others keep serving.
	for i := 0; i < 20; i++ {
		rs.hit(t, "ap", "g", "k")
	}
	if !rs.hit(t, "us", "g", "k") {
		t.Fatal("us denied while ap is cut off")
	}
	for _, p := range rs.proxies {
		p.partition(false)
	}
	healed := rs.clk.Now()
	waitFor(t, "eu to hear ap's 50 after the heal", func() bool { return remaining(t, rs.clients["eu"], "g", "k") == 249 })
	t.Logf("converged %v of fake time after the heal", time.Duration(rs.clk.Now()-healed))
	if !strings.Contains(rs.logs["eu"].String(), "peer ap heard again") {
		t.Fatalf("eu's log says nothing of the heal:\n%s", rs.logs["eu"].String())
	}
}

// remaining peeks policy pol for key in a region.
func remaining(t *testing.T, c *redis.Client, pol, key string) int64 {
	v, err := c.Do(context.Background(), "RL.HIT", pol, key, 0).Slice()
	if err != nil {
		t.Fatal(err)
	}
	return v[2].(int64)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGlobalPolicyRegionRestartsWithItsAOF: a region restarted with its
// append-only file keeps its own counts (the AOF has them) and hears the
// peers' again from the full state their links send on reconnecting: a
// window counts every region once, as before the restart. A bucket absorbs
// the peers' consumption a second time, so the restarted region denies
// more than the others (never admits more) until its bucket drains, and
// then agrees with them again.
func TestGlobalPolicyRegionRestartsWithItsAOF(t *testing.T) {
	rs := startRegions(t, config.PartitionKeepLast, func(c *config.Config) {
		c.AppendOnly.AppendOnly, c.AppendFsync = true, "always"
	})
	rs.define(t, "g", "fixed_window", 300, "60s", "SCOPE", "global")
	rs.define(t, "b", "gcra", 300, "60s", "SCOPE", "global")
	stop := rs.pace()
	defer stop()
	for i := 0; i < 30; i++ {
		rs.hit(t, "us", "g", "k")
		rs.hit(t, "us", "b", "k")
	}
	for i := 0; i < 20; i++ {
		rs.hit(t, "eu", "g", "k")
		rs.hit(t, "eu", "b", "k")
	}
	for _, n := range rs.names {
		waitFor(t, n+" to hear the 50", func() bool { return remaining(t, rs.clients[n], "g", "k") == 250 })
	}
	bEU := remaining(t, rs.clients["eu"], "b", "k")
	if bUS := remaining(t, rs.clients["us"], "b", "k"); bUS > bEU {
		t.Fatalf("bucket before the restart: us %d, eu %d", bUS, bEU)
	}
	rs.restart(t, "us")
	// The window: us's own 30 from its AOF and eu's 20 heard again, once.
	waitFor(t, "us to hear eu's 20 again", func() bool { return remaining(t, rs.clients["us"], "g", "k") == 250 })
	rs.hit(t, "us", "g", "k")
	for _, n := range rs.names {
		waitFor(t, n+" to count us's hit after the restart", func() bool { return remaining(t, rs.clients[n], "g", "k") == 249 })
	}
	// The bucket: eu's 20 absorbed twice at us, never fewer.
	waitFor(t, "us to hear eu's bucket again", func() bool {
		us, eu := remaining(t, rs.clients["us"], "b", "k"), remaining(t, rs.clients["eu"], "b", "k")
		return us <= eu-15
	})
	// Once the buckets drain (a whole period), the regions agree again.
	rs.clk.Advance(61 * time.Second)
	full := remaining(t, rs.clients["eu"], "b", "never-hit")
	for _, n := range rs.names {
		waitFor(t, n+"'s bucket to be full again", func() bool { return remaining(t, rs.clients[n], "b", "k") == full })
	}
}
