package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/policy"
)

func TestPolicyMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, c, addr := startWithMetrics(t)
	for _, p := range [][]any{{"metrics-strict", "gcra", 1, "1m"}, {"metrics-trial", "sliding_log", 1, "1m", "SHADOW"}} {
		if err := c.Do(ctx, append([]any{"RL.POLICY", "SET"}, p...)...).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Do(ctx, "RL.POLICY", "DEL", p[0]) })
	}
	for i := 0; i < 3; i++ { // strict: 1 admitted, 2 denied; trial: 3 admitted, 2 of them shadow-denied
		c.Do(ctx, "RL.HIT", "metrics-strict", "k")
		c.Do(ctx, "RL.HIT", "metrics-trial", "k")
	}
	res, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`limitdb_policy_admitted_total{policy="metrics-strict"} 1`,
		`limitdb_policy_denied_total{policy="metrics-strict"} 2`,
		`limitdb_policy_shadow_denied_total{policy="metrics-strict"} 0`,
		`limitdb_policy_admitted_total{policy="metrics-trial"} 3`,
		`limitdb_policy_denied_total{policy="metrics-trial"} 0`,
		`limitdb_policy_shadow_denied_total{policy="metrics-trial"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// fixedLags is policy.Peers reporting two peers' lags.
type fixedLags struct{}

func (fixedLags) Table() *policy.PeerTable { return nil }
func (fixedLags) Regions() int             { return 3 }
func (fixedLags) Lags() []policy.PeerLag {
	return []policy.PeerLag{{Name: "us", Lag: 100 * time.Millisecond, MaxLag: 150 * time.Millisecond},
		{Name: "ap", Lag: 200 * time.Millisecond, MaxLag: 250 * time.Millisecond, Partitioned: true}}
}

func TestGlobalPolicyMetrics(t *testing.T) {
	srv, c, addr := startWithMetrics(t)
	ctx := context.Background()
	srv.Policies().SetPeers(fixedLags{})
	t.Cleanup(func() { c.Do(ctx, "RL.POLICY", "DEL", "metrics-global") })
	if err := c.Do(ctx, "RL.POLICY", "SET", "metrics-global", "fixed_window", 6000, "1m", "SCOPE", "global").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`limitdb_global_policy_bound{policy="metrics-global"} 40`, // 100/s x (150 + 250 ms)
		`limitdb_global_policy_peer_bound{peer="us",policy="metrics-global"} 15`,
		`limitdb_region_peer_max_lag_seconds{peer="ap"} 0.25`,
		`limitdb_region_peer_lag_seconds{peer="us"} 0.1`,
		`limitdb_region_peer_partitioned{peer="ap"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
