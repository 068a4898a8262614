package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/limitdb/limitdb/clock"
)

// The members agree on the topology through hashicorp/raft: every change
// (a node joins, slots move, a replica is promoted) is an entry of one
// replicated log, applied in the same order everywhere. The log carries
// metadata only; commands on keys never wait on it. Each member is a raft
// voter reached on its bus port.
//
// A node starts as a cluster of one, as a Redis node does. CLUSTER MEET
// sent to such a node makes it join the other node's cluster: it asks that
// cluster's leader to add it (with the slots it already serves), wipes its
// own one-node log, and receives the cluster's log as a new voter.
//
// The leader watches the members through raft's own heartbeats: a member
// whose heartbeats have failed for longer than the node timeout is marked
// failed, and when it was a primary one of its replicas takes its slots.
// A member that has not heard from a leader for the node timeout knows it
// may be on the minority side of a partition, and Healthy turns false.
//
// A change survives a change of leader: OnLeader retries it on the new
// leader (or waits for one) when leadership is lost, a transfer is under
// way or the leader's queue is full, for up to twice the node timeout. A
// change raft reports as lost may have been committed all the same, so
// each proposal carries an ID (Change.Proposal) and the log applies an ID
// once: a retry answers what the first attempt did.

// Config is what a member needs to take part.
type Config struct {
	Self Node // this node: ID, shard, client and bus addresses, as the others reach it
	// BusListen is the port the bus listens on when the others reach it
	// through another (cluster-announce-bus-port); 0 is Self.BusPort.
	BusListen   int
	Dir         string        // where the log and snapshots live; "" keeps them in memory
	NodeTimeout time.Duration // cluster-node-timeout
	Logger      *log.Logger
	// Clock is what its waits and failure times read (required): the
	// engine's. Raft keeps its own timers on the system clock, so the
	// waits for it (a leader, an applied index) move only as fast as
	// this clock is stepped.
	Clock clock.Clock
	// OnChange is called with each new topology, in log order, from one
	// goroutine at a time. It must not block for long.
	OnChange func(*Topology)
	// OnApplied is called, like OnChange, after each entry of the log
	// this member applies, whether it changed the topology or was
	// refused: Applied has moved on.
	OnApplied func(index uint64)
	// Offsets, when set, asks replicas how much of their primary's
	// stream they hold (replication offsets; -1 for one that does not
	// answer), so that the leader promotes the one furthest ahead, as
	// Redis ranks its replicas. Without it the first by ID is promoted.
	Offsets func(replicas []Node) map[string]int64
}

// Consensus is this node's membership in the cluster.
type Consensus struct {
	cfg  Config
	clk  clock.Clock
	topo atomic.Pointer[Topology]
	ok   atomic.Bool // Healthy
	// applied is the index of the last log entry the topology has
	// applied (Applied): raft's own AppliedIndex moves before its FSM
	// has run, and counts entries the FSM never sees.
	applied atomic.Uint64

	mu    sync.Mutex // guards the fields below, which Reset replaces
	raft  *raft.Raft
	trans *raft.NetworkTransport
	store *raftboltdb.BoltStore // nil in memory
	fsm   *fsm

	failMu  sync.Mutex
	failing map[string]time.Duration // on the leader: members whose heartbeats fail, since when (clk.Mono)

	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// ErrNotLeader is returned by Propose on a member that is not the leader,
// or that lost the lead (or is handing it over) before the change was
// known to be committed: the change is to be retried on the leader,
// with the same proposal ID. Leader says which member leads.
var ErrNotLeader = errors.New("cluster: not the leader")

// ErrNoMajority is OnLeader's answer when no leader could make the change
// within twice the node timeout: the cluster has no majority, or has had
// none for that long.
var ErrNoMajority = Error("CLUSTERDOWN No cluster leader made the change within twice cluster-node-timeout; the cluster may have lost its majority")

// notLeader reports raft's errors that mean "ask the leader again": the
// change may or may not have been committed, and another leader (or this
// one, once its queue drains) can take it. A leader shutting down is one:
// the members that stay elect another.
func notLeader(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrEnqueueTimeout) ||
		errors.Is(err, raft.ErrRaftShutdown)
}

