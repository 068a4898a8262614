package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// threeMembers is a cluster of three members, a leading.
func threeMembers(t *testing.T) []*Consensus {
	t.Helper()
	ms := []*Consensus{openMember(t, 'a', ""), openMember(t, 'b', ""), openMember(t, 'c', "")}
	for _, m := range ms {
		t.Cleanup(m.Close)
	}
	for _, m := range ms[1:] {
		self := m.Self()
		if err := m.Reset(); err != nil {
			t.Fatal(err)
		}
		if _, err := ms[0].Join(self, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		eventually(t, "every member to hold all three", func() bool { return len(m.Topology().Nodes()) == 3 })
	}
	return ms
}

// viaLeader makes ch, stamped with a proposal ID, through from's
// OnLeader, handing it to the leading member in-process as CLUSTER
// RAFT-PROPOSE hands it over the network.
func viaLeader(from *Consensus, byID map[string]*Consensus, ch Change) error {
	ch.Proposal = NewProposalID()
	return from.OnLeader(func() (uint64, error) { return from.Propose(ch) }, func(leader *Node) (uint64, bool, error) {
		i, err := byID[leader.ID].Propose(ch)
		if errors.Is(err, ErrNotLeader) {
			return 0, true, nil
		}
		return i, false, err
	}, true)
}

func leaderOf(t *testing.T, ms []*Consensus, not string) *Consensus {
	t.Helper()
	var l *Consensus
	eventually(t, "a leader other than "+not, func() bool {
		for _, m := range ms {
			if m.current().State() == raft.Leader && m.cfg.Self.ID != not {
				l = m
				return true
			}
		}
		return false
	})
	return l
}

// TestChangesLandOnceAcrossLeadershipChanges: changes proposed without a
// pause from every member while the lead is handed over four times and
// then the leader is stopped all succeed, and each is applied exactly
// once: the config epoch grows by one per BUMPEPOCH answered OK. A change
// in flight when the lead moves is answered "leadership lost" or
// "leadership transfer in progress" by raft, though the new leader may
// commit it; it is retried on the new leader under its proposal ID.
func TestChangesLandOnceAcrossLeadershipChanges(t *testing.T) {
	ms := threeMembers(t)
	byID := map[string]*Consensus{}
	for _, m := range ms {
		byID[m.cfg.Self.ID] = m
	}
	before := ms[0].Topology().CurrentEpoch()

	var (
		stop    atomic.Bool
		made    atomic.Int64
		wg      sync.WaitGroup
		errMu   sync.Mutex
		errs    []error
		workers = []*Consensus{ms[1], ms[2]} // ms[0] leads first and is stopped last
	)
	for w, from := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				err := viaLeader(from, byID, Change{Op: OpBumpEpoch, ID: nodeID('b')})
				if err != nil {
					errMu.Lock()
					errs = append(errs, fmt.Errorf("worker %d, change %d: %w", w, i, err))
					errMu.Unlock()
					return
				}
				made.Add(1)
			}
		}()
	}
	failed := func() bool {
		errMu.Lock()
		defer errMu.Unlock()
		for _, err := range errs {
			t.Error(err)
		}
		return len(errs) > 0
	}
	waitMade := func(n int64) {
		t.Helper()
		eventually(t, "changes to be made", func() bool {
			errMu.Lock()
			defer errMu.Unlock()
			return made.Load() >= n || len(errs) == len(workers)
		})
		if failed() {
			stop.Store(true)
			wg.Wait()
			t.FailNow()
		}
	}
	waitMade(20)
	leader := ms[0]
	for range 4 {
		if err := leader.current().LeadershipTransfer().Error(); err != nil {
			t.Fatalf("leadership transfer: %v", err)
		}
		leader = leaderOf(t, ms, leader.cfg.Self.ID)
		waitMade(made.Load() + 20)
	}
	// The first leader last: it is no worker, so stopping it stops no
	// proposer, and the other two are a majority.
	if leader != ms[0] {
		a := ms[0].cfg.Self
		if err := leader.current().LeadershipTransferToServer(raft.ServerID(a.ID), raft.ServerAddress(ms[0].busAddr(&a))).Error(); err != nil {
			t.Fatalf("leadership transfer to the first member: %v", err)
		}
	}
	eventually(t, "the first member to lead again", func() bool { return ms[0].current().State() == raft.Leader })
	waitMade(made.Load() + 20)
	ms[0].Close()
	leaderOf(t, ms[1:], ms[0].cfg.Self.ID)
	waitMade(made.Load() + 20)
	stop.Store(true)
	wg.Wait()
	if failed() {
		t.FailNow()
	}

	// Both survivors hold the same log once each has applied all of it.
	last := max(ms[1].current().LastIndex(), ms[2].current().LastIndex())
	eventually(t, "the survivors to apply the whole log", func() bool {
		return ms[1].current().AppliedIndex() >= last && ms[2].current().AppliedIndex() >= last
	})
	for _, m := range ms[1:] {
		if got, want := m.Topology().CurrentEpoch()-before, uint64(made.Load()); got != want {
			t.Errorf("%s: epoch grew by %d for %d BUMPEPOCHs answered OK: a retried change was applied twice or lost", m.cfg.Self.ID[:1], got, want)
		}
	}
	t.Logf("%d changes across 5 changes of leader", made.Load())
}

