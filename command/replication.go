package command

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// The replication family: REPLICAOF (and SLAVEOF, which Sentinel sends),
// the primary's side of the link (PSYNC, SYNC, REPLCONF), WAIT, ROLE and
// INFO replication. The stream, the link and the replicas' senders are the
// replication package's; this file is the commands.

func registerReplication(t *Table) {
	const admin = FlagAdmin | FlagStale
	t.Register(
		&Command{Name: "role", Arity: 1, Flags: FlagAdmin | FlagFast | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the node's role in replication: master with its offset and replicas, or slave with its primary and link.",
			Handler: cmdRole},
		&Command{Name: "replicaof", Arity: 3, Flags: admin, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Makes the server a replica of host port, or a primary again with NO ONE.", Syntax: "host port | NO ONE",
			Handler: cmdReplicaOf},
		&Command{Name: "slaveof", Arity: 3, Flags: admin, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "REPLICAOF's old name, the one Sentinel sends.", Syntax: "host port | NO ONE", Handler: cmdReplicaOf},
		&Command{Name: "psync", Arity: -3, Flags: admin | FlagNoMulti, Group: "server", Since: "0.1.0", Complexity: "O(1) to continue, O(N) to copy",
			Summary: "Internal: a replica asks for the stream from replid offset, or for a full copy.", Syntax: "replicationid offset",
			Handler: cmdPSync},
		&Command{Name: "sync", Arity: 1, Flags: admin | FlagNoMulti, Group: "server", Since: "0.1.0", Complexity: "O(N)",
			Summary: "Internal: a replica asks for a full copy and the stream.", Handler: cmdSync},
		&Command{Name: "replconf", Arity: -1, Flags: admin | FlagLoading, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Internal: what a replica tells its primary (listening-port, capa, ACK).", Syntax: "option value [option value ...]",
			Handler: cmdReplconf},
		&Command{Name: "wait", Arity: 3, Flags: 0, Group: "generic", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Blocks until numreplicas replicas acknowledged this client's writes, or timeout ms; answers how many did.",
			Syntax:  "numreplicas timeout", Handler: cmdWait},
	)
	t.registerInfo("replication", 70, infoReplication)
}

// replHost is what replication needs of the server.
type replHost struct{ s *Server }

func (h replHost) Snapshot(w io.Writer) error {
	_, err := persistence.Write(w, h.s.eng, &h.s.sections)
	return err
}

func (h replHost) Sections() *persistence.Sections { return &h.s.sections }

func (h replHost) Self() replication.Self {
	cfg := h.s.Config()
	port := cfg.ReplicaAnnouncePort
	if port == 0 {
		port = int(h.s.listenPort.Load())
	}
	return replication.Self{ListeningPort: port, AnnounceIP: cfg.ReplicaAnnounceIP,
		User: cfg.MasterUser, Pass: cfg.MasterAuth, Timeout: time.Duration(cfg.ReplTimeout) * time.Second}
}

// replClient is what a connection told us as a replica (REPLCONF), and
// its replica once it asked for the stream (PSYNC).
type replClient struct {
	port    int
	ip      string
	replica atomic.Pointer[replication.Replica]
}

// Replication is the server's replication.
func (s *Server) Replication() *replication.Manager { return s.repl }

// replicateSection sends a snapshot section's new state down the stream,
// when anything reads it.
func (s *Server) replicateSection(name string, save func() ([]byte, error)) {
	if !s.repl.Journaled() {
		return
	}
	data, err := save()
	if err != nil {
		s.logger.Printf("replication: section %s: %v", name, err)
		return
	}
	s.repl.Section(name, data)
}

// ReplicationCron is replication's once-a-second work.
func (s *Server) ReplicationCron() {
	s.repl.Cron(time.Duration(s.Config().ReplPingReplicaPeriod) * time.Second)
}

// StartReplication applies the replicaof directive at start-up.
func (s *Server) StartReplication() {
	if host, port, ok := splitHostPort(s.Config().ReplicaOf); ok {
		s.becomeReplica(host, port)
	}
}

func splitHostPort(v string) (string, int, bool) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return "", 0, false
	}
	p, err := strconv.Atoi(f[1])
	return f[0], p, err == nil
}

// becomeReplica makes the server a replica of host:port; false when it
// already was one of it.
func (s *Server) becomeReplica(host string, port int) bool {
	changed := s.repl.ReplicaOf(host, port)
	s.cfgMu.Lock()
	s.cfg.ReplicaOf = host + " " + strconv.Itoa(port)
	s.cfgMu.Unlock()
	s.reloadReplication()
	return changed
}