// asNotLeader is err as ErrNotLeader when raft says to ask the leader
// again, else err prefixed with what failed.
func asNotLeader(err error, what string) error {
	if notLeader(err) {
		return fmt.Errorf("%w: %s: %v", ErrNotLeader, what, err)
	}
	return fmt.Errorf("cluster: %s: %w", what, err)
}

// NewProposalID is a proposal's ID: 96 random bits, so that IDs from every
// member and every restart never meet.
func NewProposalID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand's contract since Go 1.24)
	return hex.EncodeToString(b[:])
}

// Timings are raft's timers as derived from the node timeout.
type Timings struct {
	// Heartbeat is raft's HeartbeatTimeout and ElectionTimeout: a
	// follower that has heard nothing from the leader for a random time
	// between Heartbeat and twice it starts an election; the leader
	// sends heartbeats ten times as often.
	Heartbeat time.Duration
	// Lease is how long a leader keeps leading without hearing from a
	// majority (LeaderLeaseTimeout): raft allows no more than Heartbeat.
	Lease time.Duration
	// Commit is how long an idle leader waits before it tells the
	// followers the latest commit index (CommitTimeout): how soon a
	// follower applies a change the leader has committed.
	Commit time.Duration
}

// TimingsFor derives raft's timers from the node timeout: a leader lost is
// replaced within the node timeout (Heartbeat is half of it, so a follower
// notices within the node timeout), and a leader or follower that is not
// scheduled for up to half the node timeout (a busy CPU) causes no
// election and no lost lead. Heartbeat is kept within 50 ms and 2 s, so
// that a large node timeout still elects a new leader in seconds.
func TimingsFor(nodeTimeout time.Duration) Timings {
	beat := min(max(nodeTimeout/2, 50*time.Millisecond), 2*time.Second)
	return Timings{Heartbeat: beat, Lease: beat, Commit: min(max(beat/10, 10*time.Millisecond), 50*time.Millisecond)}
}

// Open starts this node's part in the cluster: it reloads the log from
// Dir, or starts a cluster of one.
func Open(cfg Config) (*Consensus, error) {
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 15 * time.Second
	}
	if cfg.Clock == nil {
		return nil, errors.New("cluster: Config.Clock is required")
	}
	c := &Consensus{cfg: cfg, clk: cfg.Clock, failing: map[string]time.Duration{}, stop: make(chan struct{})}
	c.topo.Store(Empty())
	fresh, err := c.start()
	if err != nil {
		return nil, err
	}
	if fresh {
		if err := c.bootstrap(nil); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.wg.Add(1)
	go c.watch()
	return c, nil
}

