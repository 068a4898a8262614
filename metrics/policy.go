package metrics

import (
	"github.com/limitdb/limitdb/policy"
	"github.com/prometheus/client_golang/prometheus"
)

// Named policies' counters (INFO limits' policy_* lines), by policy.
var (
	descPolicyAdmitted = prometheus.NewDesc("limitdb_policy_admitted_total",
		"Requests a named policy let through and charged (a shadow policy's would-be denials included), by policy.", []string{"policy"}, nil)
	descPolicyDenied = prometheus.NewDesc("limitdb_policy_denied_total",
		"Requests a named policy denied, by policy.", []string{"policy"}, nil)
	descPolicyShadow = prometheus.NewDesc("limitdb_policy_shadow_denied_total",
		"Requests a shadow policy would have denied, by policy.", []string{"policy"}, nil)
)

// policyCollector reads the named policies' counters at scrape time.
type policyCollector struct{ policies *policy.Store }

// Describe implements prometheus.Collector.
func (policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPolicyAdmitted
	ch <- descPolicyDenied
	ch <- descPolicyShadow
}

// Collect implements prometheus.Collector.
func (c policyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.policies.List() {
		ch <- prometheus.MustNewConstMetric(descPolicyAdmitted, prometheus.CounterValue, float64(p.Admitted), p.Name)
		ch <- prometheus.MustNewConstMetric(descPolicyDenied, prometheus.CounterValue, float64(p.Denied), p.Name)
		ch <- prometheus.MustNewConstMetric(descPolicyShadow, prometheus.CounterValue, float64(p.ShadowDenied), p.Name)
	}
}