// reloadReplication rereads what the replication directives change.
func (s *Server) reloadReplication() {
	cfg := s.Config()
	s.repl.Stream().SetBacklog(cfg.ReplBacklogSize)
	s.repl.SetSendInterval(time.Duration(cfg.ReplSendInterval) * time.Microsecond)
	s.readOnly.Store(s.repl.IsReplica() && cfg.ReplicaReadOnly)
}

// ReadOnly reports whether the server is a read-only replica, which
// refuses writes.
func (s *Server) ReadOnly() bool { return s.readOnly.Load() }

// errReadOnly is Redis's refusal of a write on a read-only replica.
const errReadOnly = "READONLY You can't write against a read only replica."

// readOnlyGate refuses writes on a read-only replica; a limiter command
// whose cost is 0 only peeks, and is served.
func readOnlyGate(c *Client, cmd *Command, args [][]byte) bool {
	if !c.srv.readOnly.Load() || cmd.Flags&FlagWrite == 0 {
		return true
	}
	if isPeek(cmd, args) {
		return true
	}
	c.Error(WireError(errReadOnly))
	return false
}

// isPeek reports whether a limiter write command asks for cost 0: it
// writes nothing, so a read-only replica and a server refusing writes
// (MISCONF) still answer it.
func isPeek(cmd *Command, args [][]byte) bool {
	if cmd.Peek != nil {
		return cmd.Peek(args)
	}
	return cmd.CostArg > 0 && len(args) > cmd.CostArg && string(args[cmd.CostArg]) == "0"
}

// becomePrimary makes a replica a primary; false when it was one.
func (s *Server) becomePrimary() bool {
	if !s.repl.Promote() {
		return false
	}
	s.cfgMu.Lock()
	s.cfg.ReplicaOf = ""
	s.cfgMu.Unlock()
	s.reloadReplication()
	return true
}

func cmdReplicaOf(c *Client, args [][]byte) {
	s := c.srv
	if s.cluster.on && !s.cluster.emulated {
		c.Errf("REPLICAOF not allowed in cluster mode.")
		return
	}
	if EqualFold(args[1], "no") && EqualFold(args[2], "one") {
		if s.becomePrimary() {
			s.logger.Printf("REPLICAOF NO ONE from %s: now a primary", c.Addr)
		}
		c.OK()
		return
	}
	if r := c.repl.Load(); r != nil && r.replica.Load() != nil {
		c.Errf("Command is not valid when client is a replica.")
		return
	}
	port, err := strconv.Atoi(string(args[2]))
	if err != nil || port < 0 || port > 65535 {
		c.Errf("Invalid master port")
		return
	}
	if !s.becomeReplica(string(args[1]), port) {
		c.Simple("OK Already connected to specified master")
		return
	}
	s.logger.Printf("REPLICAOF %s %d from %s", args[1], port, c.Addr)
	c.OK()
}

func cmdSync(c *Client, _ [][]byte) { startReplica(c, "?", -1) }

func cmdPSync(c *Client, args [][]byte) {
	next, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.Errf("value is not an integer or out of range")
		return
	}
	startReplica(c, string(args[1]), next)
}

// startReplica turns c into a replica that asked for the stream from id
// next; the replication package answers it.
func startReplica(c *Client, id string, next int64) {
	if c.conn == nil {
		c.Errf("PSYNC needs a connection")
		return
	}
	rc := c.replState()
	if rc.replica.Load() != nil {
		return // a second PSYNC on the same link: ignored, as in Redis
	}
	ip := rc.ip
	if ip == "" {
		ip, _, _ = net.SplitHostPort(c.Addr)
	}
	c.conn.SetClass(config.ClassReplica)
	rc.replica.Store(c.srv.repl.Attach(c.conn, ip, rc.port, id, next))
}

// replState is c's replica state, made on first use.
func (c *Client) replState() *replClient {
	if r := c.repl.Load(); r != nil {
		return r
	}
	r := &replClient{}
	c.repl.Store(r)
	return r
}

func cmdReplconf(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.Error(ErrSyntax)
		return
	}
	rc := c.replState()
	for i := 1; i < len(args); i += 2 {
		opt, v := strings.ToLower(string(args[i])), string(args[i+1])
		switch opt {
		case "listening-port":
			p, err := strconv.Atoi(v)
			if err != nil || p < 0 || p > 65535 {
				c.Errf("value is not an integer or out of range")
				return
			}
			rc.port = p
		case "ip-address":
			rc.ip = v
		case "capa", "rdb-only", "rdb-filter-only", "rdb-channel":
		case "ack", "fack":
			// Acknowledgements get no reply.
			if r := rc.replica.Load(); r != nil {
				if off, err := strconv.ParseInt(v, 10, 64); err == nil {
					r.Ack(off)
				}
			}
			return
		case "getack":
			return
		default:
			c.Errf("Unrecognized REPLCONF option: %s", Clip(args[i]))
			return
		}
	}
	c.OK()
}