// start makes the raft instance from what Dir holds; fresh reports that it
// held nothing.
func (c *Consensus) start() (fresh bool, err error) {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.cfg.Self.ID)
	tm := TimingsFor(c.cfg.NodeTimeout)
	rc.HeartbeatTimeout, rc.ElectionTimeout = tm.Heartbeat, tm.Heartbeat
	rc.LeaderLeaseTimeout = tm.Lease
	rc.CommitTimeout = tm.Commit
	rc.SnapshotThreshold = 1024
	rc.TrailingLogs = 1024
	// raft logs every failed heartbeat to a member that is down, many a
	// second; the decisions that matter are logged by watch instead.
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "cluster", Level: hclog.Off, Output: c.cfg.Logger.Writer()})

	listen := c.cfg.BusListen
	if listen == 0 {
		listen = c.cfg.Self.BusPort
	}
	advertise := &net.TCPAddr{IP: net.ParseIP(c.cfg.Self.IP), Port: c.cfg.Self.BusPort}
	addr := net.JoinHostPort(c.cfg.Self.IP, strconv.Itoa(listen))
	trans, err := raft.NewTCPTransportWithLogger(addr, advertise, 3, c.cfg.NodeTimeout, rc.Logger)
	if err != nil {
		return false, fmt.Errorf("cluster: bus port: %w", err)
	}
	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
		store  *raftboltdb.BoltStore
	)
	if c.cfg.Dir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(c.cfg.Dir, 0o755); err != nil {
			trans.Close()
			return false, fmt.Errorf("cluster: %w", err)
		}
		if store, err = raftboltdb.NewBoltStore(filepath.Join(c.cfg.Dir, "raft.db")); err != nil {
			trans.Close()
			return false, fmt.Errorf("cluster: log: %w", err)
		}
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(c.cfg.Dir, 2, rc.Logger); err != nil {
			store.Close()
			trans.Close()
			return false, fmt.Errorf("cluster: snapshots: %w", err)
		}
		logs, stable = store, store
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		if store != nil {
			store.Close()
		}
		trans.Close()
		return false, fmt.Errorf("cluster: %w", err)
	}
	f := &fsm{c: c, cur: Empty(), proposals: map[string]outcome{}}
	c.applied.Store(0) // a new log: what the old one applied counts no more
	r, err := raft.NewRaft(rc, f, logs, stable, snaps, trans)
	if err != nil {
		if store != nil {
			store.Close()
		}
		trans.Close()
		return false, fmt.Errorf("cluster: %w", err)
	}
	obs := make(chan raft.Observation, 64)
	r.RegisterObserver(raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.LeaderObservation:
			return true
		}
		return false
	}))
	c.mu.Lock()
	c.raft, c.trans, c.store, c.fsm = r, trans, store, f
	c.mu.Unlock()
	c.wg.Add(1)
	go c.observe(obs)
	return !has, nil
}

// bootstrap makes this node a cluster of one holding itself, with slots
// (a node that could not join keeps the ones it had).
func (c *Consensus) bootstrap(slots []Range) error {
	r := c.current()
	self := c.cfg.Self
	cfg := raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(self.ID), Address: raft.ServerAddress(c.busAddr(&self))}}}
	if err := r.BootstrapCluster(cfg).Error(); err != nil {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	deadline := c.clk.Mono() + 10*c.cfg.NodeTimeout
	for r.State() != raft.Leader {
		if c.clk.Mono() > deadline {
			return errors.New("cluster: a cluster of one elected no leader")
		}
		c.clk.Sleep(5 * time.Millisecond)
	}
	c.ok.Store(true) // it leads itself
	_, err := c.Propose(Change{Op: OpAddNode, Node: &self, Slots: slots, Epoch: self.Epoch})
	return err
}

func (c *Consensus) busAddr(n *Node) string {
	return net.JoinHostPort(n.IP, strconv.Itoa(n.BusPort))
}

func (c *Consensus) current() *raft.Raft {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raft
}

// Topology is the latest topology this member has applied.
func (c *Consensus) Topology() *Topology { return c.topo.Load() }

// Self is this node as the topology holds it, or as configured before it
// is in one.
func (c *Consensus) Self() Node {
	if n, ok := c.Topology().Node(c.cfg.Self.ID); ok {
		return *n
	}
	return c.cfg.Self
}

// Healthy reports whether this member is the leader or has heard from one
// within the node timeout: whether it may be on the majority side.
func (c *Consensus) Healthy() bool { return c.ok.Load() }

// Alone reports whether this node is a cluster of one.
func (c *Consensus) Alone() bool {
	f := c.current().GetConfiguration()
	if f.Error() != nil {
		return false
	}
	s := f.Configuration().Servers
	return len(s) == 1 && string(s[0].ID) == c.cfg.Self.ID && len(c.Topology().Nodes()) <= 1
}

// Leader is the ID of the member that leads, "" when none is known.
func (c *Consensus) Leader() string {
	_, id := c.current().LeaderWithID()
	return string(id)
}

