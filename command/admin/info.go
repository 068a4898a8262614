package admin

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// registerInfo adds the server's own INFO sections. Their orders place
// them among the other families' (persistence 40, limits 60, replication
// 70, scripting 75, cluster 85); commandstats and latencystats show only
// when asked for, in that order.
func (f *Family) registerInfo(t *command.Table) {
	t.AddInfo("server", 10, f.infoServer)
	t.AddInfo("clients", 20, f.infoClients)
	t.AddInfo("memory", 30, f.infoMemory)
	t.AddInfo("stats", 50, f.infoStats)
	t.AddInfo("cpu", 80, infoCPU)
	t.AddInfo("keyspace", 90, infoKeyspace)
	t.AddInfo("commandstats", -1, f.infoCommandStats)
	t.AddInfo("latencystats", -1, f.infoLatencyStats)
}

func (f *Family) cmdInfo(c *command.Client, args [][]byte) {
	c.Verbatim(f.env.Info(c.Engine(), args[1:]...))
}

func (f *Family) infoServer(_ *engine.Engine, b *strings.Builder) {
	cfg := f.env.Config()
	up := time.Duration(f.env.Clock.Now() - f.env.Started.UnixNano())
	command.InfoLine(b, "redis_version", command.RedisVersion)
	command.InfoLine(b, "limitdb_version", command.Version)
	mode := "standalone"
	if cfg.ClusterEnabled == "yes" || cfg.ClusterEnabled == "emulated" {
		mode = "cluster"
	}
	command.InfoLine(b, "redis_mode", mode)
	command.InfoLine(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	command.InfoLine(b, "arch_bits", strconv.IntSize)
	command.InfoLine(b, "go_version", runtime.Version())
	command.InfoLine(b, "process_id", os.Getpid())
	command.InfoLine(b, "run_id", f.env.RunID)
	command.InfoLine(b, "tcp_port", f.env.Port())
	command.InfoLine(b, "uptime_in_seconds", int64(up/time.Second))
	command.InfoLine(b, "uptime_in_days", int64(up/(24*time.Hour)))
	command.InfoLine(b, "gomaxprocs", runtime.GOMAXPROCS(0))
	command.InfoLine(b, "shards", f.env.Engine.Shards())
	command.InfoLine(b, "bind", cfg.Bind)
	command.InfoLine(b, "config_file", cfg.ConfigFile)
}

func (f *Family) infoClients(_ *engine.Engine, b *strings.Builder) {
	st := f.env.Stats()
	command.InfoLine(b, "connected_clients", st.ConnectedClients)
	command.InfoLine(b, "maxclients", f.env.Config().MaxClients)
	command.InfoLine(b, "client_recent_max_output_buffer", st.ClientMaxOutput)
	command.InfoLine(b, "blocked_clients", 0)
}

func (f *Family) infoMemory(eng *engine.Engine, b *strings.Builder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	command.InfoLine(b, "used_memory", ms.HeapAlloc)
	command.InfoLine(b, "used_memory_human", humanBytes(ms.HeapAlloc))
	command.InfoLine(b, "used_memory_rss", ms.Sys-ms.HeapReleased)
	command.InfoLine(b, "used_memory_rss_human", humanBytes(ms.Sys-ms.HeapReleased))
	command.InfoLine(b, "used_memory_sys", ms.Sys)
	command.InfoLine(b, "heap_objects", ms.HeapObjects)
	command.InfoLine(b, "gc_cycles", ms.NumGC)
	command.InfoLine(b, "mem_clients_normal", f.env.Stats().ClientMemory)
	// maxmemory counts the keyspace's accounted bytes (the core's memory
	// gate), not the process's.
	cfg := f.env.Config()
	total, _ := eng.MemoryBytes()
	used := eng.UsedBytes()
	command.InfoLine(b, "used_memory_dataset", used)
	command.InfoLine(b, "used_memory_dataset_human", humanBytes(uint64(max(used, 0))))
	command.InfoLine(b, "used_memory_keyspace_allocated", total)
	command.InfoLine(b, "maxmemory", cfg.MaxMemory)
	command.InfoLine(b, "maxmemory_human", humanBytes(uint64(cfg.MaxMemory)))
	command.InfoLine(b, "maxmemory_policy", cfg.MaxMemoryPolicy)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// infoStats renders the core's counters and the keyspace's; lines other
// parts of the server add to the section follow (replication's syncs).
func (f *Family) infoStats(eng *engine.Engine, b *strings.Builder) {
	es, st := eng.Stats(), f.env.Stats()
	command.InfoLine(b, "total_connections_received", st.ConnectionsReceived)
	command.InfoLine(b, "total_commands_processed", st.CommandsProcessed)
	command.InfoLine(b, "rejected_connections", st.RejectedConnections)
	command.InfoLine(b, "expired_keys", es.ExpiredKeys)
	command.InfoLine(b, "evicted_keys", st.EvictedKeys)
	command.InfoLine(b, "keyspace_hits", es.KeyspaceHits)
	command.InfoLine(b, "keyspace_misses", es.KeyspaceMiss)
}

func (f *Family) infoCommandStats(_ *engine.Engine, b *strings.Builder) {
	for _, st := range f.table.CommandStats() {
		per := 0.0
		if st.Calls > 0 {
			per = float64(st.Usec) / float64(st.Calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			st.Command, st.Calls, st.Usec, per, st.Rejected, st.Failed)
	}
}

func (f *Family) infoLatencyStats(_ *engine.Engine, b *strings.Builder) {
	for _, st := range f.table.LatencyStats() {
		fmt.Fprintf(b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n",
			st.Command, st.Percentile(50), st.Percentile(99), st.Percentile(99.9))
	}
}

func infoKeyspace(eng *engine.Engine, b *strings.Builder) {
	if n := eng.Len(); n > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", n, n)
	}
}
