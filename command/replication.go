package command

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// The node's replication.Manager (the change stream, its backlog, the
// replicas and the link to a primary) is the core's: the append-only file
// tails its stream, EndRound publishes it and the cluster member follows
// roles through it. The commands on it (REPLICAOF, ROLE, WAIT, PSYNC...)
// are the replicas family's (command/replicas), handed the Manager in Env.

// replHost is what replication needs of the server.
type replHost struct{ s *Server }

func (h replHost) Snapshot(w io.Writer) error {
	_, err := persistence.Write(w, h.s.env.Engine, &h.s.table.snapshot)
	return err
}

func (h replHost) Sections() *persistence.Sections { return &h.s.table.snapshot }

func (h replHost) Self() replication.Self {
	cfg := h.s.Config()
	port := cfg.ReplicaAnnouncePort
	if port == 0 {
		port = int(h.s.life.listenPort.Load())
	}
	return replication.Self{ListeningPort: port, AnnounceIP: cfg.ReplicaAnnounceIP,
		User: cfg.MasterUser, Pass: cfg.MasterAuth, Timeout: time.Duration(cfg.ReplTimeout) * time.Second}
}

// Replication is the server's replication.
func (s *Server) Replication() *replication.Manager { return s.stream }

// replicateSection sends a snapshot section's new state down the stream,
// when anything reads it.
func (s *Server) replicateSection(name string, save func() ([]byte, error)) {
	if !s.stream.Journaled() {
		return
	}
	data, err := save()
	if err != nil {
		s.env.Logger.Printf("replication: section %s: %v", name, err)
		return
	}
	s.stream.Section(name, data)
}

// ReplicationCron is replication's once-a-second work.
func (s *Server) ReplicationCron() {
	s.stream.Cron(time.Duration(s.Config().ReplPingReplicaPeriod) * time.Second)
}

// RestoreReplication applies, once the data is loaded and before the
// append-only file starts, the replication ID and offset the snapshot kept
// (replication.Manager.Restore); fromSnapshot is false when the data came
// from the append-only file.
func (s *Server) RestoreReplication(fromSnapshot bool) {
	_, _, replica := splitHostPort(s.Config().ReplicaOf)
	s.stream.Restore(replica, fromSnapshot)
}

// StartReplication applies the replicaof directive at start-up.
func (s *Server) StartReplication() {
	host, port, ok := splitHostPort(s.Config().ReplicaOf)
	s.stream.Restore(ok, false) // nothing when RestoreReplication ran: a node that loaded no data
	if ok {
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
	changed := s.stream.ReplicaOf(host, port)
	s.conf.mu.Lock()
	s.conf.cfg.ReplicaOf = host + " " + strconv.Itoa(port)
	s.conf.mu.Unlock()
	s.reload(config.ReloadReplication) // what the replicas family registered, which never fails
	return changed
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
	if !s.stream.Promote() {
		return false
	}
	s.conf.mu.Lock()
	s.conf.cfg.ReplicaOf = ""
	s.conf.mu.Unlock()
	s.reload(config.ReloadReplication) // what the replicas family registered, which never fails
	return true
}
