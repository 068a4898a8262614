package cluster

import (
	"errors"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
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

func openMember(t *testing.T, id byte, dir string, offsets ...func([]Node) map[string]int64) *Consensus {
	t.Helper()
	bus := freePort(t)
	var off func([]Node) map[string]int64
	if len(offsets) > 0 {
		off = offsets[0]
	}
	c, err := Open(Config{
		Offsets:     off,
		Self:        Node{ID: nodeID(id), Shard: nodeID(id), IP: "127.0.0.1", Port: bus - 10000, BusPort: bus},
		Dir:         dir,
		NodeTimeout: 2 * time.Second, // raft's lease is half of it: a busy machine causes no election
		Logger:      log.New(io.Discard, "", 0),
		Clock:       clock.Real(), // raft runs on the system clock: its members' waits must too
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestConsensusJoinAndFailover: members that each start alone, two with
// slots, join one cluster and keep their slots; every member applies the
// same changes; when a primary stops, the leader marks it failed and
// promotes the replica furthest ahead (d, though c comes first by ID).
func TestConsensusJoinAndFailover(t *testing.T) {
	var asked []string
	a := openMember(t, 'a', t.TempDir(), func(rs []Node) map[string]int64 {
		for _, n := range rs {
			asked = append(asked, n.ID)
		}
		return map[string]int64{nodeID('c'): 50, nodeID('d'): 100}
	})
	defer a.Close()
	b := openMember(t, 'b', "")
	defer b.Close()
	c := openMember(t, 'c', "")
	defer c.Close()
	r := openMember(t, 'd', "")
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
	// b, c and r join a's cluster, as CLUSTER MEET makes them.
	for _, m := range []*Consensus{b, c, r} {
		self, slots := m.Self(), m.Topology().SlotsOf(m.Self().ID)
		if err := m.Reset(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Join(self, slots); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []byte{'c', 'd'} {
		if _, err := a.Propose(Change{Op: OpReplicate, ID: nodeID(id), Target: nodeID('b')}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*Consensus{a, b, c, r} {
		eventually(t, "every member to see the replicas", func() bool {
			n, ok := m.Topology().Node(nodeID('d'))
			return ok && n.Primary == nodeID('b') && len(m.Topology().Nodes()) == 4
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
	eventually(t, "the replica furthest ahead to take b's slots", func() bool {
		o := a.Topology().Owner(16383)
		return o != nil && o.ID == nodeID('d')
	})
	eventually(t, "the replicas to learn it", func() bool {
		o := c.Topology().Owner(16383)
		n, _ := c.Topology().Node(nodeID('b'))
		me, _ := c.Topology().Node(nodeID('c'))
		return o != nil && o.ID == nodeID('d') && n.Failed && n.Primary == "" && n.ReplacedBy == nodeID('d') && me.Primary == nodeID('d')
	})
	if len(asked) < 2 {
		t.Fatalf("the leader asked %v for their offsets, want both replicas", asked)
	}
	if !a.Healthy() || !r.Healthy() {
		t.Fatal("the majority side is healthy")
	}
	// With a and c gone too, r is a minority of one: it must stop saying so.
	a.Close()
	c.Close()
	eventually(t, "a minority to know it", func() bool { return !r.Healthy() })
}

// TestLeaderWithoutMajority: a leader whose heartbeats to most members
// have failed for the node timeout no longer counts itself on the
// majority side, though raft's lease may keep it leading a while.
func TestLeaderWithoutMajority(t *testing.T) {
	clk := clock.NewFake(1)
	c := &Consensus{cfg: Config{NodeTimeout: 3 * time.Second}, clk: clk, failing: map[string]time.Duration{}}
	top := Empty()
	for _, id := range []byte{'a', 'b', 'c', 'd', 'e'} {
		top, _ = top.Apply(Change{Op: OpAddNode, Node: &Node{ID: nodeID(id)}})
	}
	steps := []struct {
		name    string
		failing map[string]time.Duration // since, before now
		want    bool
	}{
		{"every member heard", nil, true},
		{"two of five lost for the node timeout", map[string]time.Duration{nodeID('b'): 3 * time.Second, nodeID('c'): 4 * time.Second}, true},
		{"three lost, one only just", map[string]time.Duration{nodeID('b'): 3 * time.Second, nodeID('c'): 4 * time.Second, nodeID('d'): time.Second}, true},
		{"three lost for the node timeout", map[string]time.Duration{nodeID('b'): 3 * time.Second, nodeID('c'): 4 * time.Second, nodeID('d'): 5 * time.Second}, false},
	}
	clk.Advance(time.Hour)
	for _, s := range steps {
		clear(c.failing)
		for id, ago := range s.failing {
			c.failing[id] = clk.Mono() - ago
		}
		if got := c.majorityReached(top); got != s.want {
			t.Errorf("%s: majorityReached = %v, want %v", s.name, got, s.want)
		}
	}
}