func cmdWait(c *Client, args [][]byte) {
	s := c.srv
	if s.repl.IsReplica() {
		c.Errf("WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
		return
	}
	n, err := strconv.Atoi(string(args[1]))
	if err != nil {
		c.Errf("value is not an integer or out of range")
		return
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.Errf("timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.Errf("timeout is negative")
		return
	}
	if c.tx != nil || c.conn == nil { // inside EXEC, or no socket to wait on: answer now
		c.Int(int64(s.repl.Acked()))
		return
	}
	b := c.block()
	count, now := s.repl.Wait(n, time.Duration(ms)*time.Millisecond, func(acked int) {
		b.finish(c, []byte(":"+strconv.Itoa(acked)+"\r\n"))
	})
	if now {
		c.unblock()
		c.Int(int64(count))
	}
}

// cmdRole answers ROLE as Redis does: master, its offset and its replicas
// [ip, port, offset]; or slave, its primary, the link's state and the
// offset it applied.
func cmdRole(c *Client, _ [][]byte) {
	st := c.srv.repl.Status()
	if st.Replica {
		c.Array(5)
		c.BulkString("slave")
		c.BulkString(st.Link.Host)
		c.Int(int64(st.Link.Port))
		c.BulkString(st.Link.State)
		c.Int(st.Backlog.MasterReplOffset)
		return
	}
	c.Array(3)
	c.BulkString("master")
	c.Int(st.Backlog.MasterReplOffset)
	c.Array(len(st.Replicas))
	for _, r := range st.Replicas {
		c.Array(3)
		c.BulkString(r.IP)
		c.BulkString(strconv.Itoa(r.Port))
		c.BulkString(strconv.FormatInt(r.Offset, 10))
	}
}

func infoReplication(s *Server, _ *engine.Engine, b *strings.Builder) {
	st := s.repl.Status()
	cfg := s.Config()
	if st.Replica {
		infoLine(b, "role", "slave")
		infoLine(b, "master_host", st.Link.Host)
		infoLine(b, "master_port", st.Link.Port)
		infoLine(b, "master_link_status", map[bool]string{true: "up", false: "down"}[st.Link.Up])
		infoLine(b, "master_last_io_seconds_ago", st.Link.LastIOSeconds)
		infoLine(b, "master_sync_in_progress", boolInt(st.Link.SyncInProgress))
		infoLine(b, "slave_read_repl_offset", st.Backlog.MasterReplOffset)
		infoLine(b, "slave_repl_offset", st.Backlog.MasterReplOffset)
		if !st.Link.Up {
			infoLine(b, "master_link_down_since_seconds", st.Link.DownSeconds)
		}
		infoLine(b, "slave_priority", cfg.ReplicaPriority)
		infoLine(b, "slave_read_only", boolInt(cfg.ReplicaReadOnly))
		infoLine(b, "replica_announced", 1)
	} else {
		infoLine(b, "role", "master")
	}
	infoLine(b, "connected_slaves", len(st.Replicas))
	for i, r := range st.Replicas {
		b.WriteString("slave" + strconv.Itoa(i) + ":ip=" + r.IP + ",port=" + strconv.Itoa(r.Port) + ",state=" + r.State +
			",offset=" + strconv.FormatInt(r.Offset, 10) + ",lag=" + strconv.FormatInt(r.Lag, 10) + "\r\n")
	}
	infoLine(b, "master_failover_state", "no-failover")
	id2 := st.ID2
	if id2 == "" {
		id2 = strings.Repeat("0", 40)
	}
	infoLine(b, "master_replid", st.ID)
	infoLine(b, "master_replid2", id2)
	infoLine(b, "master_repl_offset", st.Backlog.MasterReplOffset)
	infoLine(b, "second_repl_offset", st.Off2)
	infoLine(b, "repl_backlog_active", boolInt(st.Backlog.Active))
	infoLine(b, "repl_backlog_size", st.Backlog.Size)
	infoLine(b, "repl_backlog_first_byte_offset", st.Backlog.FirstByteOffset)
	infoLine(b, "repl_backlog_histlen", st.Backlog.HistLen)
}
