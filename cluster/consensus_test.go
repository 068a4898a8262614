package cluster

import (
	"errors"
	"io"
	"log"
	"net"
	"testing"
	"time"
)

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func openMember(t *testing.T, id byte, dir string) *Consensus {
	t.Helper()
	bus := freePort(t)
	c, err := Open(Config{
		Self:        Node{ID: nodeID(id), Shard: nodeID(id), IP: "127.0.0.1", Port: bus - 10000, BusPort: bus},
		Dir:         dir,
		NodeTimeout: 500 * time.Millisecond,
		Logger:      log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestConsensusJoinAndFailover: three members that each start alone with
// slots join one cluster and keep their slots; every member applies the
// same changes; when a primary stops, the leader marks it failed and
// promotes its replica.
func TestConsensusJoinAndFailover(t *testing.T) {
	a := openMember(t, 'a', t.TempDir())
	defer a.Close()
	b := openMember(t, 'b', "")
	defer b.Close()
	r := openMember(t, 'c', "")
	defer r.Close()

	if !a.Alone() || !b.Alone() {
		t.Fatal("a new member is a cluster of one")
	}
	if _, err := a.Propose(Change{Op: OpAddSlots, ID: nodeID('a'), Slots: []Range{{0, 8191}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Propose(Change{Op: OpAddSlots, ID: nodeID('b'), Slots: []Range{{8192, 16383}}}); err != nil {
		t.Fatal(err)
	}
	// b and r join a's cluster, as CLUSTER MEET makes them.
	for _, m := range []*Consensus{b, r} {
		self, slots := m.Self(), m.Topology().SlotsOf(m.Self().ID)
		if err := m.Reset(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Join(self, slots); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Propose(Change{Op: OpReplicate, ID: nodeID('c'), Target: nodeID('b')}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Consensus{a, b, r} {
		eventually(t, "every member to see the replica", func() bool {
			n, ok := m.Topology().Node(nodeID('c'))
			return ok && n.Primary == nodeID('b') && len(m.Topology().Nodes()) == 3
		})
		if o := m.Topology().Owner(16383); o == nil || o.ID != nodeID('b') {
			t.Fatalf("owner of 16383 = %v, want b", o)
		}
	}
	if _, err := b.Propose(Change{Op: OpBumpEpoch, ID: nodeID('b')}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower's Propose = %v, want ErrNotLeader", err)
	}
	if a.Leader() != nodeID('a') || b.Leader() != nodeID('a') {
		t.Fatalf("leader = %q / %q, want a", a.Leader(), b.Leader())
	}

	b.Close()
	eventually(t, "the replica to take b's slots", func() bool {
		o := a.Topology().Owner(16383)
		return o != nil && o.ID == nodeID('c')
	})
	eventually(t, "the replica to learn it", func() bool {
		o := r.Topology().Owner(16383)
		n, _ := r.Topology().Node(nodeID('b'))
		return o != nil && o.ID == nodeID('c') && n.Failed && n.Primary == nodeID('c')
	})
	if !a.Healthy() || !r.Healthy() {
		t.Fatal("the majority side is healthy")
	}
	// With a gone too, r is a minority of one: it must stop saying so.
	a.Close()
	eventually(t, "a minority to know it", func() bool { return !r.Healthy() })
}