// TestRetriedProposalAppliesOnce: the log applies a proposal ID once and
// answers a repeat with the first outcome, an OK or a refusal, also after
// a snapshot is restored; changes without an ID apply each time.
func TestRetriedProposalAppliesOnce(t *testing.T) {
	f := &fsm{c: &Consensus{}, cur: Empty(), proposals: map[string]outcome{}}
	index := uint64(0)
	apply := func(f *fsm, ch Change) error {
		index++
		err, _ := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: ch.Encode()}).(error)
		return err
	}
	a := Node{ID: nodeID('a'), Shard: nodeID('a'), IP: "127.0.0.1", Port: 7000, BusPort: 17000}
	if err := apply(f, Change{Op: OpAddNode, Node: &a}); err != nil {
		t.Fatal(err)
	}
	bump := Change{Proposal: NewProposalID(), Op: OpBumpEpoch, ID: a.ID}
	add := Change{Proposal: NewProposalID(), Op: OpAddSlots, ID: a.ID, Slots: []Range{{0, 99}}}
	clash := Change{Proposal: NewProposalID(), Op: OpAddSlots, ID: a.ID, Slots: []Range{{50, 60}}}
	unnamed := Change{Op: OpBumpEpoch, ID: a.ID}

	steps := []struct {
		ch        Change
		wantErr   string
		wantEpoch uint64
	}{
		{bump, "", 1},
		{bump, "", 1}, // the retry: not bumped again
		{add, "", 1},
		{add, "", 1}, // not "ERR Slot 0 is already busy"
		{clash, "ERR Slot 50 is already busy", 1},
		{clash, "ERR Slot 50 is already busy", 1},
		{unnamed, "", 2},
		{unnamed, "", 3},
	}
	for i, s := range steps {
		err := apply(f, s.ch)
		got := ""
		if err != nil {
			got = err.Error()
			var refused Error
			if !errors.As(err, &refused) {
				t.Errorf("step %d: %v is not a refusal (cluster.Error)", i, err)
			}
		}
		if got != s.wantErr {
			t.Errorf("step %d: error %q, want %q", i, got, s.wantErr)
		}
		if e := f.cur.CurrentEpoch(); e != s.wantEpoch {
			t.Errorf("step %d: epoch %d, want %d", i, e, s.wantEpoch)
		}
	}
	if rs := f.cur.SlotsOf(a.ID); len(rs) != 1 || rs[0] != (Range{0, 99}) {
		t.Fatalf("slots %v, want 0-99", rs)
	}

	// A member that receives the log as a snapshot remembers the same IDs.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := &fsm{c: &Consensus{}, cur: Empty(), proposals: map[string]outcome{}}
	if err := g.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	epoch := g.cur.CurrentEpoch()
	for _, ch := range []Change{bump, add} {
		if err := apply(g, ch); err != nil {
			t.Errorf("restored: %s again: %v", ch.Op, err)
		}
	}
	if err := apply(g, clash); err == nil || !strings.Contains(err.Error(), "already busy") {
		t.Errorf("restored: the refused change again = %v, want its refusal", err)
	}
	if g.cur.CurrentEpoch() != epoch {
		t.Errorf("restored: epoch %d after repeats, want %d", g.cur.CurrentEpoch(), epoch)
	}

	// A snapshot that is a bare topology still restores.
	top, _ := f.cur.MarshalJSON()
	h := &fsm{c: &Consensus{}, cur: Empty(), proposals: map[string]outcome{}}
	if err := h.Restore(io.NopCloser(bytes.NewReader(top))); err != nil {
		t.Fatal(err)
	}
	if len(h.cur.Nodes()) != 1 || len(h.proposals) != 0 {
		t.Fatalf("a bare topology restored to %d nodes, %d proposals", len(h.cur.Nodes()), len(h.proposals))
	}
}

// bufSink is a raft.SnapshotSink into a buffer.
type bufSink struct{ *bytes.Buffer }

func (bufSink) ID() string    { return "test" }
func (bufSink) Cancel() error { return nil }
func (bufSink) Close() error  { return nil }

// TestChangeWithoutMajorityAnswersClusterDown: with two of three members
// gone, a change waits up to twice the node timeout for a leader, then
// answers a CLUSTERDOWN refusal.
func TestChangeWithoutMajorityAnswersClusterDown(t *testing.T) {
	ms := threeMembers(t)
	byID := map[string]*Consensus{}
	for _, m := range ms {
		byID[m.cfg.Self.ID] = m
	}
	ms[0].Close()
	ms[1].Close()
	start := time.Now()
	err := viaLeader(ms[2], byID, Change{Op: OpBumpEpoch, ID: nodeID('c')})
	if !errors.Is(err, ErrNoMajority) || !strings.HasPrefix(err.Error(), "CLUSTERDOWN ") {
		t.Fatalf("a change without a majority = %v, want %v", err, ErrNoMajority)
	}
	if waited := time.Since(start); waited < 2*ms[2].cfg.NodeTimeout {
		t.Fatalf("answered after %v, before twice the node timeout", waited)
	}
}

// TestTimingsFor: raft's timers from the node timeout.
func TestTimingsFor(t *testing.T) {
	for _, c := range []struct {
		node, beat, commit time.Duration
	}{
		{100 * time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond},
		{time.Second, 500 * time.Millisecond, 50 * time.Millisecond},
		{2 * time.Second, time.Second, 50 * time.Millisecond},
		{15 * time.Second, 2 * time.Second, 50 * time.Millisecond},
		{time.Minute, 2 * time.Second, 50 * time.Millisecond},
	} {
		got := TimingsFor(c.node)
		if got.Heartbeat != c.beat || got.Lease != c.beat || got.Commit != c.commit {
			t.Errorf("TimingsFor(%v) = %+v, want heartbeat and lease %v, commit %v", c.node, got, c.beat, c.commit)
		}
		if got.Lease > got.Heartbeat || 2*got.Heartbeat > max(c.node, 100*time.Millisecond) {
			t.Errorf("TimingsFor(%v) = %+v: a lost leader would not be noticed within the node timeout", c.node, got)
		}
	}
}
