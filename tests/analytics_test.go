package tests

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/metrics"
)

// topOf runs RL.TOP and renders its [[key, count, error], ...] reply as
// "key=count/error ..." for comparison.
func topOf(t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"RL.TOP"}, args...)...).Slice()
	require.NoError(t, err, "RL.TOP %v", args)
	var out []string
	for _, e := range v {
		kv := e.([]any)
		out = append(out, fmt.Sprintf("%s=%d/%d", kv[0], kv[1], kv[2]))
	}
	return strings.Join(out, " ")
}

// historyOf runs RL.HISTORY and renders its [[time, admitted, denied,
// shadow_denied], ...] reply, times relative to base seconds.
func historyOf(t *testing.T, c *redis.Client, base int64, args ...any) string {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"RL.HISTORY"}, args...)...).Slice()
	require.NoError(t, err, "RL.HISTORY %v", args)
	var out []string
	for _, e := range v {
		p := e.([]any)
		out = append(out, fmt.Sprintf("%+d:%d/%d/%d", p[0].(int64)-base, p[1], p[2], p[3]))
	}
	return strings.Join(out, " ")
}

// TestAnalyticsOverRESP: RL.TOP ranks the keys a policy denied, hit and
// left near its limit; RL.HISTORY counts admitted, denied and a shadow
// policy's would-be denials per second and per minute on the server's
// clock; limiter commands run directly and from a script are ranked under
// the command; the period slides; CONFIG SET analytics no stops it.
func TestAnalyticsOverRESP(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "api", "fixed_window", 10, "1m").Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "beta", "fixed_window", 1, "1m", "SHADOW").Err())
	require.Equal(t, "no", c.ConfigGet(ctx, "analytics").Val()["analytics"], "analytics is off by default")
	require.EqualError(t, c.Do(ctx, "RL.TOP", "api").Err(), "ERR analytics is off: CONFIG SET analytics yes starts recording")
	require.NoError(t, c.ConfigSet(ctx, "analytics", "yes").Err())
	sec := t0 / 1e9

	hit := func(policy, key string, n int) {
		for i := 0; i < n; i++ {
			require.NoError(t, c.Do(ctx, "RL.HIT", policy, key).Err())
		}
	}
	// second 0: user:1 12 times (10 admitted, the last 3 of them with 2
	// or fewer of 10 left; 2 denied), user:2 9 times (2 near), user:3 once.
	hit("api", "user:1", 12)
	hit("api", "user:2", 9)
	hit("api", "user:3", 1)
	// second 1: the shadow policy lets user:9 through 3 times, and would
	// have refused 2 of them.
	ts.clk.Advance(time.Second)
	hit("beta", "user:9", 3)

	require.Equal(t, "user:1=2/0", topOf(t, c, "api"))
	require.Equal(t, "user:1=2/0", topOf(t, c, "api", "denied"))
	require.Equal(t, "user:1=12/0 user:2=9/0 user:3=1/0", topOf(t, c, "api", "HITS"))
	require.Equal(t, "user:1=12/0 user:2=9/0", topOf(t, c, "api", "HITS", "COUNT", 2))
	require.Equal(t, "user:1=3/0 user:2=2/0", topOf(t, c, "api", "NEAR"))
	require.Equal(t, "user:9=2/0", topOf(t, c, "beta", "DENIED"), "a shadow policy ranks its would-be denials")
	require.Equal(t, "", topOf(t, c, "nothing"), "a name never decided has an empty ranking")

	require.Equal(t, "-1:0/0/0 +0:20/2/0 +1:0/0/0", historyOf(t, c, sec, "api", "COUNT", 3))
	require.Equal(t, "-1:0/0/0 +0:3/0/2", historyOf(t, c, sec+1, "beta", "SECONDS", "COUNT", 2))
	require.Equal(t, 60, len(c.Do(ctx, "RL.HISTORY", "api").Val().([]any)), "COUNT defaults to 60")
	minute := sec - sec%60
	require.Equal(t, "+0:20/2/0", historyOf(t, c, minute, "api", "MINUTES", "COUNT", 1))

	// Limiter commands, from a connection and from a script's redis.call,
	// rank under the command's name.
	for i := 0; i < 3; i++ {
		c.Do(ctx, "CL.THROTTLE", "k", 1, 1, 60)
	}
	require.NoError(t, c.Eval(ctx, "return redis.call('CL.THROTTLE', KEYS[1], 1, 1, 60)", []string{"s"}).Err())
	require.Equal(t, "k=1/0", topOf(t, c, "CL.THROTTLE"))
	require.Equal(t, "k=3/0 s=1/0", topOf(t, c, "cl.throttle", "HITS"))
	// RL.HIT's decisions rank under their policy alone, not twice.
	require.Equal(t, "", topOf(t, c, "rl.hit", "HITS"))

	// The period slides: the rankings count this period and the last.
	require.NoError(t, c.ConfigSet(ctx, "analytics-period", "10s").Err())
	ts.clk.Advance(10 * time.Second)
	require.Equal(t, "user:1=12/0 user:2=9/0 user:3=1/0", topOf(t, c, "api", "HITS"))
	ts.clk.Advance(10 * time.Second)
	require.Equal(t, "", topOf(t, c, "api", "HITS"))
	require.Equal(t, "+0:20/2/0", historyOf(t, c, minute, "api", "MINUTES", "COUNT", 1), "the history outlives the period")

	info := c.Info(ctx, "limits").Val()
	for k, want := range map[string]string{"analytics_enabled": "1", "analytics_period": "10", "analytics_tracked": "3", "analytics_memory_bytes": fmt.Sprint(3 * 149416)} {
		got, _ := infoField(info, k)
		require.Equal(t, want, got, "INFO limits %s\n%s", k, info)
	}

	// Bad input is a clear error.
	for _, e := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.TOP", "api", "BOGUS"}, "ERR syntax error"},
		{[]any{"RL.TOP", "api", "HITS", "NEAR"}, "ERR syntax error"},
		{[]any{"RL.TOP", "api", "COUNT", "-1"}, "ERR count must be at least 0, got -1"},
		{[]any{"RL.TOP", "api", "COUNT"}, "ERR syntax error"},
		{[]any{"RL.TOP"}, "ERR wrong number of arguments for 'rl.top' command"},
		{[]any{"RL.HISTORY", "api", "SECONDS", "COUNT", "3601"}, "ERR count must be at most 3600 for SECONDS, got 3601"},
		{[]any{"RL.HISTORY", "api", "MINUTES", "COUNT", "1441"}, "ERR count must be at most 1440 for MINUTES, got 1441"},
		{[]any{"RL.HISTORY", "api", "COUNT", "0"}, "ERR count must be at least 1, got 0"},
		{[]any{"RL.HISTORY", "api", "HOURS"}, "ERR syntax error"},
	} {
		err := c.Do(ctx, e.args...).Err()
		require.Error(t, err, "%v", e.args)
		require.Equal(t, e.want, err.Error(), "%v", e.args)
	}
	require.EqualError(t, c.ConfigSet(ctx, "analytics-period", "0.5s").Err(), "ERR CONFIG SET failed (possibly related to argument 'analytics-period') - analytics-period must be from 1s to 1d")

	// Off: nothing recorded, and the commands say why.
	require.NoError(t, c.ConfigSet(ctx, "analytics", "no").Err())
	require.EqualError(t, c.Do(ctx, "RL.TOP", "api").Err(), "ERR analytics is off: CONFIG SET analytics yes starts recording")
	require.EqualError(t, c.Do(ctx, "RL.HISTORY", "api").Err(), "ERR analytics is off: CONFIG SET analytics yes starts recording")
	hit("api", "user:4", 1)
	info = c.Info(ctx, "limits").Val()
	got, _ := infoField(info, "analytics_enabled")
	require.Equal(t, "0", got)
	require.NoError(t, c.ConfigSet(ctx, "analytics", "yes").Err())
	require.Equal(t, "", topOf(t, c, "api", "HITS"), "turned on again, it starts afresh")
	hit("api", "user:5", 1)
	require.Equal(t, "user:5=1/0", topOf(t, c, "api", "HITS"))
}

