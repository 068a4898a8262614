// Package metrics serves limitdb's figures to Prometheus (limitdb
// --metrics-addr 127.0.0.1:9121; off by default) with the official client
// library.
//
// Every figure is read from the server when Prometheus scrapes, from the
// counters INFO already keeps (per-command calls, admitted, denied, latency
// buckets): serving metrics adds nothing to the command path.
//
// metrics imports resp; nothing in resp or engine imports metrics.
package metrics

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/policy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	descRequests = prometheus.NewDesc("limitdb_requests_total",
		"Commands run, by command.", []string{"command"}, nil)
	descFailed = prometheus.NewDesc("limitdb_request_errors_total",
		"Commands that answered with an error, by command.", []string{"command"}, nil)
	descAdmitted = prometheus.NewDesc("limitdb_admitted_total",
		"Limiter requests admitted (limited = 0), by command.", []string{"command"}, nil)
	descDenied = prometheus.NewDesc("limitdb_denied_total",
		"Limiter requests denied (limited = 1), by command.", []string{"command"}, nil)
	descLatency = prometheus.NewDesc("limitdb_request_duration_seconds",
		"Time to run a command inside the server (from parsed request to reply buffered), by command.", []string{"command"}, nil)
	descKeys = prometheus.NewDesc("limitdb_keys",
		"Keys held, including expired ones not yet reaped.", nil, nil)
	descExpired = prometheus.NewDesc("limitdb_expired_keys_total",
		"Keys removed because they expired (their limit was fresh again).", nil, nil)
	descMemory = prometheus.NewDesc("limitdb_memory_used_bytes",
		"Go heap in use (INFO's used_memory).", nil, nil)
	descClients = prometheus.NewDesc("limitdb_connected_clients",
		"Open client connections.", nil, nil)
	descConns = prometheus.NewDesc("limitdb_connections_received_total",
		"Client connections accepted since start.", nil, nil)
	descLastSave = prometheus.NewDesc("limitdb_last_save_timestamp_seconds",
		"Unix time of the last successful snapshot; 0 when none since start.", nil, nil)
	descSnapFailing = prometheus.NewDesc("limitdb_snapshot_failing",
		"1 while the last snapshot failed (INFO persistence rdb_last_bgsave_status:err), else 0.", nil, nil)
	descSnapAge = prometheus.NewDesc("limitdb_snapshot_age_seconds",
		"Seconds since the last successful snapshot (since start when none).", nil, nil)
)

// Snapshots is what the metrics read of a server's snapshots (the
// persistence family, command/persist).
type Snapshots interface {
	LastSave() time.Time // the last successful snapshot; zero when none since start
	Failing() bool       // the last snapshot failed
}

// Collector reads a server's figures at scrape time.
type Collector struct {
	srv   *command.Server
	snaps Snapshots
	now   func() time.Time
}

// NewCollector returns a collector for srv and its snapshots.
func NewCollector(srv *command.Server, snaps Snapshots) *Collector {
	return &Collector{srv: srv, snaps: snaps, now: func() time.Time { return clock.Time(srv.Clock()) }}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descFailed, descAdmitted, descDenied, descLatency,
		descKeys, descExpired, descMemory, descClients, descConns, descLastSave, descSnapAge, descSnapFailing} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.srv
	for _, st := range s.LatencyStats() {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(st.Calls), st.Command)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(st.Failed), st.Command)
		buckets := map[float64]uint64{}
		var cum uint64
		for i, n := range st.Counts[:len(st.Counts)-1] {
			cum += uint64(n)
			buckets[command.LatencyBound(i).Seconds()] = cum
		}
		cum += uint64(st.Counts[len(st.Counts)-1])
		ch <- prometheus.MustNewConstHistogram(descLatency, cum, float64(st.Usec)/1e6, buckets, st.Command)
	}
	for _, st := range s.LimitStats() {
		ch <- prometheus.MustNewConstMetric(descAdmitted, prometheus.CounterValue, float64(st.Admitted), st.Command)
		ch <- prometheus.MustNewConstMetric(descDenied, prometheus.CounterValue, float64(st.Denied), st.Command)
	}
	est := s.Engine().Stats()
	ch <- prometheus.MustNewConstMetric(descKeys, prometheus.GaugeValue, float64(est.Keys))
	ch <- prometheus.MustNewConstMetric(descExpired, prometheus.CounterValue, float64(est.ExpiredKeys))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(ms.HeapAlloc))
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(s.ConnectedClients()))
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.CounterValue, float64(s.ConnectionsReceived()))
	last, lastUnix := c.snaps.LastSave(), 0.0
	if last.IsZero() {
		last = s.Started()
	} else {
		lastUnix = float64(last.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(descLastSave, prometheus.GaugeValue, lastUnix)
	ch <- prometheus.MustNewConstMetric(descSnapAge, prometheus.GaugeValue, c.now().Sub(last).Seconds())
	failing := 0.0
	if c.snaps.Failing() {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(descSnapFailing, prometheus.GaugeValue, failing)
}

// Handler serves srv's metrics, its replication state, its snapshots' and
// its named policies' counters, the per-rule counters of its Envoy rate
// limit service (none when rlsSvc is nil) and its top limited keys (none
// when top is nil), with the Go runtime's and the process's, in
// Prometheus's text format.
func Handler(srv *command.Server, snaps Snapshots, policies *policy.Store, rlsSvc RLSCounters, top TopKeys) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(srv, snaps), policyCollector{policies}, rlsCollector{rlsSvc}, topCollector{top},
		replicationCollector{srv.Replication()}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: log.Default()})
}

// Route is another handler the metrics listener serves: the dashboard.
type Route struct {
	Pattern string // a net/http ServeMux pattern
	Handler http.Handler
}

// Serve listens on addr and serves /metrics, and routes, until srv closes.
// An addr that is a port alone listens on loopback (127.0.0.1). It returns
// once listening, so that a bad address stops start-up.
func Serve(srv *command.Server, snaps Snapshots, policies *policy.Store, rlsSvc RLSCounters, top TopKeys, addr string, logger *log.Logger, routes ...Route) (net.Addr, error) {
	ln, err := net.Listen("tcp", ListenAddr(addr))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(srv, snaps, policies, rlsSvc, top))
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Printf("metrics: %v", err)
		}
	}()
	go func() {
		<-srv.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}()
	return ln.Addr(), nil
}

// ListenAddr is the address metrics-addr names: host:port as given (":9121"
// is every interface), a port alone on loopback.
func ListenAddr(addr string) string {
	if _, err := strconv.Atoi(addr); err == nil {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	return addr
}
