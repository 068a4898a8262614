package metrics

import (
	"strings"

	an "github.com/limitdb/limitdb/analytics"
	insight "github.com/limitdb/limitdb/command/analytics"
	"github.com/prometheus/client_golang/prometheus"
)

// TopKeysPerRanking is how many keys of each ranking of each policy and
// limiter command the metrics export: the series are bounded by it times
// 3 rankings times the tracked policies and commands.
const TopKeysPerRanking = 10

var descTopKey = prometheus.NewDesc("limitdb_top_key_decisions",
	"Decisions on the keys a named policy or limiter command ranks highest (RL.TOP) over the last one to two analytics-periods: "+
		"the 10 largest counts per ranking (denied, hits, near); a count never underestimates.",
	[]string{"kind", "name", "ranking", "key"}, nil)

// TopKeys is what the metrics read of the top limited keys: the analytics
// family (command/analytics).
type TopKeys interface {
	DashboardView(o an.ViewOptions) insight.Dashboard
}

// topCollector reads the top keys at scrape time; nothing while analytics
// is off or top is nil.
type topCollector struct{ top TopKeys }

// Describe implements prometheus.Collector.
func (topCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTopKey }

// Collect implements prometheus.Collector.
func (c topCollector) Collect(ch chan<- prometheus.Metric) {
	if c.top == nil {
		return
	}
	v := c.top.DashboardView(an.ViewOptions{Top: TopKeysPerRanking})
	for _, g := range []struct {
		kind   string
		groups []an.GroupView
	}{{"policy", v.Policies}, {"command", v.Commands}} {
		for _, gv := range g.groups {
			for _, r := range []struct {
				name    string
				entries []an.Entry
			}{{"denied", gv.Denied}, {"hits", gv.Hits}, {"near", gv.Near}} {
				for _, e := range r.entries {
					// A label value must be UTF-8; a client's key is any bytes.
					key := strings.ToValidUTF8(e.Key, "\uFFFD")
					ch <- prometheus.MustNewConstMetric(descTopKey, prometheus.GaugeValue, float64(e.Count), g.kind, gv.Name, r.name, key)
				}
			}
		}
	}
}
