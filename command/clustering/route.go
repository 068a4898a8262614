package clustering

import (
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/policy"
	"github.com/limitdb/limitdb/replication"
)

// Cluster mode answers the Redis Cluster client protocol: cluster clients
// learn which node serves which slot (CLUSTER SLOTS, NODES, SHARDS),
// route each command there by themselves, and are sent on with -MOVED or
// -ASK when they guess wrong.
//
// With cluster-enabled yes the node is a member of a cluster that
// redis-cli --cluster builds and changes; the members agree on the
// topology through the cluster package's consensus (cluster_admin.go),
// and the routing check here reads the topology this node last applied:
// one atomic load and an array index per command, never a round of
// consensus. With cluster-enabled emulated the node answers as a cluster
// of one primary owning every slot, as Dragonfly's emulated mode does, so
// that an application written for a cluster runs against one node.

const (
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errClusterDown     = "CLUSTERDOWN The cluster is down"
	errSlotUnserved    = "CLUSTERDOWN Hash slot not served"
	errTryAgain        = "TRYAGAIN Multiple keys request during rehashing of slot"
	// nodeIDFile keeps the node's identity in --dir across restarts, as
	// Redis keeps it in nodes.conf.
	nodeIDFile = "cluster-node-id"
)

// clusterState is the node's part in a cluster; on is false unless
// cluster-enabled is yes or emulated, which cannot change while the
// server runs.
type clusterState struct {
	on       bool
	emulated bool
	id       string // 40 hex digits, CLUSTER MYID
	shardID  string // 40 hex digits, CLUSTER MYSHARDID

	member atomic.Pointer[cluster.Member]    // cluster-enabled yes, once started (cluster_member.go)
	cons   atomic.Pointer[cluster.Consensus] // the member's, read by every routed command

	// Slots this node is moving out or in (CLUSTER SETSLOT MIGRATING and
	// IMPORTING): its own state, as in Redis, not the cluster's.
	open      atomic.Int32 // len(migrating) + len(importing), read without mu
	mu        sync.Mutex
	migrating map[int]string // slot -> the node it moves to
	importing map[int]string // slot -> the node it comes from
	// claimed are importing slots this node has been told are its own
	// (SETSLOT NODE, sent once every key has moved) while the change is
	// on its way through consensus: it serves them to every client, as a
	// Redis target does at once, so that a source that has already
	// applied the change and sends clients here never sees them sent back.
	claimed map[int]bool
	// A command served on a migrating slot holds the slot until it has
	// run; MIGRATE freezes the slot (others get TRYAGAIN) and waits for
	// the holds to end, so that no hit lands between its read of a key
	// and its deletion, and none is lost or counted twice.
	holds   map[int]int
	frozen  map[int]bool
	settled *sync.Cond // on mu: a hold ended
}

// newClusterState reads the node's identity from --dir, or makes one and
// writes it there. Without a usable --dir the identity lasts one run.
func newClusterState(cfg config.Config, logger *log.Logger) *clusterState {
	st := &clusterState{migrating: map[int]string{}, importing: map[int]string{}, claimed: map[int]bool{}, holds: map[int]int{}, frozen: map[int]bool{}}
	st.settled = sync.NewCond(&st.mu)
	switch cfg.ClusterEnabled {
	case "yes":
		st.on = true
	case "emulated":
		st.on, st.emulated = true, true
	default:
		return st
	}
	if cfg.Dir == "" {
		st.id, st.shardID = replication.NewID(), replication.NewID()
		return st
	}
	path := filepath.Join(cfg.Dir, nodeIDFile)
	if b, err := os.ReadFile(path); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 && cluster.IsNodeID(f[0]) && cluster.IsNodeID(f[1]) {
			st.id, st.shardID = f[0], f[1]
			return st
		}
		logger.Printf("cluster: %s is not two node ids; making new ones", path)
	}
	st.id, st.shardID = replication.NewID(), replication.NewID()
	if err := writeFileAtomic(path, []byte(st.id+" "+st.shardID+"\n")); err != nil {
		logger.Printf("cluster: the node id lasts this run only: %v", err)
	}
	return st
}

