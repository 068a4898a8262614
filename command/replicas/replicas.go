// Package replicas is the family of replication commands: REPLICAOF (and
// SLAVEOF, the name Sentinel sends), ROLE, WAIT, the primary's side of a
// replica's link (PSYNC, SYNC, REPLCONF), INFO replication and INFO
// stats' sync_* lines. It owns the read-only replica gate (READONLY on a
// write to a replica with replica-read-only), the reload of the
// replication directives (config.ReloadReplication) and what each
// connection said as a replica.
//
// The change stream, its backlog, the replicas' senders and the link to a
// primary are the replication package's Manager, which the core builds
// and shares with the append-only file and the cluster member; the family
// is handed it in command.Env, with the core's role changes
// (Env.BecomeReplica, Env.BecomePrimary), which also record the running
// replicaof.
//
// It imports the command core, the configuration, the engine and
// replication; never another family, the transport or the assembly.
package replicas

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/replication"
)

// Family is the replication commands, the read-only flag of a replica and
// what each connection told as a replica.
type Family struct {
	env      command.Env
	repl     *replication.Manager
	slot     command.Slot // each client's *replClient, made by REPLCONF or PSYNC
	readOnly atomic.Bool  // a replica with replica-read-only: writes are refused
}

// New returns the family; Register hands it the node's Manager.
func New() *Family { return &Family{} }

// Register adds the family's commands, INFO replication and INFO stats'
// sync_* lines, the read-only gate and the replication directives' reload
// to t, and detaches a replica whose connection closes.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env, f.repl = env, env.Replication
	f.slot = t.NewSlot()
	f.registerCommands(t)
	t.AddInfo("replication", 70, f.infoReplication)
	t.ExtendInfo("stats", f.infoSyncs)
	t.SetReadOnlyCheck(&f.readOnly, readOnlyCheck)
	t.OnReload(config.ReloadReplication, f.reload)
	t.OnClientClosed(f.detach)
	if f.repl == nil { // a node that failed to assemble (a bad TLS setting): it serves nothing
		return
	}
	t.SetNoReplicasCheck(f.repl.ShortOfReplicas(), noReplicasCheck)
	// The replication ID and offset the keys hold, for a restarted node to
	// continue (replication.Manager.Restore).
	t.AddEarlySection(replication.SectionName, f.repl.SaveSection, f.repl.LoadSection)
	f.reload() // the directives as they start: min-replicas-to-write from a config file
}

// reload rereads what the replication directives change, and what a role
// change changes (Env.BecomeReplica and BecomePrimary run it too).
func (f *Family) reload() error {
	if f.repl == nil {
		return nil
	}
	cfg := f.env.Config()
	f.repl.Stream().SetBacklog(cfg.ReplBacklogSize)
	f.repl.SetBacklogTTL(time.Duration(cfg.ReplBacklogTTL) * time.Second)
	f.readOnly.Store(f.repl.IsReplica() && cfg.ReplicaReadOnly)
	f.repl.SetMinReplicas(cfg.MinReplicasToWrite, time.Duration(cfg.MinReplicasMaxLag)*time.Second)
	f.repl.SetLimiterWait(cfg.LimiterWaitReplicas, time.Duration(cfg.LimiterWaitTimeout)*time.Millisecond)
	return nil
}

// errNoReplicas is Redis's refusal of a write by a primary with fewer good
// replicas than min-replicas-to-write.
const errNoReplicas = command.WireError("NOREPLICAS Not enough good replicas to write.")

// noReplicasCheck refuses writes while the primary is short of good
// replicas; a limiter command whose cost is 0 only peeks, and is served.
func noReplicasCheck(c *command.Client, cmd *command.Command, args [][]byte) bool {
	if cmd.Flags&command.FlagWrite == 0 || cmd.Peeks(args) {
		return true
	}
	c.Error(errNoReplicas)
	return false
}

// errReadOnly is Redis's refusal of a write on a read-only replica.
const errReadOnly = command.WireError("READONLY You can't write against a read only replica.")

// readOnlyCheck refuses writes on a read-only replica; a limiter command
// whose cost is 0 only peeks, and is served.
func readOnlyCheck(c *command.Client, cmd *command.Command, args [][]byte) bool {
	if cmd.Flags&command.FlagWrite == 0 || cmd.Peeks(args) {
		return true
	}
	c.Error(errReadOnly)
	return false
}

// replClient is what a connection told as a replica (REPLCONF), and its
// replica once it asked for the stream (PSYNC). Only the connection's own
// goroutine reads or changes it.
type replClient struct {
	port    int
	ip      string
	replica *replication.Replica
}

// state is c's replica state, nil until it sent REPLCONF or PSYNC.
func (f *Family) state(c *command.Client) *replClient {
	r, _ := c.Slot(f.slot).(*replClient)
	return r
}

// stateOf is c's replica state, made on first use.
func (f *Family) stateOf(c *command.Client) *replClient {
	if r := f.state(c); r != nil {
		return r
	}
	r := &replClient{}
	c.SetSlot(f.slot, r)
	return r
}

// detach forgets the replica of a connection that has gone.
func (f *Family) detach(c *command.Client) {
	if r := f.state(c); r != nil && r.replica != nil {
		f.repl.Detach(r.replica)
	}
}

// sink is a replica's connection as the Manager pushes to it.
type sink struct {
	c *command.Client
	f *Family
}

func (s sink) Push(b []byte) { s.c.Deliver(b) }
func (s sink) Kill()         { s.c.Kill(nil) }
func (s sink) Unsent() int64 { return s.c.OutputMemory() }

// Limit is client-output-buffer-limit's replica class, as it is now.
func (s sink) Limit() replication.OutputLimit {
	lim := s.f.env.Config().OutputBuffer[config.ClassReplica]
	return replication.OutputLimit{Hard: lim.Hard, Soft: lim.Soft, SoftFor: time.Duration(lim.SoftSeconds) * time.Second}
}

func (f *Family) infoSyncs(_ *engine.Engine, b *strings.Builder) {
	if f.repl != nil {
		rs := f.repl.Status()
		command.InfoLine(b, "sync_full", rs.SyncFull)
		command.InfoLine(b, "sync_partial_ok", rs.SyncPartialOK)
		command.InfoLine(b, "sync_partial_err", rs.SyncPartialErr)
	}
}
