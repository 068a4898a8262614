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

// Global policies' bound and their peers' lag (INFO regions).
var (
	descGlobalBound = prometheus.NewDesc("limitdb_global_policy_bound",
		"The most a global policy may over-admit now, in cost units: its rate times the sum of the peers' lags, by policy.", []string{"policy"}, nil)
	descGlobalPeerBound = prometheus.NewDesc("limitdb_global_policy_peer_bound",
		"A global policy's over-admission bound from one peer region's lag, by policy and peer.", []string{"policy", "peer"}, nil)
	descPeerLag = prometheus.NewDesc("limitdb_region_peer_lag_seconds",
		"How stale a peer region's counts are: the sync interval plus the one-way delay of its latest batch, by peer.", []string{"peer"}, nil)
	descPeerMaxLag = prometheus.NewDesc("limitdb_region_peer_max_lag_seconds",
		"The largest lag of a peer region's batches lately (10 to 20 s), which the bound uses, by peer.", []string{"peer"}, nil)
	descPeerPartitioned = prometheus.NewDesc("limitdb_region_peer_partitioned",
		"1 while a peer region has been silent longer than region-peer-timeout, by peer.", []string{"peer"}, nil)
)

// policyCollector reads the named policies' counters at scrape time.
type policyCollector struct{ policies *policy.Store }

// Describe implements prometheus.Collector.
func (policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPolicyAdmitted
	ch <- descPolicyDenied
	ch <- descPolicyShadow
	ch <- descGlobalBound
	ch <- descGlobalPeerBound
	ch <- descPeerLag
	ch <- descPeerMaxLag
	ch <- descPeerPartitioned
}

// Collect implements prometheus.Collector.
func (c policyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.policies.List() {
		ch <- prometheus.MustNewConstMetric(descPolicyAdmitted, prometheus.CounterValue, float64(p.Admitted), p.Name)
		ch <- prometheus.MustNewConstMetric(descPolicyDenied, prometheus.CounterValue, float64(p.Denied), p.Name)
		ch <- prometheus.MustNewConstMetric(descPolicyShadow, prometheus.CounterValue, float64(p.ShadowDenied), p.Name)
	}
	lags := c.policies.Lags()
	for _, l := range lags {
		ch <- prometheus.MustNewConstMetric(descPeerLag, prometheus.GaugeValue, l.Lag.Seconds(), l.Name)
		ch <- prometheus.MustNewConstMetric(descPeerMaxLag, prometheus.GaugeValue, l.MaxLag.Seconds(), l.Name)
		part := 0.0
		if l.Partitioned {
			part = 1
		}
		ch <- prometheus.MustNewConstMetric(descPeerPartitioned, prometheus.GaugeValue, part, l.Name)
	}
	for _, p := range c.policies.List() {
		if !p.Global {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descGlobalBound, prometheus.GaugeValue, float64(policy.Bound(p.Policy, lags)), p.Name)
		for _, l := range lags {
			ch <- prometheus.MustNewConstMetric(descGlobalPeerBound, prometheus.GaugeValue, float64(policy.Bound(p.Policy, []policy.PeerLag{l})), p.Name, l.Name)
		}
	}
}
