package metrics

import (
	"strings"

	"github.com/limitdb/limitdb/rls"
	"github.com/prometheus/client_golang/prometheus"
)

// Envoy's rate limit service's per-rule counters, named and labelled as
// envoyproxy/ratelimit's Prometheus exporter names them (its statsd
// mapping, src/stats/prom/default_mapper.yaml): the statistic
// ratelimit.service.rate_limit.<domain>.<key1>[.<key2>...].<counter>
// becomes the counter ratelimit_service_rate_limit_<counter> with labels
// domain, key1 and, for a path of two levels or more, key2. Levels past the
// second are not labelled, so rules that share their first two levels add
// up in one series, as there.

// rlsCounters are the counters' names, in rls.Stats's order.
var rlsCounters = []string{"total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode"}

var rlsHelp = map[string]string{
	"total_hits":   "Hits (hits_addend) of descriptors that met the rule.",
	"over_limit":   "Hits past the rule's limit (shadow mode included).",
	"near_limit":   "Hits within the limit but past 80% of it (NEAR_LIMIT_RATIO).",
	"within_limit": "Hits within the rule's limit.",
	"shadow_mode":  "Hits past the limit of a rule in shadow mode, let through.",
}

// rlsDescs holds each counter's two label sets: [0] domain, key1; [1]
// domain, key1, key2.
var rlsDescs = func() map[string][2]*prometheus.Desc {
	m := map[string][2]*prometheus.Desc{}
	for _, c := range rlsCounters {
		name := "ratelimit_service_rate_limit_" + c
		m[c] = [2]*prometheus.Desc{
			prometheus.NewDesc(name, rlsHelp[c], []string{"domain", "key1"}, nil),
			prometheus.NewDesc(name, rlsHelp[c], []string{"domain", "key1", "key2"}, nil),
		}
	}
	return m
}()

// RLSCounters is what metrics reads of Envoy's rate limit service: the
// counters of every rule hit since start, ordered by domain then key, as
// rls.Service.RuleStats lists them; any goroutine may call it.
type RLSCounters interface {
	RuleStats() []rls.RuleStats
}

// rlsCollector reads the rate limit service's counters at scrape time. It
// is unchecked (Describe sends nothing): one metric name carries two label
// sets, as envoyproxy/ratelimit's exporter serves it.
type rlsCollector struct{ svc RLSCounters }

// Describe implements prometheus.Collector.
func (rlsCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c rlsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.svc == nil {
		return
	}
	type series struct{ domain, key1, key2 string }
	sums := map[series]*[5]uint64{}
	var order []series
	for _, r := range c.svc.RuleStats() {
		s := series{domain: r.Domain}
		parts := strings.SplitN(r.Key, ".", 3)
		s.key1 = parts[0]
		if len(parts) > 1 {
			s.key2 = parts[1]
		}
		v := sums[s]
		if v == nil {
			v = new([5]uint64)
			sums[s] = v
			order = append(order, s)
		}
		for i, n := range [5]uint64{r.Stats.TotalHits, r.Stats.OverLimit, r.Stats.NearLimit, r.Stats.WithinLimit, r.Stats.ShadowMode} {
			v[i] += n
		}
	}
	for _, s := range order {
		for i, name := range rlsCounters {
			d, labels := rlsDescs[name][0], []string{s.domain, s.key1}
			if s.key2 != "" {
				d, labels = rlsDescs[name][1], append(labels, s.key2)
			}
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(sums[s][i]), labels...)
		}
	}
}