// writeFileAtomic writes b to path through a temporary file, synced and
// renamed, so that a crash leaves the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), nodeIDFile+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// gate refuses, in cluster mode, a command whose keys hash to different
// slots, and an EXEC whose queued commands do (Redis checks a transaction
// as one request at EXEC and discards it); in a real cluster it sends a
// command on a slot this node does not serve to the node that does.
// Outside cluster mode it is not set.
func (f *Family) gate(c *command.Client, cmd *command.Command, args [][]byte) bool {
	st, _ := c.Slot(f.slot).(*clientState)
	asking := false
	if st != nil {
		asking = st.asking
		if cmd.Name != "asking" {
			st.asking = false // ASKING covers the next command only
		}
	}
	if cmd.Name == "exec" {
		return f.execSlotCheck(c, asking)
	}
	slot := commandSlot(cmd, args)
	if slot == crossSlot {
		c.Err(errCrossSlot)
		return false
	}
	if slot < 0 || f.cs.emulated || c.Calling() {
		return true
	}
	return f.route(c, cmd, args, slot, asking)
}

// execSlotCheck checks a transaction's queued commands as one request.
func (f *Family) execSlotCheck(c *command.Client, asking bool) bool {
	slot, cross := -1, false
	var firstCmd *command.Command
	var firstArgs [][]byte
	c.Queued(func(cmd *command.Command, args [][]byte) bool {
		s := commandSlot(cmd, args)
		if s == crossSlot || (s >= 0 && slot >= 0 && s != slot) {
			cross = true
			return false
		}
		if s >= 0 && slot < 0 {
			slot, firstCmd, firstArgs = s, cmd, args
		}
		return true
	})
	if cross {
		c.DiscardMulti()
		c.Err(errCrossSlot)
		return false
	}
	if slot < 0 || f.cs.emulated {
		return true
	}
	if !f.route(c, firstCmd, firstArgs, slot, asking) {
		c.DiscardMulti()
		return false
	}
	return true
}

// route serves a command on slot here, or answers where it must go: the
// slot's owner (-MOVED), the node a migrating slot's missing keys have
// gone to (-ASK), or that the cluster cannot serve it (-CLUSTERDOWN).
func (f *Family) route(c *command.Client, cmd *command.Command, args [][]byte, slot int, asking bool) bool {
	cs := f.cs
	cons := cs.cons.Load()
	if cons == nil {
		c.Err(errClusterDown)
		return false
	}
	t := cons.Topology()
	if !clusterServing(cons, t) {
		c.Err(errClusterDown)
		return false
	}
	owner := t.Owner(slot)
	if owner != nil && owner.ID == cs.id {
		if cs.open.Load() == 0 {
			return true
		}
		return f.routeMigrating(c, cmd, args, slot)
	}
	if cs.open.Load() != 0 && cs.servesImported(slot, asking || cmd.Name == "restore-asking") {
		return true
	}
	if owner == nil {
		c.Err(errSlotUnserved)
		return false
	}
	if st, _ := c.Slot(f.slot).(*clientState); st != nil && st.readonly && owner.ID == cs.primaryOf(t) && (cmd.Flags&command.FlagWrite == 0 || cmd.Peeks(args)) {
		return true // READONLY: a replica serves its primary's reads
	}
	c.Err("MOVED " + strconv.Itoa(slot) + " " + owner.Addr())
	return false
}

// routeMigrating serves a command on a slot this node is moving out only
// when its keys are still here; when none are it sends the client to the
// new node (-ASK), and when some are it asks to try again later.
func (f *Family) routeMigrating(c *command.Client, cmd *command.Command, args [][]byte, slot int) bool {
	cs := f.cs
	target, ok := cs.migratingTo(slot)
	if !ok || cmd.Name == "migrate" {
		return true
	}
	keys := storedKeys(cmd, args)
	here, now := 0, c.Now()
	for _, k := range keys {
		if _, ok := c.Engine().Get(k, now); ok {
			here++
		}
	}
	switch {
	case here == len(keys):
		if !cs.hold(slot) {
			c.Err(errTryAgain)
			return false
		}
		f.client(c).held = slot + 1
		c.AfterRun(f.release)
		return true
	case here > 0:
		c.Err(errTryAgain)
		return false
	}
	t := cs.cons.Load().Topology()
	if n, ok := t.Node(target); ok {
		c.Err("ASK " + strconv.Itoa(slot) + " " + n.Addr())
		return false
	}
	return true
}

// clusterServing reports whether the cluster, as this node sees it, may
// serve commands on keys: this node has the majority's word, and every
// slot has a primary that is not failed (cluster-require-full-coverage,
// Redis's default).
func clusterServing(cons *cluster.Consensus, t *cluster.Topology) bool {
	if !cons.Healthy() {
		return false
	}
	_, ok := t.Assigned()
	return ok == cluster.Slots
}