// Propose appends a change to the log and waits until it is applied here:
// ErrNotLeader unless this member leads until the change is committed, a
// cluster Error when the topology refuses it. It returns the change's log
// index. A change with a Proposal ID the log has applied already is not
// made again: Propose answers what it answered the first time.
func (c *Consensus) Propose(ch Change) (uint64, error) {
	r := c.current()
	if r.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	if ch.Op == OpSetSlot && c.Topology().owns(ch.ID, ch.Slots) {
		return c.Applied(), nil // redis-cli tells every primary; the log needs it once
	}
	f := r.Apply(ch.Encode(), c.cfg.NodeTimeout)
	if err := f.Error(); err != nil {
		return 0, asNotLeader(err, string(ch.Op))
	}
	c.nudge(r)
	if err, ok := f.Response().(error); ok {
		return 0, err
	}
	return f.Index(), nil
}

// nudge tells the followers at once that what the leader applied is
// committed. Raft tells them with the next entry it sends, or after the
// commit timeout when none follows (50-100 ms): a barrier is an entry that
// changes nothing, sent now. Its own commit is left to come later; no one
// waits for it.
func (c *Consensus) nudge(r *raft.Raft) {
	r.Barrier(c.cfg.NodeTimeout)
}

// Applied is the index of the last log entry this member has applied to
// its topology, changed or refused.
func (c *Consensus) Applied() uint64 { return c.applied.Load() }

// WaitApplied waits, at most the node timeout, until this member has
// applied the log up to index: a change the leader made is then visible
// here too.
func (c *Consensus) WaitApplied(index uint64) {
	r := c.current()
	for deadline := c.clk.Mono() + c.cfg.NodeTimeout; r.AppliedIndex() < index && c.clk.Mono() < deadline; {
		c.clk.Sleep(2 * time.Millisecond)
	}
}

// Forward hands a request that needs the leader to leader, another
// member: it returns the log index of the change when the leader gave one,
// and retry when the leader could not be reached or no longer leads.
type Forward func(leader *Node) (index uint64, retry bool, err error)

// OnLeader runs do, which needs the leader, here when this member leads;
// otherwise it hands the request to the leader with forward. While no
// leader takes it (none is elected, the leader lost the lead or is handing
// it over, or cannot be reached) it tries again, for at most twice the
// node timeout: the time a lost leader takes to be noticed (at most the
// node timeout, TimingsFor) and replaced. Then it answers ErrNoMajority.
// do and forward must be safe to repeat: a change that raft reported as
// lost may have been made (Member.Propose gives each change a proposal ID
// for that). With wait it returns once this member has applied the
// change, so that the client that asked reads its own change here.
func (c *Consensus) OnLeader(do func() (uint64, error), forward Forward, wait bool) error {
	deadline := c.clk.Mono() + 2*c.cfg.NodeTimeout
	for {
		_, err := do()
		if !errors.Is(err, ErrNotLeader) {
			return err
		}
		if id := c.Leader(); id != "" && id != c.cfg.Self.ID {
			if n, ok := c.Topology().Node(id); ok {
				index, retry, err := forward(n)
				if !retry {
					if err == nil && wait {
						c.WaitApplied(index)
					}
					return err
				}
			}
		}
		if c.clk.Mono() > deadline {
			return ErrNoMajority
		}
		c.clk.Sleep(20 * time.Millisecond)
	}
}

// Join adds node n to the cluster with the slots it serves; only the
// leader can. n must have wiped its own log (Reset) first. Both of its
// steps may be repeated: a node the topology holds is not added again, and
// adding a voter raft has already is a no-op change.
func (c *Consensus) Join(n Node, slots []Range) (uint64, error) {
	if _, err := c.Propose(Change{Op: OpAddNode, Node: &n, Slots: slots, Epoch: n.Epoch}); err != nil {
		return 0, err
	}
	f := c.current().AddVoter(raft.ServerID(n.ID), raft.ServerAddress(c.busAddr(&n)), 0, c.cfg.NodeTimeout)
	if err := f.Error(); err != nil {
		return 0, asNotLeader(err, "adding "+n.ID)
	}
	return f.Index(), nil
}

