package replicas

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

func (f *Family) registerCommands(t *command.Table) {
	const admin = command.FlagAdmin | command.FlagStale
	t.Register(
		&command.Command{Name: "role", Arity: 1, Flags: command.FlagAdmin | command.FlagFast | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the node's role in replication: master with its offset and replicas, or slave with its primary and link.",
			Handler: f.cmdRole},
		&command.Command{Name: "replicaof", Arity: 3, Flags: admin, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Makes the server a replica of host port, or a primary again with NO ONE.", Syntax: "host port | NO ONE",
			Handler: f.cmdReplicaOf},
		&command.Command{Name: "slaveof", Arity: 3, Flags: admin, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "REPLICAOF's old name, the one Sentinel sends.", Syntax: "host port | NO ONE", Handler: f.cmdReplicaOf},
		&command.Command{Name: "psync", Arity: -3, Flags: admin | command.FlagNoMulti, Group: "server", Since: "0.1.0", Complexity: "O(1) to continue, O(N) to copy",
			Summary: "Internal: a replica asks for the stream from replid offset, or for a full copy.", Syntax: "replicationid offset",
			Handler: f.cmdPSync},
		&command.Command{Name: "sync", Arity: 1, Flags: admin | command.FlagNoMulti, Group: "server", Since: "0.1.0", Complexity: "O(N)",
			Summary: "Internal: a replica asks for a full copy and the stream.", Handler: f.cmdSync},
		&command.Command{Name: "replconf", Arity: -1, Flags: admin | command.FlagLoading, Group: "server", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Internal: what a replica tells its primary (listening-port, capa, ACK).", Syntax: "option value [option value ...]",
			Handler: f.cmdReplconf},
		&command.Command{Name: "wait", Arity: 3, Flags: 0, Group: "generic", Since: "0.1.0", ACLCats: []string{"connection"}, Complexity: "O(1)",
			Summary: "Blocks until numreplicas replicas acknowledged this client's writes, or timeout ms; answers how many did.",
			Syntax:  "numreplicas timeout", Handler: f.cmdWait},
	)
}

func (f *Family) cmdReplicaOf(c *command.Client, args [][]byte) {
	if f.env.ClusterRoles {
		c.Errf("REPLICAOF not allowed in cluster mode.")
		return
	}
	if command.EqualFold(args[1], "no") && command.EqualFold(args[2], "one") {
		if f.env.BecomePrimary() {
			f.env.Logger.Printf("REPLICAOF NO ONE from %s: now a primary", c.Addr)
		}
		c.OK()
		return
	}
	if r := f.state(c); r != nil && r.replica != nil {
		c.Errf("Command is not valid when client is a replica.")
		return
	}
	port, err := strconv.Atoi(string(args[2]))
	if err != nil || port < 0 || port > 65535 {
		c.Errf("Invalid master port")
		return
	}
	if !f.env.BecomeReplica(string(args[1]), port) {
		c.Simple("OK Already connected to specified master")
		return
	}
	f.env.Logger.Printf("REPLICAOF %s %d from %s", args[1], port, c.Addr)
	c.OK()
}

func (f *Family) cmdSync(c *command.Client, _ [][]byte) { f.startReplica(c, "?", -1) }

func (f *Family) cmdPSync(c *command.Client, args [][]byte) {
	next, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.Errf("value is not an integer or out of range")
		return
	}
	f.startReplica(c, string(args[1]), next)
}

// startReplica turns c into a replica that asked for the stream from id
// next; the replication package answers it.
func (f *Family) startReplica(c *command.Client, id string, next int64) {
	if !c.HasConn() {
		c.Errf("PSYNC needs a connection")
		return
	}
	rc := f.stateOf(c)
	if rc.replica != nil {
		return // a second PSYNC on the same link: ignored, as in Redis
	}
	ip := rc.ip
	if ip == "" {
		ip, _, _ = net.SplitHostPort(c.Addr)
	}
	c.SetClass(config.ClassReplica)
	c.StreamOutput() // the event loops write the stream to it at the end of their rounds
	rc.replica = f.repl.Attach(sink{c, f}, ip, rc.port, id, next)
}

