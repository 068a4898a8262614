package cluster

import (
	"encoding/json"
	"strings"
	"testing"
)

func nodeID(c byte) string { return strings.Repeat(string(c), 40) }

// TestTopologyApply walks a three-primary, one-replica cluster through the
// changes redis-cli and the failure detector make, checking owners, roles
// and epochs after each step.
func TestTopologyApply(t *testing.T) {
	a, b, c, r := nodeID('a'), nodeID('b'), nodeID('c'), nodeID('d')
	add := func(id string, port int, slots ...Range) Change {
		return Change{Op: OpAddNode, Node: &Node{ID: id, Shard: id, IP: "127.0.0.1", Port: port, BusPort: port + 10000}, Slots: slots}
	}
	steps := []struct {
		name    string
		change  Change
		wantErr string
		check   func(t *testing.T, top *Topology)
	}{
		{"a joins with slots", add(a, 7000, Range{0, 5460}), "", func(t *testing.T, top *Topology) {
			if o := top.Owner(5460); o == nil || o.ID != a {
				t.Fatalf("owner of 5460 = %v, want a", o)
			}
		}},
		{"b joins", add(b, 7001, Range{5461, 10922}), "", nil},
		{"c claims a busy slot", add(c, 7002, Range{10922, 16383}), "ERR Slot 10922 is already busy", nil},
		{"c joins", add(c, 7002), "", nil},
		{"c adds slots", Change{Op: OpAddSlots, ID: c, Slots: []Range{{10923, 16383}}}, "", func(t *testing.T, top *Topology) {
			if as, ok := top.Assigned(); as != Slots || ok != Slots {
				t.Fatalf("assigned %d ok %d, want all", as, ok)
			}
		}},
		{"r joins", add(r, 7003), "", nil},
		{"a cannot replicate", Change{Op: OpReplicate, ID: a, Target: b}, "ERR To set a master the node must be empty and without assigned slots.", nil},
		{"r replicates a", Change{Op: OpReplicate, ID: r, Target: a}, "", func(t *testing.T, top *Topology) {
			n, _ := top.Node(r)
			if n.Primary != a || n.Shard != a {
				t.Fatalf("r = %+v, want a replica in a's shard", n)
			}
		}},
		{"a fails", Change{Op: OpFail, ID: a}, "", func(t *testing.T, top *Topology) {
			if _, ok := top.Assigned(); ok != Slots-5461 {
				t.Fatalf("ok slots = %d, want %d", ok, Slots-5461)
			}
		}},
		{"r takes over", Change{Op: OpFailover, ID: r}, "", func(t *testing.T, top *Topology) {
			if o := top.Owner(0); o.ID != r {
				t.Fatalf("owner of 0 = %s, want r", o.ID)
			}
			// As in Redis, a failed primary stays a primary, with no
			// slots, until it is back (below).
			old, _ := top.Node(a)
			if old.Primary != "" || len(top.SlotsOf(a)) != 0 || old.ReplacedBy != r {
				t.Fatalf("old primary = %+v with slots %v, want a primary without slots replaced by r", old, top.SlotsOf(a))
			}
			if n, _ := top.Node(r); n.Epoch != top.CurrentEpoch() || n.Epoch == 0 {
				t.Fatalf("r's epoch %d, current %d", n.Epoch, top.CurrentEpoch())
			}
		}},
		{"a is back and replicates r", Change{Op: OpRecover, ID: a}, "", func(t *testing.T, top *Topology) {
			old, _ := top.Node(a)
			if nr, _ := top.Node(r); old.Primary != r || old.Shard != nr.Shard || old.Failed || old.ReplacedBy != "" {
				t.Fatalf("old primary = %+v, want a replica of r in r's shard", old)
			}
		}},
		{"slot 0 moves to b", Change{Op: OpSetSlot, ID: b, Slots: []Range{{0, 0}}}, "", func(t *testing.T, top *Topology) {
			if o := top.Owner(0); o.ID != b {
				t.Fatalf("owner of 0 = %s, want b", o.ID)
			}
			if rs := top.SlotsOf(r); len(rs) != 1 || rs[0] != (Range{1, 5460}) {
				t.Fatalf("r's slots %v", rs)
			}
		}},
		{"b forgotten", Change{Op: OpForget, ID: b}, "", func(t *testing.T, top *Topology) {
			if top.Owner(0) != nil || top.Owner(6000) != nil {
				t.Fatal("b's slots should be unassigned")
			}
			if o := top.Owner(16383); o.ID != c {
				t.Fatalf("owner of 16383 = %s, want c", o.ID)
			}
		}},
		{"b is remembered as forgotten", Change{Op: OpBumpEpoch, ID: c}, "", func(t *testing.T, top *Topology) {
			if !top.Forgotten(b) || top.Forgotten(c) {
				t.Fatal("b forgotten, c not")
			}
		}},
		{"unknown node", Change{Op: OpAddSlots, ID: b, Slots: []Range{{0, 0}}}, "ERR Unknown node " + b, nil},
		{"out of range", Change{Op: OpDelSlots, Slots: []Range{{0, Slots}}}, "ERR Invalid or out of range slot", nil},
	}
	top := Empty()
	for _, st := range steps {
		next, err := top.Apply(st.change)
		if st.wantErr != "" {
			if err == nil || err.Error() != st.wantErr {
				t.Fatalf("%s: err = %v, want %q", st.name, err, st.wantErr)
			}
			if next != top {
				t.Fatalf("%s: a refused change must leave the topology", st.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if st.check != nil {
			t.Run(st.name, func(t *testing.T) { st.check(t, next) })
		}
		// The snapshot form holds everything.
		b, _ := json.Marshal(next)
		back := Empty()
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%s: snapshot: %v", st.name, err)
		}
		if back.owner != next.owner || back.epoch != next.epoch || len(back.nodes) != len(next.nodes) || len(back.forgotten) != len(next.forgotten) {
			t.Fatalf("%s: snapshot does not restore the topology", st.name)
		}
		for i := range back.nodes {
			if back.nodes[i] != next.nodes[i] {
				t.Fatalf("%s: node %d = %+v, want %+v", st.name, i, back.nodes[i], next.nodes[i])
			}
		}
		top = next
	}
}

func TestSetEpochOnlyAlone(t *testing.T) {
	a, b := nodeID('a'), nodeID('b')
	top, _ := Empty().Apply(Change{Op: OpAddNode, Node: &Node{ID: a}})
	top, err := top.Apply(Change{Op: OpSetEpoch, ID: a, Epoch: 3})
	if err != nil || top.CurrentEpoch() != 3 {
		t.Fatalf("set epoch: %v, current %d", err, top.CurrentEpoch())
	}
	top, _ = top.Apply(Change{Op: OpAddNode, Node: &Node{ID: b}})
	if _, err := top.Apply(Change{Op: OpSetEpoch, ID: b, Epoch: 4}); err == nil {
		t.Fatal("a node that knows another must refuse SET-CONFIG-EPOCH")
	}
}
