package metrics

import (
	"net"
	"strconv"

	"github.com/limitdb/limitdb/replication"
	"github.com/prometheus/client_golang/prometheus"
)

// Replication's figures (INFO replication), read at scrape time: the
// node's role, and on a primary each replica's lag, so that a dashboard
// shows a replica falling behind before a failover would lose its writes.
var (
	descReplica = prometheus.NewDesc("limitdb_replica",
		"1 on a replica (INFO replication role:slave), 0 on a primary.", nil, nil)
	descReplOffset = prometheus.NewDesc("limitdb_replication_offset_bytes",
		"The replication stream's offset: written on a primary, applied on a replica (master_repl_offset).", nil, nil)
	descConnectedReplicas = prometheus.NewDesc("limitdb_connected_replicas",
		"Replicas attached to this primary (connected_slaves).", nil, nil)
	descReplicaLag = prometheus.NewDesc("limitdb_replica_lag_seconds",
		"Seconds since the replica last acknowledged the stream (slaveN lag), by replica address.", []string{"replica"}, nil)
	descReplicaBehind = prometheus.NewDesc("limitdb_replica_behind_bytes",
		"Bytes of the stream the replica has not acknowledged (master_repl_offset - slaveN offset), by replica address.", []string{"replica"}, nil)
	descLinkUp = prometheus.NewDesc("limitdb_master_link_up",
		"On a replica: 1 while its link to the primary is up (master_link_status:up), else 0.", nil, nil)
	descLastIO = prometheus.NewDesc("limitdb_master_last_io_seconds",
		"On a replica: seconds since the last byte from the primary (master_last_io_seconds_ago); -1 when never.", nil, nil)
)

// Replication is what the metrics read of a server's replication.
type Replication interface {
	Status() replication.Status
}

// replicationCollector reads the replication state at scrape time.
type replicationCollector struct{ repl Replication }

// Describe implements prometheus.Collector.
func (replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReplica, descReplOffset, descConnectedReplicas, descReplicaLag,
		descReplicaBehind, descLinkUp, descLastIO} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c replicationCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.repl.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	offset := st.Backlog.MasterReplOffset
	gauge(descReplOffset, float64(offset))
	gauge(descConnectedReplicas, float64(len(st.Replicas)))
	for _, r := range st.Replicas {
		addr := net.JoinHostPort(r.IP, strconv.Itoa(r.Port))
		gauge(descReplicaLag, float64(r.Lag), addr)
		gauge(descReplicaBehind, float64(max(offset-r.Offset, 0)), addr)
	}
	if !st.Replica {
		gauge(descReplica, 0)
		return
	}
	gauge(descReplica, 1)
	up := 0.0
	if st.Link.Up {
		up = 1
	}
	gauge(descLinkUp, up)
	gauge(descLastIO, float64(st.Link.LastIOSeconds))
}
