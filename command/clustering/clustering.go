// Package clustering is the family of Redis Cluster commands: the routing
// gate (GateCluster: -MOVED, -ASK, -TRYAGAIN, -CLUSTERDOWN and CROSSSLOT),
// ASKING, READONLY and READWRITE, the CLUSTER subcommands that show and
// change the cluster, INFO cluster, the node's membership (StartCluster,
// following each topology it applies), and moving keys between nodes:
// MIGRATE, DUMP, RESTORE and RESTORE-ASKING. It owns the node's identity,
// the slots it is moving out and in, the holds commands keep on a
// migrating slot, and what each connection said with ASKING and READONLY.
// The node asks it where Envoy's rate limit service charges a key
// (RLSRoute).
//
// The topology and its consensus are the cluster package's Member; the
// family is handed the core's role changes (Env.BecomeReplica,
// Env.BecomePrimary) to follow it.
//
// It imports the command core, the cluster package, the configuration,
// the engine, persistence, policy and replication; never another family,
// the transport or the assembly.
package clustering

import (
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// Family is the cluster commands, the routing gate and the node's part in
// a cluster.
type Family struct {
	env  command.Env
	cs   *clusterState
	slot command.Slot // each client's *clientState, made by ASKING, READONLY or a hold
	// release ends the hold a command took on a migrating slot; made
	// once, so that a hold allocates nothing.
	release func(c *command.Client)
}

// New returns the family; Register reads the node's identity.
func New() *Family { return &Family{} }

// Register adds the family's commands, the routing gate (in cluster mode
// only: outside it no command is routed) and INFO cluster to t, and stops
// the cluster member when the command layer closes.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env = env
	f.cs = newClusterState(env.Config(), env.Logger)
	f.slot = t.NewSlot()
	f.release = f.releaseHold
	f.registerCommands(t)
	f.registerDump(t)
	if f.cs.on {
		t.SetGate(command.GateCluster, f.gate)
	}
	t.AddInfo("cluster", 85, f.infoCluster)
	t.OnClose(func() {
		if m := f.cs.member.Load(); m != nil {
			m.Close()
		}
	})
}

// clientState is what a connection said to the cluster commands.
type clientState struct {
	asking   bool // ASKING: the next command may reach a slot being imported
	readonly bool // READONLY: reads may be served by a replica of the slot's primary
	held     int  // 1 + a migrating slot the running command holds; 0 for none
}

// client is c's state, made on first use.
func (f *Family) client(c *command.Client) *clientState {
	st, _ := c.Slot(f.slot).(*clientState)
	if st == nil {
		st = &clientState{}
		c.SetSlot(f.slot, st)
	}
	return st
}

// RLSRoute says where Envoy's rate limit service charges the counter
// key: its slot (-1 outside a cluster, where every key is charged here in
// one RLS.CHARGE) and the client address of the primary that serves it,
// "" when that is this node. Where the cluster cannot say (it is down, no
// node serves the slot) the answer is this node, whose cluster gate then
// answers why. Any goroutine may call it, once Register has run.
func (f *Family) RLSRoute(key []byte) (slot int, addr string) {
	cs := f.cs
	if !cs.on {
		return -1, ""
	}
	slot = cluster.Slot(key)
	cons := cs.cons.Load()
	if cs.emulated || cons == nil {
		return slot, ""
	}
	owner := cons.Topology().Owner(slot)
	if owner == nil || owner.ID == cs.id || (cs.open.Load() != 0 && cs.servesImported(slot, false)) {
		return slot, ""
	}
	return slot, owner.Addr()
}

func (f *Family) infoCluster(_ *engine.Engine, b *strings.Builder) {
	on := 0
	if f.cs.on {
		on = 1
	}
	b.WriteString("cluster_enabled:")
	b.WriteString(strconv.Itoa(on))
	b.WriteString("\r\n")
}