// TestAnalyticsFollowsTheACL: RL.TOP and RL.HISTORY are read commands of
// the rate_limit group: a user with +@read or +@rate_limit runs them, one
// with only the limiter commands it hits cannot.
func TestAnalyticsFollowsTheACL(t *testing.T) {
	t.Parallel()
	path := writeACL(t, `user default on nopass +@all
user ops on >opspw nocommands +@read
user app on >apppw nocommands +rl.hit +rl.policy|set
user limiter on >limiterpw nocommands +@rate_limit
`)
	ts, _ := startWith(t, func(c *config.Config) { c.ACLFile, c.Analytics = path, true }, nil)
	login := func(user, pass string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: user, Password: pass, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	admin := ts.client(t, 2)
	require.NoError(t, admin.Do(ctx, "RL.POLICY", "SET", "api", "gcra", 1, "1m").Err())
	app := login("app", "apppw")
	require.NoError(t, app.Do(ctx, "RL.HIT", "api", "user:1").Err())
	require.NoError(t, app.Do(ctx, "RL.HIT", "api", "user:1").Err())
	for _, user := range []*redis.Client{login("ops", "opspw"), login("limiter", "limiterpw")} {
		require.Equal(t, "user:1=1/0", topOf(t, user, "api"))
		require.NoError(t, user.Do(ctx, "RL.HISTORY", "api").Err())
	}
	for _, cmd := range []string{"RL.TOP", "RL.HISTORY"} {
		require.EqualError(t, app.Do(ctx, cmd, "api").Err(),
			"NOPERM User app has no permissions to run the '"+strings.ToLower(cmd)+"' command")
	}
	cats := admin.Do(ctx, "COMMAND", "INFO", "RL.TOP").Val().([]any)[0].([]any)[6]
	require.ElementsMatch(t, []any{"@read", "@slow", "@rate_limit"}, cats)
	for _, cmd := range []string{"RL.TOP", "RL.HISTORY"} {
		docs := fmt.Sprint(admin.Do(ctx, "COMMAND", "DOCS", cmd).Val())
		require.Contains(t, docs, "summary", "COMMAND DOCS %s: %s", cmd, docs)
		require.Contains(t, docs, "rate_limit", "COMMAND DOCS %s: %s", cmd, docs)
	}
}

// TestAnalyticsOverRLS: Envoy's gRPC requests are ranked under RLS.CHARGE
// by the client's counter key without its window, with a shadow mode
// rule's would-be denials as denials; the metrics endpoint exports the top
// keys as labelled gauges.
func TestAnalyticsOverRLS(t *testing.T) {
	s := startRLS(t, map[string]string{"messaging.yaml": rlsMessaging, "edge.yml": rlsEdge})
	require.NoError(t, s.srv.StartRLS())
	addr, err := metrics.Serve(s.srv.CommandServer(), s.srv.Snapshots(), s.srv.Policies(), s.srv.RLS(), s.srv.Analytics(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	c := s.client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "analytics", "yes").Err())
	req := func(domain string, d *rlcommon.RateLimitDescriptor) {
		_, err := s.rls.ShouldRateLimit(ctx, &rlspb.RateLimitRequest{Domain: domain, Descriptors: []*rlcommon.RateLimitDescriptor{d}})
		require.NoError(t, err)
	}
	for i := 0; i < 7; i++ { // 5 a day: 2 over, 1 near (the 5th leaves 0 of 5)
		req("messaging", descriptor("message_type", "marketing", "to_number", "1"))
	}
	req("messaging", descriptor("to_number", "2"))
	for i := 0; i < 3; i++ { // shadow mode, 1 a minute: 2 would-be denials
		req("edge", descriptor("path", "/beta/x"))
	}
	require.Equal(t, "messaging_message_type_marketing_to_number_1=7/0 edge_path_/beta/x=3/0 messaging_to_number_2=1/0",
		topOf(t, c, "RLS.CHARGE", "HITS"))
	require.Equal(t, "edge_path_/beta/x=2/0 messaging_message_type_marketing_to_number_1=2/0", topOf(t, c, "rls.charge"))

	// RL.POLICY hits on this server too, so that the metrics carry both kinds.
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "api", "gcra", 1, "1m").Err())
	c.Do(ctx, "RL.HIT", "api", "user:1")
	c.Do(ctx, "RL.HIT", "api", "user:1")
	c.Do(ctx, "RL.HIT", "api", "\xff\xfeip") // not UTF-8: a label value must be

	res, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`limitdb_top_key_decisions{key="messaging_message_type_marketing_to_number_1",kind="command",name="rls.charge",ranking="denied"} 2`,
		`limitdb_top_key_decisions{key="messaging_message_type_marketing_to_number_1",kind="command",name="rls.charge",ranking="hits"} 7`,
		`limitdb_top_key_decisions{key="user:1",kind="policy",name="api",ranking="denied"} 1`,
		"limitdb_top_key_decisions{key=\"\ufffdip\",kind=\"policy\",name=\"api\",ranking=\"hits\"} 1",
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	if strings.Contains(string(body), `name="rl.hit"`) {
		t.Error("/metrics ranks RL.HIT's keys under the command as well as the policy")
	}
}