// primaryOf is the ID of the primary this node replicates, "" when it is
// one.
func (cs *clusterState) primaryOf(t *cluster.Topology) string {
	if n, ok := t.Node(cs.id); ok {
		return n.Primary
	}
	return ""
}

// hold marks a command running on migrating slot; false while a MIGRATE
// has the slot frozen.
func (cs *clusterState) hold(slot int) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.frozen[slot] {
		return false
	}
	cs.holds[slot]++
	return true
}

// releaseHold ends the hold c's command took, once it has run.
func (f *Family) releaseHold(c *command.Client) {
	st := f.client(c)
	slot := st.held - 1
	st.held = 0
	cs := f.cs
	cs.mu.Lock()
	if cs.holds[slot]--; cs.holds[slot] <= 0 {
		delete(cs.holds, slot)
		cs.settled.Broadcast()
	}
	cs.mu.Unlock()
}

// freeze stops new commands on the migrating slots among keys' and waits
// for the running ones to finish; the returned func thaws them. Outside
// a real cluster, or with no migrating slot, it does nothing.
func (cs *clusterState) freeze(keys [][]byte) (thaw func()) {
	if !cs.on || cs.emulated || cs.open.Load() == 0 {
		return func() {}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var slots []int
	for _, k := range keys {
		s := storedSlot(k)
		if _, ok := cs.migrating[s]; ok && !cs.frozen[s] {
			cs.frozen[s] = true
			slots = append(slots, s)
		}
	}
	for _, s := range slots {
		for cs.holds[s] > 0 {
			cs.settled.Wait()
		}
	}
	return func() {
		cs.mu.Lock()
		for _, s := range slots {
			delete(cs.frozen, s)
		}
		cs.mu.Unlock()
	}
}

// servesImported reports whether a command on a slot this node imports
// is served here: after ASKING, or once the slot is claimed.
func (cs *clusterState) servesImported(slot int, asking bool) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.importing[slot]
	return ok && (asking || cs.claimed[slot])
}

// claim marks an importing slot as this node's own ahead of consensus
// (on false, no longer).
func (cs *clusterState) claim(slot int, on bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.importing[slot]; ok && on {
		cs.claimed[slot] = true
	} else {
		delete(cs.claimed, slot)
	}
}

func (cs *clusterState) migratingTo(slot int) (string, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	id, ok := cs.migrating[slot]
	return id, ok
}

// setOpen records slot as migrating to or importing from node id; an
// empty id closes it.
func (cs *clusterState) setOpen(m map[int]string, slot int, id string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if id == "" {
		delete(m, slot)
		delete(cs.claimed, slot)
	} else {
		m[slot] = id
	}
	cs.open.Store(int32(len(cs.migrating) + len(cs.importing)))
}

// crossSlot is commandSlot's answer for keys in several slots.
const crossSlot = -2

// commandSlot is the slot of a command's client-visible keys: -1 with no
// key, crossSlot when they span slots.
func commandSlot(cmd *command.Command, args [][]byte) int {
	slot := -1
	check := func(k []byte) bool {
		s := cluster.Slot(k)
		if slot >= 0 && s != slot {
			return false
		}
		slot = s
		return true
	}
	if cmd.KeyArgs != nil {
		for _, k := range cmd.KeyArgs(args) {
			if !check(k) {
				return crossSlot
			}
		}
		return slot
	}
	if cmd.FirstKey <= 0 {
		return -1
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.FirstKey; i <= last && i < len(args); i += max(cmd.Step, 1) {
		if !check(args[i]) {
			return crossSlot
		}
	}
	return slot
}

// storedKeys lists the keyspace keys a command reads or writes: for
// RL.HIT, the policy's rl:<policy>:<key>, not the key argument.
func storedKeys(cmd *command.Command, args [][]byte) [][]byte {
	if cmd.Keys != nil {
		return cmd.Keys(args)
	}
	return cmd.NamedKeys(args)
}

// storedSlot is the slot a keyspace key belongs to: its own, except for a
// named policy's state, rl:<policy>:<key>, which lives in the slot of the
// key its client names, so that it moves with that slot.
func storedSlot(k []byte) int {
	if rest, ok := strings.CutPrefix(string(k), "rl:"); ok {
		if name, key, ok := strings.Cut(rest, ":"); ok && policy.ValidName(name) {
			return cluster.Slot([]byte(key))
		}
	}
	return cluster.Slot(k)
}
