package tests

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/testlog"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// startRulesServer starts a server watching the rules file path every 10 ms,
// with its log captured.
func startRulesServer(t *testing.T, path string) (*testServer, *testlog.Buffer) {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port, cfg.Dir, cfg.Rules, cfg.RulesPoll = 0, t.TempDir(), path, 10*time.Millisecond
	logs := &testlog.Buffer{}
	srv := node.New(cfg, engine.New(clk, 0), log.New(logs, "", 0))
	return serve(t, srv, clk), logs // loads the rules file (node.Run)
}

func writeRules(t *testing.T, path, src string) {
	t.Helper()
	// Write a new file and rename it over the old one, as editors and
	// config management do: the watcher never sees a half-written file.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(src), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// setPolicy defines a runtime policy for the test and deletes it after:
// policies are per process, shared by every test server.
func setPolicy(t *testing.T, c *redis.Client, name string, args ...any) {
	t.Helper()
	if err := c.Do(ctx, append([]any{"RL.POLICY", "SET", name}, args...)...).Err(); err != nil {
		t.Fatalf("RL.POLICY SET %s: %v", name, err)
	}
	t.Cleanup(func() { c.Do(ctx, "RL.POLICY", "DEL", name) })
}

func policyField(t *testing.T, c *redis.Client, name, field string) any {
	t.Helper()
	v, err := c.Do(ctx, "RL.POLICY", "GET", name).Result()
	if err != nil {
		t.Fatalf("RL.POLICY GET %s: %v", name, err)
	}
	switch m := v.(type) {
	case map[any]any:
		return m[field]
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == field {
				return m[i+1]
			}
		}
	}
	t.Fatalf("RL.POLICY GET %s: no %s in %#v", name, field, v)
	return nil
}

func TestRLHitOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := ts.client(t, proto)
			name := fmt.Sprint("wire-api", proto)
			setPolicy(t, c, name, "gcra", 10, "1s")
			steps := []struct {
				advance time.Duration
				args    []any
				want    []int64
			}{
				{0, nil, []int64{0, 10, 9, -1, 100}},
				{0, []any{0}, []int64{0, 10, 9, -1, 100}},
				{0, []any{9}, []int64{0, 10, 0, -1, 1000}},
				{0, nil, []int64{1, 10, 0, 100, 1000}},
				{100 * time.Millisecond, nil, []int64{0, 10, 0, -1, 1000}},
				{0, []any{11}, []int64{1, 10, 0, -1, 1000}},
			}
			for i, s := range steps {
				ts.clk.Advance(s.advance)
				got := ints(t, c.Do(ctx, append([]any{"RL.HIT", name, "bob"}, s.args...)...))
				if !slices.Equal(got, s.want) {
					t.Errorf("step %d: %v, want %v", i, got, s.want)
				}
			}
			if got := policyField(t, c, name, "denied"); got != int64(2) {
				t.Errorf("denied = %v, want 2", got)
			}
		})
	}
}

func TestPolicyStateIsAKeyOfItsOwn(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	setPolicy(t, c, "a", "gcra", 1, "1m")
	setPolicy(t, c, "b", "gcra", 1, "1m")
	ints(t, c.Do(ctx, "RL.HIT", "a", "bob"))
	if got := ints(t, c.Do(ctx, "RL.HIT", "b", "bob")); got[0] != 0 {
		t.Fatalf("b shared a's state: %v", got)
	}
	keys := c.Keys(ctx, "*").Val()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"rl:a:bob", "rl:b:bob"}) {
		t.Fatalf("KEYS * = %v", keys)
	}
	if typ := c.Type(ctx, "rl:a:bob").Val(); typ != "gcra" {
		t.Fatalf("TYPE = %q", typ)
	}
	if pttl := c.PTTL(ctx, "rl:a:bob").Val(); pttl != time.Minute {
		t.Fatalf("PTTL = %v, want 1m", pttl)
	}
	if got := ints(t, c.Do(ctx, "RL.HIT", "a", "bob")); got[0] != 1 {
		t.Fatalf("a second hit on a: %v, want denied", got)
	}
	c.Del(ctx, "bob") // the client key is not the policy's state
	if got := ints(t, c.Do(ctx, "RL.HIT", "a", "bob")); got[0] != 1 {
		t.Fatalf("DEL bob reset policy a: %v", got)
	}
	c.Del(ctx, "rl:a:bob") // this is
	if got := ints(t, c.Do(ctx, "RL.HIT", "a", "bob")); got[0] != 0 {
		t.Fatalf("after DEL rl:a:bob: %v, want admitted", got)
	}
	// A string someone SET under a policy's key is never overwritten.
	if c.Set(ctx, "rl:a:carol", "x", 0).Err() == nil {
		if err := c.Do(ctx, "RL.HIT", "a", "carol").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("RL.HIT over a string: %v, want WRONGTYPE", err)
		}
	}
}

