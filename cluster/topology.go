package cluster

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Node is one member of the cluster as every member sees it: what CLUSTER
// NODES prints for it.
type Node struct {
	ID      string `json:"id"`    // 40 hex digits
	Shard   string `json:"shard"` // CLUSTER MYSHARDID: a primary's, shared by its replicas
	IP      string `json:"ip"`
	Port    int    `json:"port"`
	BusPort int    `json:"bus"` // the consensus transport's port (Redis's cluster bus)
	// Primary is the ID of the node this one replicates; "" for a primary.
	Primary string `json:"primary,omitempty"`
	// Epoch is the node's config epoch. Consensus orders every change, so
	// epochs decide nothing here; they are kept unique among primaries
	// because redis-cli and clients read them.
	Epoch  uint64 `json:"epoch"`
	Failed bool   `json:"failed,omitempty"` // the leader lost it for longer than the node timeout
	// ReplacedBy is, on a failed primary whose replica took its slots,
	// that replica: as in Redis, the failed node stays a primary without
	// slots while it is away, and replicates its replacement once it is
	// back (OpRecover).
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// Addr is the node's client address, ip:port.
func (n *Node) Addr() string { return fmt.Sprintf("%s:%d", n.IP, n.Port) }

// Topology is the cluster's membership and slot map at one log index. It
// is immutable: Apply returns a new one, so a reader holding a pointer
// never sees a change half made.
type Topology struct {
	nodes []Node // sorted by ID
	// owner holds, per slot, 1 + the index in nodes of the primary serving
	// it; 0 when the slot is unassigned.
	owner [Slots]uint16
	epoch uint64 // cluster_current_epoch
	// assigned and served count the slots with an owner and those whose
	// owner has not failed, counted once per change: routing reads them
	// for every command.
	assigned, served int
	// forgotten are the last nodes removed, so that the FORGET redis-cli
	// sends every member after the first (which removed the node for
	// all) is answered OK rather than "unknown node".
	forgotten []string
}

// maxForgotten bounds Topology.forgotten.
const maxForgotten = 64

// Forgotten reports whether id is among the nodes recently removed.
func (t *Topology) Forgotten(id string) bool {
	for _, f := range t.forgotten {
		if f == id {
			return true
		}
	}
	return false
}

// Empty is a topology with no node.
func Empty() *Topology { return &Topology{} }

// Nodes lists the members sorted by ID. The slice is the topology's own.
func (t *Topology) Nodes() []Node { return t.nodes }

// Node finds a member by ID.
func (t *Topology) Node(id string) (*Node, bool) {
	i := t.index(id)
	if i < 0 {
		return nil, false
	}
	return &t.nodes[i], true
}

func (t *Topology) index(id string) int {
	i := sort.Search(len(t.nodes), func(i int) bool { return t.nodes[i].ID >= id })
	if i < len(t.nodes) && t.nodes[i].ID == id {
		return i
	}
	return -1
}

// Owner is the primary serving slot, nil when the slot is unassigned.
func (t *Topology) Owner(slot int) *Node {
	if o := t.owner[slot]; o != 0 {
		return &t.nodes[o-1]
	}
	return nil
}

// owns reports whether primary id serves every slot of rs.
func (t *Topology) owns(id string, rs []Range) bool {
	i := t.index(id)
	if i < 0 {
		return false
	}
	for _, r := range rs {
		for s := r.First; s <= r.Last && s < Slots; s++ {
			if s < 0 || int(t.owner[s]) != i+1 {
				return false
			}
		}
	}
	return true
}

// CurrentEpoch is the highest config epoch the cluster has used.
func (t *Topology) CurrentEpoch() uint64 { return t.epoch }

// Range is an inclusive run of slots.
type Range struct{ First, Last int }

// SlotsOf lists the slot ranges node id serves, in order.
func (t *Topology) SlotsOf(id string) []Range {
	i := t.index(id)
	if i < 0 {
		return nil
	}
	var out []Range
	for s := 0; s < Slots; s++ {
		if int(t.owner[s]) != i+1 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Last == s-1 {
			out[n-1].Last = s
		} else {
			out = append(out, Range{s, s})
		}
	}
	return out
}

// Assigned counts the slots with an owner, and of those the ones whose
// owner has not failed.
func (t *Topology) Assigned() (assigned, ok int) { return t.assigned, t.served }

// count sets assigned and served after a change.
func (t *Topology) count() {
	t.assigned, t.served = 0, 0
	for s := 0; s < Slots; s++ {
		if o := t.owner[s]; o != 0 {
			t.assigned++
			if !t.nodes[o-1].Failed {
				t.served++
			}
		}
	}
}

// Replicas lists the members replicating primary id, sorted by ID.
func (t *Topology) Replicas(id string) []*Node {
	var out []*Node
	for i := range t.nodes {
		if t.nodes[i].Primary == id {
			out = append(out, &t.nodes[i])
		}
	}
	return out
}

// Op names a change to the topology.
type Op string

// The changes, each what one CLUSTER subcommand (or the failure detector)
// asks for. Apply documents what each does.
const (
	OpAddNode   Op = "add-node"   // Node joins with Slots and Epoch it already had
	OpForget    Op = "forget"     // ID leaves
	OpAddSlots  Op = "add-slots"  // ID takes unassigned Slots
	OpDelSlots  Op = "del-slots"  // Slots become unassigned
	OpSetSlot   Op = "set-slot"   // ID takes Slots from whoever had them
	OpReplicate Op = "replicate"  // ID replicates Target
	OpFailover  Op = "failover"   // replica ID takes its primary's place
	OpSetEpoch  Op = "set-epoch"  // ID's config epoch becomes Epoch
	OpBumpEpoch Op = "bump-epoch" // ID gets a new, highest config epoch
	OpFail      Op = "fail"       // ID is unreachable
	OpRecover   Op = "recover"    // ID is reachable again
)

// Change is one entry of the consensus log.
type Change struct {
	// Proposal, when set, names the proposal: the log applies a change
	// with a given Proposal once, and answers a repeat (a retry after a
	// lost lead, which may have been committed) with the first outcome.
	// NewProposalID makes one.
	Proposal string  `json:"proposal,omitempty"`
	Op       Op      `json:"op"`
	ID       string  `json:"id,omitempty"`
	Target   string  `json:"target,omitempty"`
	Node     *Node   `json:"node,omitempty"`
	Slots    []Range `json:"slots,omitempty"`
	Epoch    uint64  `json:"epoch,omitempty"`
}

// Encode is the change as it is written to the log.
func (c Change) Encode() []byte {
	b, _ := json.Marshal(c) // a struct of strings, numbers and slices always marshals
	return b
}

// DecodeChange reads a change written by Encode.
func DecodeChange(b []byte) (Change, error) {
	var c Change
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("cluster: bad change: %w", err)
	}
	return c, nil
}

