package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
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