// Forget removes member id from the cluster; only the leader can. It may
// be repeated: a node forgotten already is only taken out of raft's
// voters if a lost lead left it there.
func (c *Consensus) Forget(id string) (uint64, error) {
	r := c.current()
	if r.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	if !c.Topology().Forgotten(id) {
		if _, err := c.Propose(Change{Op: OpForget, ID: id}); err != nil {
			return 0, err
		}
	} else if !c.isVoter(id) {
		return r.AppliedIndex(), nil // every member but the first asked redis-cli sends it again
	}
	f := r.RemoveServer(raft.ServerID(id), 0, c.cfg.NodeTimeout)
	if err := f.Error(); err != nil {
		return 0, asNotLeader(err, "removing "+id)
	}
	return f.Index(), nil
}

// isVoter reports whether raft's configuration holds member id.
func (c *Consensus) isVoter(id string) bool {
	f := c.current().GetConfiguration()
	if f.Error() != nil {
		return true // unknown: removing it again is harmless
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// Reset wipes this node's log and waits, with no cluster, to be added to
// another one (Join on its leader). The topology stays as it was until
// the new cluster's log arrives.
func (c *Consensus) Reset() error {
	c.mu.Lock()
	r, trans, store := c.raft, c.trans, c.store
	c.mu.Unlock()
	if err := r.Shutdown().Error(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	trans.Close()
	if store != nil {
		store.Close()
		os.Remove(filepath.Join(c.cfg.Dir, "raft.db"))
		os.RemoveAll(filepath.Join(c.cfg.Dir, "snapshots"))
	}
	_, err := c.start()
	return err
}

// Rebootstrap makes this node, reset and not taken in by another cluster,
// a cluster of one again with the slots it had.
func (c *Consensus) Rebootstrap(slots []Range) error { return c.bootstrap(slots) }

// Close leaves the cluster's work: raft stops, the log is closed.
func (c *Consensus) Close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.mu.Lock()
		r, trans, store := c.raft, c.trans, c.store
		c.mu.Unlock()
		r.Shutdown().Error()
		trans.Close()
		if store != nil {
			store.Close()
		}
		c.wg.Wait()
	})
}

// observe keeps, on the leader, since when each member's heartbeats fail,
// and logs each change of leader: elections an operator should not see
// while every member runs (a node timeout too short for the machine's
// load shows here first).
func (c *Consensus) observe(ch chan raft.Observation) {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case o := <-ch:
			if l, ok := o.Data.(raft.LeaderObservation); ok {
				if l.LeaderID == "" {
					c.cfg.Logger.Printf("cluster: no leader (term %d)", o.Raft.CurrentTerm())
				} else {
					c.cfg.Logger.Printf("cluster: %s leads (term %d)", l.LeaderID, o.Raft.CurrentTerm())
				}
				continue
			}
			c.failMu.Lock()
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				if _, ok := c.failing[string(d.PeerID)]; !ok {
					c.failing[string(d.PeerID)] = c.clk.Mono()
				}
			case raft.ResumedHeartbeatObservation:
				delete(c.failing, string(d.PeerID))
			}
			c.failMu.Unlock()
		}
	}
}