// Error is a change refused for a reason a client should read; its text
// is Redis's error for the same refusal.
type Error string

func (e Error) Error() string { return string(e) }

// Apply returns the topology with c made, or t itself and the reason c
// cannot be made. It is deterministic, so every member that applies the
// same log holds the same topology.
func (t *Topology) Apply(c Change) (*Topology, error) {
	n := t.clone()
	var err error
	switch c.Op {
	case OpAddNode:
		err = n.addNode(c)
	case OpForget:
		err = n.forget(c.ID)
	case OpAddSlots:
		err = n.addSlots(c.ID, c.Slots)
	case OpDelSlots:
		err = n.delSlots(c.Slots)
	case OpSetSlot:
		err = n.setSlots(c.ID, c.Slots)
	case OpReplicate:
		err = n.replicate(c.ID, c.Target)
	case OpFailover:
		err = n.failover(c.ID)
	case OpSetEpoch:
		err = n.setEpoch(c.ID, c.Epoch)
	case OpBumpEpoch:
		err = n.withNode(c.ID, func(nd *Node) error { n.bump(nd); return nil })
	case OpFail:
		err = n.withNode(c.ID, func(nd *Node) error { nd.Failed = true; return nil })
	case OpRecover:
		err = n.recover(c.ID)
	default:
		err = fmt.Errorf("cluster: unknown change %q", c.Op)
	}
	if err != nil {
		return t, err
	}
	n.count()
	return n, nil
}

func (t *Topology) clone() *Topology {
	n := *t
	n.nodes = append([]Node(nil), t.nodes...)
	n.forgotten = append([]string(nil), t.forgotten...)
	return &n
}

func unknownNode(id string) error { return Error("ERR Unknown node " + id) }

func (t *Topology) withNode(id string, fn func(*Node) error) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	return fn(&t.nodes[i])
}

func validRanges(rs []Range) error {
	for _, r := range rs {
		if r.First < 0 || r.Last >= Slots || r.First > r.Last {
			return Error("ERR Invalid or out of range slot")
		}
	}
	return nil
}