// hitAllReply splits [limited, [..], [..]] into the flag and the replies.
func hitAllReply(t *testing.T, cmd *redis.Cmd) (int64, [][]int64) {
	t.Helper()
	v, err := cmd.Result()
	if err != nil {
		t.Fatalf("RL.HITALL: %v", err)
	}
	arr := v.([]any)
	var out [][]int64
	for _, x := range arr[1:] {
		var r []int64
		for _, n := range x.([]any) {
			r = append(r, n.(int64))
		}
		out = append(out, r)
	}
	return arr[0].(int64), out
}

func TestRLHitAllOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := ts.client(t, proto)
			sfx := fmt.Sprint(proto)
			setPolicy(t, c, "sec"+sfx, "gcra", 10, "1s")
			setPolicy(t, c, "day"+sfx, "gcra", 3, "1d")
			// Keys spread over shards: user and IP under two policies.
			args := []any{"RL.HITALL", 3, "sec" + sfx, "user:1", "day" + sfx, "user:1", "sec" + sfx, "ip:10.0.0.1"}
			for i := 0; i < 3; i++ {
				limited, rs := hitAllReply(t, c.Do(ctx, args...))
				if limited != 0 || len(rs) != 3 || rs[1][2] != int64(2-i) {
					t.Fatalf("call %d: %d %v", i, limited, rs)
				}
			}
			limited, rs := hitAllReply(t, c.Do(ctx, args...))
			want := [][]int64{{0, 10, 7, -1, 300}, {1, 3, 0, 28800000, 86400000}, {0, 10, 7, -1, 300}}
			if limited != 1 || fmt.Sprint(rs) != fmt.Sprint(want) {
				t.Fatalf("denied call: %d %v, want 1 %v", limited, rs, want)
			}
			// Nothing was charged by the denial: sec still has 7 for both keys.
			if got := ints(t, c.Do(ctx, "RL.HIT", "sec"+sfx, "ip:10.0.0.1", 0)); got[2] != 7 {
				t.Fatalf("sec after the denied call: %v", got)
			}
			// COST applies to every pair; COST 0 peeks.
			limited, rs = hitAllReply(t, c.Do(ctx, "RL.HITALL", 1, "sec"+sfx, "user:2", "COST", 4))
			if limited != 0 || rs[0][2] != 6 {
				t.Fatalf("COST 4: %d %v", limited, rs)
			}
			limited, rs = hitAllReply(t, c.Do(ctx, "RL.HITALL", 1, "sec"+sfx, "user:2", "cost", 0))
			if limited != 0 || rs[0][2] != 6 {
				t.Fatalf("COST 0: %d %v", limited, rs)
			}
		})
	}
}

func TestPolicyErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	setPolicy(t, c, "a", "gcra", 1, "1s")
	cases := []errCase{
		{[]any{"RL.HIT", "nope", "k"}, "ERR unknown policy 'nope'"},
		{[]any{"RL.HIT", "a"}, "ERR wrong number of arguments for 'rl.hit' command"},
		{[]any{"RL.HIT", "a", "k", 1, 2}, "ERR wrong number of arguments for 'rl.hit' command"},
		{[]any{"RL.HIT", "a", "k", -1}, "ERR cost must be at least 0, got -1"},
		{[]any{"RL.HIT", "a", "k", "x"}, "ERR cost must be an integer, got 'x'"},
		{[]any{"RL.HITALL", 1, "a"}, "ERR wrong number of arguments for 'rl.hitall' command"},
		{[]any{"RL.HITALL", 0, "a", "k"}, "ERR numpairs must be at least 1, got 0"},
		{[]any{"RL.HITALL", 2, "a", "k"}, "ERR numpairs is larger than the number of policy key pairs given"},
		{[]any{"RL.HITALL", 1, "a", "k", "extra"}, "ERR syntax error"},
		{[]any{"RL.HITALL", 1, "a", "k", "COST"}, "ERR syntax error"},
		{[]any{"RL.HITALL", 1, "a", "k", "COST", -2}, "ERR cost must be at least 0, got -2"},
		{[]any{"RL.HITALL", 2, "a", "k", "nope", "k"}, "ERR unknown policy 'nope'"},
		{[]any{"RL.POLICY", "SET", "b", "magic", 1, "1s"}, "ERR unknown algorithm 'magic'"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 0, "1s"}, "ERR limit must be at least 1, got 0"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 1, "1w"}, "ERR invalid period '1w': unknown unit"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 1, "1s", "BURST"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 1, "1s", "BURST", 0}, "ERR burst must be at least 1, got 0"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 1, "1s", "SHADOW", "SHADOW"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "b", "sliding_log", 1, "1s", "BURST", 2}, "ERR invalid burst: sliding_log has no burst"},
		{[]any{"RL.POLICY", "SET", "b:c", "gcra", 1, "1s"}, "ERR invalid name"},
		{[]any{"RL.POLICY", "SET", "b", "gcra", 1}, "ERR wrong number of arguments for 'rl.policy|set' command"},
		{[]any{"RL.POLICY", "NOPE"}, "ERR unknown subcommand 'NOPE'. Try RL.POLICY HELP."},
		{[]any{"RL.POLICY", "RELOAD"}, "ERR no rules file configured"},
	}
	expectErrors(t, c, cases, 0)
}

func TestRLPolicyCommands(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 3)
	setPolicy(t, c, "login", "GCRA", 5, "1m", "BURST", 2, "SHADOW")
	setPolicy(t, c, "api", "gcra", 100, "60")
	got, err := c.Do(ctx, "RL.POLICY", "GET", "login").Result()
	require.NoError(t, err)
	want := map[any]any{"name": "login", "algorithm": "gcra", "limit": int64(5), "period": "1m", "burst": int64(2),
		"shadow": int64(1), "source": "runtime", "admitted": int64(0), "denied": int64(0), "shadow_denied": int64(0)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET login = %v, want %v", got, want)
	}
	if v := policyField(t, c, "api", "burst"); v != int64(100) {
		t.Fatalf("default burst = %v, want the limit", v)
	}
	if err := c.Do(ctx, "RL.POLICY", "GET", "nope").Err(); err != redis.Nil {
		t.Fatalf("GET of an unknown policy: %v, want null", err)
	}
	if names, _ := c.Do(ctx, "RL.POLICY", "LIST").StringSlice(); !slices.Contains(names, "api") || !slices.Contains(names, "login") || !slices.IsSorted(names) {
		t.Fatalf("LIST = %v", names)
	}
	if n, _ := c.Do(ctx, "RL.POLICY", "DEL", "api").Int(); n != 1 {
		t.Fatalf("DEL api = %d", n)
	}
	if n, _ := c.Do(ctx, "RL.POLICY", "DEL", "api").Int(); n != 0 {
		t.Fatalf("DEL api twice = %d", n)
	}
	if err := c.Do(ctx, "RL.HIT", "api", "k").Err(); err == nil {
		t.Fatal("a deleted policy still answers")
	}
	// Shadow: never denies, counts would-be denials in INFO limits.
	for i := 0; i < 4; i++ {
		if got := ints(t, c.Do(ctx, "RL.HIT", "login", "eve")); got[0] != 0 {
			t.Fatalf("shadow hit %d: %v", i, got)
		}
	}
	info := c.Info(ctx, "limits").Val()
	if !strings.Contains(info, "policy_login:algorithm=gcra,limit=5,period=1m,burst=2,shadow=1,source=runtime,admitted=4,denied=0,shadow_denied=2") {
		t.Fatalf("INFO limits lacks the policy line:\n%s", info)
	}
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	if info := c.Info(ctx, "limits").Val(); !strings.Contains(info, "source=runtime,admitted=0,denied=0,shadow_denied=0") {
		t.Fatalf("CONFIG RESETSTAT left the policy's counters:\n%s", info)
	}
	help, _ := c.Do(ctx, "RL.POLICY", "HELP").StringSlice()
	if len(help) < 12 || !strings.Contains(strings.Join(help, "\n"), "RELOAD") {
		t.Fatalf("HELP = %v", help)
	}
}