// watch updates Healthy and, on the leader, turns failed heartbeats into
// failure marks and promotions.
func (c *Consensus) watch() {
	defer c.wg.Done()
	tick := c.clk.NewTicker(min(c.cfg.NodeTimeout/10, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C():
		}
		r := c.current()
		leader := r.State() == raft.Leader
		if leader {
			c.ok.Store(c.majorityReached(c.Topology()))
		} else {
			c.ok.Store(time.Duration(c.clk.Now()-r.LastContact().UnixNano()) < c.cfg.NodeTimeout)
		}
		if !leader {
			c.failMu.Lock()
			clear(c.failing)
			c.failMu.Unlock()
			continue
		}
		for _, ch := range c.failureChanges(c.Topology()) {
			_, err := c.Propose(ch)
			switch {
			case err == nil:
				c.cfg.Logger.Printf("cluster: %s %s", failureVerbs[ch.Op], ch.ID)
			case !errors.Is(err, ErrNotLeader):
				c.cfg.Logger.Printf("cluster: %s %s: %v", ch.Op, ch.ID, err)
			}
		}
	}
}

// majorityReached reports, on the leader, whether it has reached a
// majority of the members within the node timeout: a leader cut off from
// the others keeps its lead until raft's lease runs out, and longer when
// its timers run late on a busy machine; as a Redis primary that has not
// reached most of the others for the node timeout, it stops serving then.
func (c *Consensus) majorityReached(t *Topology) bool {
	members := len(t.Nodes())
	if members <= 1 {
		return true
	}
	now := c.clk.Mono()
	c.failMu.Lock()
	lost := 0
	for _, since := range c.failing {
		if now-since >= c.cfg.NodeTimeout {
			lost++
		}
	}
	c.failMu.Unlock()
	return members-lost > members/2
}

var failureVerbs = map[Op]string{
	OpFail:     "unreachable for the node timeout, marked failed:",
	OpRecover:  "reachable again:",
	OpFailover: "promoted in its failed primary's place:",
}

// failureChanges is what the leader proposes about its members' health: a
// mark on each member whose heartbeats have failed for the node timeout
// and the promotion of a replica for each such primary serving slots, or
// the end of the mark on a member heard from again.
func (c *Consensus) failureChanges(t *Topology) []Change {
	c.failMu.Lock()
	var out []Change
	var orphaned []string // failed primaries serving slots
	for _, n := range t.Nodes() {
		since, failing := c.failing[n.ID]
		down := failing && c.clk.Mono()-since >= c.cfg.NodeTimeout && n.ID != c.cfg.Self.ID
		switch {
		case down && !n.Failed:
			out = append(out, Change{Op: OpFail, ID: n.ID})
		case !failing && n.Failed:
			out = append(out, Change{Op: OpRecover, ID: n.ID})
		}
		if down && n.Primary == "" && len(t.SlotsOf(n.ID)) > 0 {
			orphaned = append(orphaned, n.ID)
		}
	}
	candidates := map[string][]Node{}
	for _, id := range orphaned {
		for _, r := range t.Replicas(id) {
			if _, bad := c.failing[r.ID]; !bad && !r.Failed {
				candidates[id] = append(candidates[id], *r)
			}
		}
	}
	c.failMu.Unlock()
	for _, id := range orphaned { // asking the replicas is network I/O: outside the lock
		if r := c.promotable(candidates[id]); r != "" {
			out = append(out, Change{Op: OpFailover, ID: r})
		}
	}
	return out
}

// promotable picks the replica to promote among a failed primary's
// reachable ones: the furthest ahead when Offsets can tell, then the
// first by ID.
func (c *Consensus) promotable(rs []Node) string {
	if len(rs) == 0 {
		return ""
	}
	var offsets map[string]int64
	if c.cfg.Offsets != nil && len(rs) > 1 {
		offsets = c.cfg.Offsets(rs)
	}
	sort.Slice(rs, func(i, j int) bool {
		if oi, oj := offsets[rs[i].ID], offsets[rs[j].ID]; oi != oj {
			return oi > oj
		}
		return rs[i].ID < rs[j].ID
	})
	return rs[0].ID
}

