package command

import (
	"log"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// A Family is a group of commands together with the state only they use,
// as Dragonfly's *_family files are: it registers its commands, and the
// gates, INFO lines, snapshot sections and hooks it provides, on the table
// it is handed at start-up. A family never imports another family and never
// reaches into a server object: what it needs of the rest comes in Env.
type Family interface {
	Register(t *Table, env Env)
}

// Env is what the core hands every family: the values each may read or
// call, none of them a server.
type Env struct {
	Engine *engine.Engine // the keyspace (inside EXEC, commands reach it through Client.Engine)
	Clock  clock.Clock    // the engine's: every time a family reads or waits on
	Logger *log.Logger
	Done   <-chan struct{}      // closed when the command layer closes
	Config func() config.Config // the running configuration
	// ReplicateSection sends a snapshot section's new state down the
	// change stream (replicas, the append-only file) when one is kept.
	ReplicateSection func(name string, save func() ([]byte, error))
	// Publish sends message to channel's subscribers as PUBLISH does,
	// without running the command (no statistics, no MONITOR line), and
	// returns how many received it.
	Publish func(channel string, message []byte) int
	// Clients lists the connected clients and LocalClients, ordered by ID
	// (CLIENT LIST, CLIENT KILL); any goroutine may call it.
	Clients func() []*Client
	// Info renders the INFO sections named (none or "default": the
	// default ones; "all" or "everything": every one) from the table's
	// registry, reading the keyspace through eng: the transaction's
	// inside EXEC.
	Info func(eng *engine.Engine, sections ...[]byte) string
	// Stats reads the core's counters; any goroutine may call it.
	Stats func() Stats
	// ResetStats zeroes the command statistics and the commands
	// processed, and runs what families added with OnResetStat.
	ResetStats func()
	// Directives are the configuration directives the server knows.
	Directives *config.Directives
	// SetConfig changes directives at run time, all or none, then runs
	// what OnReload registered for each changed one; its errors are
	// the wire's (CONFIG SET's).
	SetConfig func(pairs ...[2]string) error
	// Shutdown stops the server as SIGTERM does: every connection
	// finishes the commands it has read. With save, a snapshot is
	// written first (SetSave), and if that fails the server keeps
	// running and the error is returned. A command layer that no assembly runs (no
	// RequestShutdown) is closed instead, without saving.
	Shutdown func(save bool) error
	RunID    string    // this run's identity, fixed at start
	Started  time.Time // when the command layer was made, on Clock
	// Port is the port the server listens on, or the configured one
	// until it listens.
	Port func() int
	// Replication is the change stream with its backlog, the replicas
	// attached and the link to a primary; the append-only file and the
	// cluster member share it. Nil when there is no engine (a
	// configuration check), where no command runs.
	Replication *replication.Manager
	// BecomeReplica makes the node a replica of host:port, records that
	// as the running replicaof directive and redoes what was registered
	// for config.ReloadReplication; it reports false when the node
	// already was a replica of that primary.
	BecomeReplica func(host string, port int) bool
	// BecomePrimary makes a replica a primary again, clears the running
	// replicaof and redoes what was registered for
	// config.ReloadReplication; it reports false when the node was a
	// primary already, and then changes nothing.
	BecomePrimary func() bool
	// ClusterRoles is true when the cluster decides the node's role
	// (cluster-enabled yes, not emulated), so that REPLICAOF is refused.
	ClusterRoles bool
	// Sections are the snapshot sections every family added (AddSection),
	// complete once every family has registered: what a snapshot saves
	// and loads beside the keyspace.
	Sections *persistence.Sections
}

// OnReload adds what CONFIG SET redoes after it changes a directive whose
// Reload is r: the owner of the state the directive configures registers
// it. Those of one kind run in the order added; an error fails the CONFIG
// SET, leaving the new values set.
func (t *Table) OnReload(r config.Reload, fn func() error) {
	if t.reloads == nil {
		t.reloads = map[config.Reload][]func() error{}
	}
	t.reloads[r] = append(t.reloads[r], fn)
}

// AddSection keeps a family's state in snapshots, the append-only file's
// preamble and a replica's first sync, under name.
func (t *Table) AddSection(name string, save func() ([]byte, error), load func([]byte) error) {
	t.snapshot.Add(name, save, load)
}

// AddEarlySection is AddSection for state whose save must run when a
// snapshot begins, before any key is copied (persistence.Sections.AddEarly).
func (t *Table) AddEarlySection(name string, save func() ([]byte, error), load func([]byte) error) {
	t.snapshot.AddEarly(name, save, load)
}

// OnResetStat adds what CONFIG RESETSTAT clears beside the command
// statistics.
func (t *Table) OnResetStat(fn func()) { t.resetStat = append(t.resetStat, fn) }

// OnClose adds what the command layer's Close stops, in the order added,
// before the change stream closes.
func (t *Table) OnClose(fn func()) { t.closers = append(t.closers, fn) }

// OnEndRound adds what every write of an event-loop round needs done
// before the round's replies leave (EndRound), after replicas are woken:
// the append-only file's write. It runs once per round, on the goroutine
// that ends it, so it must be cheap when there is nothing to do.
func (t *Table) OnEndRound(fn func()) { t.endRound = append(t.endRound, fn) }

// SetSave sets how SHUTDOWN writes its snapshot (Env.Shutdown with save):
// save writes one and waits for it, and its error keeps the server
// running. The family that keeps snapshots sets it once, at registration;
// without one, SHUTDOWN saves nothing.
func (t *Table) SetSave(save func() error) {
	if t.save != nil {
		panic("command: save set twice")
	}
	t.save = save
}

// Slot is a place in every Client for one family's per-connection state
// (its subscriptions, its transaction), made by NewSlot.
type Slot int

// NewSlot makes a place in every client for a family's state.
func (t *Table) NewSlot() Slot {
	t.nSlots++
	return Slot(t.nSlots - 1)
}

// Slot is c's state in slot s, nil until set. Only the connection's own
// goroutine may call it, unless the family guards the value itself: sets
// it and reads it under its own lock.
func (c *Client) Slot(s Slot) any {
	if int(s) >= len(c.slots) {
		return nil
	}
	return c.slots[s]
}

// SetSlot sets c's state in slot s.
func (c *Client) SetSlot(s Slot, v any) {
	if int(s) >= len(c.slots) {
		c.slots = append(c.slots, make([]any, int(s)+1-len(c.slots))...)
	}
	c.slots[s] = v
}

// OnClientClosed adds what a family forgets of a connection that has gone.
func (t *Table) OnClientClosed(fn func(c *Client)) { t.clientClosed = append(t.clientClosed, fn) }

// OnClientReset adds what a family forgets of a connection that RESET
// makes new again (its subscriptions, MONITOR), in the order added.
func (t *Table) OnClientReset(fn func(c *Client)) { t.clientReset = append(t.clientReset, fn) }

// AddClientInfo adds fields to c's CLIENT LIST and CLIENT INFO line, after
// db=: fn appends them to b, each as " name=value", and may run on any
// goroutine.
func (t *Table) AddClientInfo(fn func(c *Client, b []byte) []byte) {
	t.clientInfo = append(t.clientInfo, fn)
}