func (f *Family) cmdReplconf(c *command.Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.Error(command.ErrSyntax)
		return
	}
	rc := f.stateOf(c)
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
			if rc.replica != nil {
				if off, err := strconv.ParseInt(v, 10, 64); err == nil {
					rc.replica.Ack(off)
				}
			}
			return
		case "getack":
			return
		default:
			c.Errf("Unrecognized REPLCONF option: %s", command.Clip(args[i]))
			return
		}
	}
	c.OK()
}

func (f *Family) cmdWait(c *command.Client, args [][]byte) {
	if f.repl.IsReplica() {
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
	finish, ok := c.Block()
	if !ok { // inside EXEC, or no socket to wait on: answer now
		c.Int(int64(f.repl.Acked()))
		return
	}
	count, now := f.repl.Wait(n, time.Duration(ms)*time.Millisecond, func(acked int) {
		finish([]byte(":" + strconv.Itoa(acked) + "\r\n"))
	})
	if now {
		c.Unblock()
		c.Int(int64(count))
	}
}

// cmdRole answers ROLE as Redis does: master, its offset and its replicas
// [ip, port, offset]; or slave, its primary, the link's state and the
// offset it applied.
func (f *Family) cmdRole(c *command.Client, _ [][]byte) {
	st := f.repl.Status()
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

func (f *Family) infoReplication(_ *engine.Engine, b *strings.Builder) {
	st := f.repl.Status()
	cfg := f.env.Config()
	if st.Replica {
		command.InfoLine(b, "role", "slave")
		command.InfoLine(b, "master_host", st.Link.Host)
		command.InfoLine(b, "master_port", st.Link.Port)
		command.InfoLine(b, "master_link_status", map[bool]string{true: "up", false: "down"}[st.Link.Up])
		command.InfoLine(b, "master_last_io_seconds_ago", st.Link.LastIOSeconds)
		command.InfoLine(b, "master_sync_in_progress", command.InfoBool(st.Link.SyncInProgress))
		command.InfoLine(b, "slave_read_repl_offset", st.Backlog.MasterReplOffset)
		command.InfoLine(b, "slave_repl_offset", st.Backlog.MasterReplOffset)
		if !st.Link.Up {
			command.InfoLine(b, "master_link_down_since_seconds", st.Link.DownSeconds)
		}
		command.InfoLine(b, "slave_priority", cfg.ReplicaPriority)
		command.InfoLine(b, "slave_read_only", command.InfoBool(cfg.ReplicaReadOnly))
		command.InfoLine(b, "replica_announced", 1)
	} else {
		command.InfoLine(b, "role", "master")
	}
	command.InfoLine(b, "connected_slaves", len(st.Replicas))
	if cfg.MinReplicasToWrite > 0 && cfg.MinReplicasMaxLag > 0 {
		command.InfoLine(b, "min_slaves_good_slaves", f.repl.GoodReplicas())
	}
	for i, r := range st.Replicas {
		b.WriteString("slave" + strconv.Itoa(i) + ":ip=" + r.IP + ",port=" + strconv.Itoa(r.Port) + ",state=" + r.State +
			",offset=" + strconv.FormatInt(r.Offset, 10) + ",lag=" + strconv.FormatInt(r.Lag, 10) + "\r\n")
	}
	command.InfoLine(b, "master_failover_state", "no-failover")
	id2 := st.ID2
	if id2 == "" {
		id2 = strings.Repeat("0", 40)
	}
	command.InfoLine(b, "master_replid", st.ID)
	command.InfoLine(b, "master_replid2", id2)
	command.InfoLine(b, "master_repl_offset", st.Backlog.MasterReplOffset)
	command.InfoLine(b, "second_repl_offset", st.Off2)
	command.InfoLine(b, "repl_backlog_active", command.InfoBool(st.Backlog.Active))
	command.InfoLine(b, "repl_backlog_size", st.Backlog.Size)
	command.InfoLine(b, "repl_backlog_first_byte_offset", st.Backlog.FirstByteOffset)
	command.InfoLine(b, "repl_backlog_histlen", st.Backlog.HistLen)
}