// fsm applies the log to the topology.
type fsm struct {
	c   *Consensus
	cur *Topology // touched only by raft's apply goroutine
	// proposals are the outcomes of the last maxProposals changes that
	// carried a proposal ID, and order those IDs oldest first: a change
	// retried after a lost lead finds its first outcome here. They are
	// part of the replicated state (snapshots carry them), so that every
	// member, and every later leader, deduplicates alike.
	proposals map[string]outcome
	order     []string
	index     uint64 // of the last entry applied; part of the snapshot
}

// maxProposals bounds the proposal IDs the log remembers. A retry comes
// within twice the node timeout of its first attempt; a reshard, the
// busiest proposer, makes a few hundred changes a second.
const maxProposals = 8192

// outcome is what applying a proposal answered: nothing, a refusal (an
// Error, Refused) or another error.
type outcome struct {
	ID      string `json:"id"`
	Err     string `json:"err,omitempty"`
	Refused bool   `json:"refused,omitempty"`
}

func (o outcome) err() error {
	switch {
	case o.Err == "":
		return nil
	case o.Refused:
		return Error(o.Err)
	default:
		return errors.New(o.Err)
	}
}

func (f *fsm) Apply(l *raft.Log) any {
	defer f.applied(l.Index)
	ch, err := DecodeChange(l.Data)
	if err != nil {
		return err
	}
	if ch.Proposal != "" {
		if o, ok := f.proposals[ch.Proposal]; ok {
			return o.err()
		}
	}
	next, err := f.cur.Apply(ch)
	if ch.Proposal != "" {
		f.remember(ch.Proposal, err)
	}
	if err != nil {
		return err
	}
	f.publish(next)
	return nil
}

// applied records that the log up to index has been applied, after the
// topology it made is published.
func (f *fsm) applied(index uint64) {
	f.index = index
	f.c.applied.Store(index)
	if f.c.cfg.OnApplied != nil {
		f.c.cfg.OnApplied(index)
	}
}

// remember keeps the outcome of proposal id, forgetting the oldest beyond
// maxProposals.
func (f *fsm) remember(id string, err error) {
	o := outcome{ID: id}
	if err != nil {
		var refused Error
		o.Err, o.Refused = err.Error(), errors.As(err, &refused)
	}
	f.proposals[id] = o
	f.order = append(f.order, id)
	if len(f.order) > maxProposals {
		delete(f.proposals, f.order[0])
		f.order = f.order[1:]
	}
}

func (f *fsm) publish(t *Topology) {
	f.cur = t
	f.c.topo.Store(t)
	if f.c.cfg.OnChange != nil {
		f.c.cfg.OnChange(t)
	}
}

// fsmState is the snapshot of the log's state: the topology and the
// outcomes of the last proposals, oldest first. A snapshot that is a bare
// topology (written before proposals were remembered) restores with none.
type fsmState struct {
	Topology  json.RawMessage `json:"topology"`
	Proposals []outcome       `json:"proposals,omitempty"`
	Index     uint64          `json:"index,omitempty"` // the last entry applied
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	top, err := json.Marshal(f.cur)
	if err != nil {
		return nil, err
	}
	st := fsmState{Topology: top, Proposals: make([]outcome, 0, len(f.order)), Index: f.index}
	for _, id := range f.order {
		st.Proposals = append(st.Proposals, f.proposals[id])
	}
	b, err := json.Marshal(st)
	return snapshotBytes(b), err
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	var st fsmState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	if st.Topology == nil {
		st.Topology = b
	}
	t := Empty()
	if err := json.Unmarshal(st.Topology, t); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	f.proposals, f.order = make(map[string]outcome, len(st.Proposals)), nil
	for _, o := range st.Proposals {
		if _, dup := f.proposals[o.ID]; !dup && o.ID != "" {
			f.proposals[o.ID] = o
			f.order = append(f.order, o.ID)
		}
	}
	f.publish(t)
	if st.Index > 0 { // a snapshot written before it kept the index has none
		f.applied(st.Index)
	}
	return nil
}

type snapshotBytes []byte

func (s snapshotBytes) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshotBytes) Release() {}
