package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/metrics"
)

// grafanaDashboard is the example dashboard an operator imports into
// Grafana (docs/operations.md).
const grafanaDashboard = "../examples/grafana/limitdb.json"

// TestGrafanaDashboardQueriesExportedSeries: every metric name a PromQL
// expression of the example dashboard queries (panels' targets and the
// template variables' label_values) is a series that a primary with a
// replica, named policies and limiter traffic serves on /metrics. A panel
// over a renamed or misspelt metric would otherwise show "No data" only
// once an operator needs it.
func TestGrafanaDashboardQueriesExportedSeries(t *testing.T) {
	t.Parallel()
	queried := dashboardMetrics(t, grafanaDashboard)
	require.NotEmpty(t, queried)

	p, r := startServer(t), startServer(t)
	paddr, err := metrics.Serve(p.srv.CommandServer(), p.srv.Snapshots(), p.srv.Policies(), p.srv.RLS(), p.srv.Analytics(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	raddr, err := metrics.Serve(r.srv.CommandServer(), r.srv.Snapshots(), r.srv.Policies(), r.srv.RLS(), r.srv.Analytics(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p)

	// Traffic that makes every family of series exist: limiter commands
	// admitted and denied, an error, policies (a shadow one included).
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "SET", "grafana-strict", "gcra", 1, "1m").Err())
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "SET", "grafana-trial", "sliding_log", 1, "1m", "SHADOW").Err())
	for i := 0; i < 3; i++ {
		require.NoError(t, pc.Do(ctx, "RL.HIT", "grafana-strict", "k").Err())
		require.NoError(t, pc.Do(ctx, "RL.HIT", "grafana-trial", "k").Err())
		require.NoError(t, pc.Do(ctx, "CL.THROTTLE", "grafana", 0, 1, 60).Err())
	}
	require.Error(t, pc.Do(ctx, "CL.THROTTLE", "grafana", "x", 1, 60).Err())

	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		exported := scrapeNames(t, paddr.String())
		for name := range scrapeNames(t, raddr.String()) {
			exported[name] = true
		}
		missing = missing[:0]
		for _, name := range queried {
			if !exported[name] {
				missing = append(missing, name)
			}
		}
		// The primary lists its replica once the replica's first
		// acknowledgement arrives: poll for it.
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Empty(t, missing, "the dashboard queries series limitdb does not export (queried: %v)", queried)
}

// scrapeNames returns the names of the series addr's /metrics serves.
func scrapeNames(t *testing.T, addr string) map[string]bool {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// dashboardMetrics returns, sorted, every metric name the dashboard's
// PromQL expressions query: each panel's targets' expr (rows' nested
// panels included) and each query variable's label_values.
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var dash struct {
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is not valid JSON")
	seen := map[string]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type != "row" {
				require.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				names := promqlMetrics(tg.Expr)
				require.NotEmpty(t, names, "panel %q: %q names no metric", p.Title, tg.Expr)
				for _, n := range names {
					seen[n] = true
				}
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil { // older dashboards spell the query as a string
			require.NoError(t, json.Unmarshal(v.Query, &q.Query))
		}
		names := promqlMetrics(q.Query)
		require.NotEmpty(t, names, "variable query %q names no metric", q.Query)
		for _, n := range names {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type grafanaPanel struct {
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promLabelVal = regexp.MustCompile(`\blabel_values\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)[^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true}
)

// promqlMetrics returns the metric names a PromQL expression (or a
// Grafana label_values(metric, label) query) selects: the identifiers
// that are neither functions, keywords, label names in matchers or
// groupings, numbers, durations nor Grafana's $variables.
func promqlMetrics(expr string) []string {
	e := promLabelVal.ReplaceAllString(expr, " $1 ")
	e = promString.ReplaceAllString(e, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRange.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && (e[loc[0]-1] == '$' || e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9' || e[loc[0]-1] == '.') {
			continue // a $variable, or the exponent or unit of a number
		}
		rest := strings.TrimLeft(e[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || promKeywords[strings.ToLower(name)] {
			continue // a function or an operator
		}
		out = append(out, name)
	}
	return out
}

// TestPromQLMetrics: the extractor finds the selected metrics and nothing
// else, so the dashboard test above cannot pass by finding no names.
func TestPromQLMetrics(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`limitdb_keys`, []string{"limitdb_keys"}},
		{`sum by (policy) (rate(limitdb_policy_denied_total{instance=~"$instance",policy=~"a|b"}[$__rate_interval]))`,
			[]string{"limitdb_policy_denied_total"}},
		{`histogram_quantile(0.99, sum by (le, command) (rate(limitdb_request_duration_seconds_bucket{x="sum(y)"}[5m])))`,
			[]string{"limitdb_request_duration_seconds_bucket"}},
		{`a / (b + c) > bool 1e3 and on (instance) d offset 5m`, []string{"a", "b", "c", "d"}},
		{`topk(8, sum without (job) (rate(x_total[1m])))`, []string{"x_total"}},
		{`label_values(limitdb_policy_admitted_total{instance=~"$instance"}, policy)`, []string{"limitdb_policy_admitted_total"}},
		{`vector(1)`, nil},
	} {
		got := promqlMetrics(c.expr)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: %q, want %q", c.expr, got, c.want)
		}
	}
}