// addNode adds a member with the slots it claims; a claim on a slot that
// another member serves refuses the whole join.
func (t *Topology) addNode(c Change) error {
	if c.Node == nil || !IsNodeID(c.Node.ID) {
		return Error("ERR Invalid node")
	}
	if t.index(c.Node.ID) >= 0 {
		return nil // joined already: a retried join is not an error
	}
	nd := *c.Node
	for i, f := range t.forgotten { // a forgotten node may come back
		if f == nd.ID {
			t.forgotten = append(t.forgotten[:i], t.forgotten[i+1:]...)
			break
		}
	}
	at := sort.Search(len(t.nodes), func(i int) bool { return t.nodes[i].ID >= nd.ID })
	t.nodes = append(t.nodes, Node{})
	copy(t.nodes[at+1:], t.nodes[at:])
	t.nodes[at] = nd
	for s := range t.owner { // indexes at or after the new node move by one
		if int(t.owner[s]) > at {
			t.owner[s]++
		}
	}
	if err := t.claim(at, c.Slots); err != nil {
		return err // t is Apply's copy, dropped on error
	}
	t.epoch = max(t.epoch, nd.Epoch)
	return nil
}

// forget removes a member. Its slots become unassigned and its replicas
// primaries without slots, as when Redis forgets a node everywhere.
func (t *Topology) forget(id string) error {
	at := t.index(id)
	if at < 0 {
		return unknownNode(id)
	}
	t.nodes = append(t.nodes[:at], t.nodes[at+1:]...)
	if t.forgotten = append(t.forgotten, id); len(t.forgotten) > maxForgotten {
		t.forgotten = t.forgotten[1:]
	}
	for s := range t.owner {
		switch o := int(t.owner[s]); {
		case o == at+1:
			t.owner[s] = 0
		case o > at+1:
			t.owner[s]--
		}
	}
	for i := range t.nodes {
		if t.nodes[i].Primary == id {
			t.nodes[i].Primary = ""
		}
	}
	return nil
}

func (t *Topology) addSlots(id string, rs []Range) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	if t.nodes[i].Primary != "" {
		return Error("ERR Please use ADDSLOTS only with masters.")
	}
	return t.claim(i, rs)
}

// claim gives the node at index i the slots of rs, all unassigned and
// each named once, or none of them and Redis's reason.
func (t *Topology) claim(i int, rs []Range) error {
	if err := validRanges(rs); err != nil {
		return err
	}
	var seen [Slots]bool
	for _, r := range rs {
		for s := r.First; s <= r.Last; s++ {
			if t.owner[s] != 0 {
				return Error(fmt.Sprintf("ERR Slot %d is already busy", s))
			}
			if seen[s] {
				return Error(fmt.Sprintf("ERR Slot %d specified multiple times", s))
			}
			seen[s] = true
		}
	}
	for _, r := range rs {
		for s := r.First; s <= r.Last; s++ {
			t.owner[s] = uint16(i + 1)
		}
	}
	return nil
}

func (t *Topology) delSlots(rs []Range) error {
	if err := validRanges(rs); err != nil {
		return err
	}
	for _, r := range rs {
		for s := r.First; s <= r.Last; s++ {
			if t.owner[s] == 0 {
				return Error(fmt.Sprintf("ERR Slot %d is already unassigned", s))
			}
		}
	}
	for _, r := range rs {
		for s := r.First; s <= r.Last; s++ {
			t.owner[s] = 0
		}
	}
	return nil
}

// setSlots gives slots to primary id (CLUSTER SETSLOT slot NODE id at the
// end of a migration). A new owner takes a new config epoch, as Redis's
// importing node bumps its own.
func (t *Topology) setSlots(id string, rs []Range) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	if err := validRanges(rs); err != nil {
		return err
	}
	if t.nodes[i].Primary != "" {
		return Error("ERR Target node is not a master")
	}
	moved := false
	for _, r := range rs {
		for s := r.First; s <= r.Last; s++ {
			moved = moved || int(t.owner[s]) != i+1
			t.owner[s] = uint16(i + 1)
		}
	}
	if moved {
		t.bump(&t.nodes[i])
	}
	return nil
}