const rulesV1 = `policies:
  - name: api
    algorithm: gcra
    limit: 2
    period: 1m
  - name: trial
    algorithm: gcra
    limit: 1
    period: 1m
    shadow: true
`

func TestRulesFileHotReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	writeRules(t, path, rulesV1)
	ts, logs := startRulesServer(t, path)
	c := ts.client(t, 2)
	if got := ints(t, c.Do(ctx, "RL.HIT", "api", "bob")); !slices.Equal(got, []int64{0, 2, 1, -1, 30000}) {
		t.Fatalf("first hit: %v", got)
	}
	if v := policyField(t, c, "api", "source"); v != "file" {
		t.Fatalf("source = %v", v)
	}
	if err := c.Do(ctx, "RL.POLICY", "SET", "api", "gcra", 9, "1s").Err(); err == nil || !strings.Contains(err.Error(), "defined by the rules file") {
		t.Fatalf("SET over a file policy: %v", err)
	}
	if err := c.Do(ctx, "RL.POLICY", "DEL", "trial").Err(); err == nil {
		t.Fatal("DEL of a file policy succeeded")
	}
	if v, _ := c.ConfigGet(ctx, "rules*").Result(); v["rules"] != path || v["rules-poll"] != "10ms" {
		t.Fatalf("CONFIG GET rules* = %v", v)
	}

	// The watcher applies an edit by itself at its next poll, which the
	// test's clock steps; bob keeps his usage (1 of 2 becomes 1 of 4).
	writeRules(t, path, strings.Replace(rulesV1, "limit: 2", "limit: 4", 1))
	if !ts.clk.WaitForWaiters(3, 5*time.Second) { // the watcher's ticker, expiry's and snapshots'
		t.Fatal("the rules watcher is not waiting on the clock")
	}
	for i := 0; policyField(t, c, "api", "limit") != int64(4); i++ {
		if i == 500 {
			t.Fatalf("the edit was not applied after 500 polls; log:\n%s", logs.String())
		}
		ts.clk.Advance(10 * time.Millisecond)
	}
	if got := ints(t, c.Do(ctx, "RL.HIT", "api", "bob", 0)); got[2] != 3 {
		t.Fatalf("after the edit: %v, want remaining 3", got)
	}

	// A broken edit: RELOAD says where, the last good rules stay, the log says why.
	writeRules(t, path, strings.Replace(rulesV1, "period: 1m\n  - name: trial", "period: soon\n  - name: trial", 1))
	err := c.Do(ctx, "RL.POLICY", "RELOAD").Err()
	if err == nil || !strings.Contains(err.Error(), `limits.yaml:5: policies[0] (api): field period: invalid duration "soon"`) {
		t.Fatalf("RELOAD of a broken file: %v", err)
	}
	if v := policyField(t, c, "api", "limit"); v != int64(2) && v != int64(4) {
		t.Fatalf("limit = %v after a broken file", v)
	}
	if got := ints(t, c.Do(ctx, "RL.HIT", "trial", "x")); got[0] != 0 {
		t.Fatalf("policies lost on a broken file: %v", got)
	}
	if !strings.Contains(logs.String(), "keeping the last good rules") {
		t.Fatalf("the broken file was not logged:\n%s", logs.String())
	}

	// A fixed file that drops a policy and adds one: RELOAD applies it at once.
	writeRules(t, path, "policies:\n  - name: fresh\n    algorithm: gcra\n    limit: 1\n    period: 1s\n")
	require.NoError(t, c.Do(ctx, "RL.POLICY", "RELOAD").Err())
	if names, _ := c.Do(ctx, "RL.POLICY", "LIST").StringSlice(); !slices.Contains(names, "fresh") || slices.Contains(names, "trial") {
		t.Fatalf("LIST after RELOAD = %v", names)
	}
	if err := c.Do(ctx, "RL.HIT", "api", "bob").Err(); err == nil || !strings.Contains(err.Error(), "unknown policy 'api'") {
		t.Fatalf("a removed policy: %v", err)
	}
}

func TestRulesFileBrokenAtStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	writeRules(t, path, "policies:\n  - name: a\n    algorithm: gcra\n    limit: 0\n    period: 1s\n")
	cfg := config.Default()
	cfg.Rules = path
	srv := node.New(cfg, engine.New(clock.NewFake(t0), 0), log.New(&bytes.Buffer{}, "", 0))
	defer srv.Close()
	err := srv.StartRules()
	if err == nil || !strings.Contains(err.Error(), "limits.yaml:4: policies[0] (a): field limit: must be at least 1, got 0") {
		t.Fatalf("StartRules = %v, want the line and field", err)
	}
	cfg.Rules = filepath.Join(t.TempDir(), "missing.yaml")
	srv2 := node.New(cfg, engine.New(clock.NewFake(t0), 0), log.New(&bytes.Buffer{}, "", 0))
	defer srv2.Close()
	if err := srv2.StartRules(); err == nil {
		t.Fatal("StartRules with a missing file succeeded")
	}
}

// The example file the README uses loads as it is.
func TestExampleRulesFile(t *testing.T) {
	t.Parallel()
	ts, _ := startRulesServer(t, "../examples/limits.yaml")
	c := ts.client(t, 2)
	names, _ := c.Do(ctx, "RL.POLICY", "LIST").StringSlice()
	if len(names) < 7 {
		t.Fatalf("examples/limits.yaml defines %v", names)
	}
	limited, _ := hitAllReply(t, c.Do(ctx, "RL.HITALL", 2, "api-per-second", "user:42", "api-daily", "user:42"))
	if limited != 0 {
		t.Fatal("the README's RL.HITALL example is denied")
	}
}

// Runtime policies live in the snapshot's "policies" section and their
// state in ordinary keys: both come back after a restart.
func TestRuntimePoliciesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := serverFromDir(t, clock.NewFake(t0), dir)
	ca := a.client(t, 2)
	setPolicy(t, ca, "restart-login", "sliding_log", 3, "1m", "SHADOW")
	setPolicy(t, ca, "restart-api", "gcra", 10, "1m", "BURST", 5)
	setPolicy(t, ca, "restart-wait", "token_bucket", 10, "1m", "WAITREPLICAS", 2)
	ints(t, ca.Do(ctx, "RL.HIT", "restart-api", "bob", 2))
	require.NoError(t, ca.Do(ctx, "SAVE").Err())
	// Policies are per process: forget them, as a restarted process would.
	for _, name := range []string{"restart-login", "restart-api", "restart-wait"} {
		ca.Do(ctx, "RL.POLICY", "DEL", name)
	}
	b := serverFromDir(t, clock.NewFake(t0), dir)
	cb := b.client(t, 3)
	if v := policyField(t, cb, "restart-login", "algorithm"); v != "sliding_log" {
		t.Fatalf("restored algorithm = %v", v)
	}
	if v := policyField(t, cb, "restart-login", "shadow"); v != int64(1) {
		t.Fatalf("restored shadow = %v", v)
	}
	if v := policyField(t, cb, "restart-wait", "wait_replicas"); v != int64(2) {
		t.Fatalf("restored wait_replicas = %v", v)
	}
	if got := ints(t, cb.Do(ctx, "RL.HIT", "restart-api", "bob", 0)); !slices.Equal(got, []int64{0, 5, 3, -1, 12000}) {
		t.Fatalf("restored state: %v, want 2 of 5 used", got)
	}
}

// Inside MULTI/EXEC the derived keys are held like any other: EXEC locks
// every shard around RL.HIT and RL.HITALL, and concurrent clients never
// deadlock against it.
func TestPoliciesInsideMulti(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	setPolicy(t, c, "multi-a", "gcra", 100, "1m")
	setPolicy(t, c, "multi-b", "fixed_window", 100, "1m")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			cg := ts.client(t, 2)
			for i := 0; i < 10; i++ {
				if g%2 == 0 {
					cmds, err := cg.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Do(ctx, "RL.HIT", "multi-a", "u")
						p.Do(ctx, "RL.HITALL", 2, "multi-a", "u", "multi-b", "ip")
						return nil
					})
					if err != nil || len(cmds) != 2 {
						t.Errorf("EXEC: %v %v", cmds, err)
						return
					}
				} else if err := cg.Do(ctx, "RL.HITALL", 2, "multi-b", "ip", "multi-a", "u").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	// 2 goroutines x 10 transactions x 2 charges + 2 x 10 HITALLs = 60 on multi-a.
	if got := ints(t, c.Do(ctx, "RL.HIT", "multi-a", "u", 0)); got[2] != 40 {
		t.Fatalf("multi-a remaining %d, want 40", got[2])
	}
}