// replicate makes id a replica of target. A primary serving slots cannot
// become one, as in Redis.
func (t *Topology) replicate(id, target string) error {
	i, p := t.index(id), t.index(target)
	if i < 0 {
		return unknownNode(id)
	}
	if p < 0 {
		return unknownNode(target)
	}
	if i == p {
		return Error("ERR Can't replicate myself")
	}
	if t.nodes[p].Primary != "" {
		return Error("ERR I can only replicate a master, not a replica.")
	}
	if t.nodes[i].Primary == "" && len(t.SlotsOf(id)) > 0 {
		return Error("ERR To set a master the node must be empty and without assigned slots.")
	}
	t.nodes[i].Primary = target
	t.nodes[i].Shard = t.nodes[p].Shard
	for j := range t.nodes { // a primary that becomes a replica takes its replicas along
		if t.nodes[j].Primary == id {
			t.nodes[j].Primary, t.nodes[j].Shard = target, t.nodes[p].Shard
		}
	}
	return nil
}

// recover ends the failure mark on id. A primary replaced while it was
// away becomes a replica of its replacement's primary now (of the
// replacement itself unless that failed over in turn), as a Redis primary
// that comes back to find its slots taken replicates their new owner.
func (t *Topology) recover(id string) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	nd := &t.nodes[i]
	nd.Failed = false
	by := nd.ReplacedBy
	nd.ReplacedBy = ""
	if by == "" || nd.Primary != "" || len(t.SlotsOf(id)) > 0 {
		return nil
	}
	p := t.index(by)
	if p >= 0 && t.nodes[p].Primary != "" {
		p = t.index(t.nodes[p].Primary)
	}
	if p < 0 || p == i {
		return nil // its replacement is gone: it stays a primary without slots
	}
	nd.Primary, nd.Shard = t.nodes[p].ID, t.nodes[p].Shard
	return nil
}

// failover makes replica id the primary of its primary's slots; the other
// replicas replicate it. The old primary replicates it too, unless it has
// failed: then, as in Redis, it stays a primary without slots, flagged
// failed, until it is back (recover).
func (t *Topology) failover(id string) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	old := t.nodes[i].Primary
	if old == "" {
		return Error("ERR You should send CLUSTER FAILOVER to a replica")
	}
	o := t.index(old)
	for s := range t.owner {
		if int(t.owner[s]) == o+1 {
			t.owner[s] = uint16(i + 1)
		}
	}
	for j := range t.nodes {
		switch {
		case j == i:
		case j == o && t.nodes[o].Failed:
			t.nodes[o].ReplacedBy = id
		case j == o || t.nodes[j].Primary == old:
			t.nodes[j].Primary = id
		}
	}
	t.nodes[i].Primary = ""
	t.bump(&t.nodes[i])
	return nil
}

// setEpoch is CLUSTER SET-CONFIG-EPOCH, which Redis allows only on a node
// that knows no other node.
func (t *Topology) setEpoch(id string, epoch uint64) error {
	i := t.index(id)
	if i < 0 {
		return unknownNode(id)
	}
	if len(t.nodes) > 1 {
		return Error("ERR The user can assign a config epoch only when the node does not know any other node.")
	}
	if t.nodes[i].Epoch != 0 {
		return Error("ERR Node config epoch is already non-zero")
	}
	t.nodes[i].Epoch = epoch
	t.epoch = max(t.epoch, epoch)
	return nil
}

func (t *Topology) bump(nd *Node) {
	t.epoch++
	nd.Epoch = t.epoch
}

// snapshot is the topology as the consensus snapshot stores it.
type snapshot struct {
	Nodes     []Node             `json:"nodes"`
	Slots     map[string][]Range `json:"slots"`
	Epoch     uint64             `json:"epoch"`
	Forgotten []string           `json:"forgotten,omitempty"`
}

// MarshalJSON writes the topology for a consensus snapshot.
func (t *Topology) MarshalJSON() ([]byte, error) {
	s := snapshot{Nodes: t.nodes, Slots: map[string][]Range{}, Epoch: t.epoch, Forgotten: t.forgotten}
	for _, nd := range t.nodes {
		if rs := t.SlotsOf(nd.ID); len(rs) > 0 {
			s.Slots[nd.ID] = rs
		}
	}
	return json.Marshal(s)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *Topology) UnmarshalJSON(b []byte) error {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	n := Empty()
	n.epoch, n.forgotten = s.Epoch, s.Forgotten
	for i := range s.Nodes {
		nd := s.Nodes[i]
		if err := n.addNode(Change{Node: &nd}); err != nil {
			return err
		}
	}
	for id, rs := range s.Slots {
		if err := n.addSlots(id, rs); err != nil {
			return err
		}
	}
	n.count()
	*t = *n
	return nil
}

// IsNodeID reports whether s is 40 lowercase hex digits.
func IsNodeID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
