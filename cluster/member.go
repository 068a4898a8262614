package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/limitdb/limitdb/resp"
)

// A Member is a node's membership in a cluster (cluster-enabled yes): its
// consensus, joining another cluster (CLUSTER MEET), handing a change to
// the leader over the leader's client port (authenticated as a replica
// authenticates to its primary, with masteruser/masterauth), and telling
// the node each topology it applies, so that the node follows the role it
// is given. The commands that drive it are the command layer's.

// MemberConfig is what a member needs beyond its consensus's Config.
type MemberConfig struct {
	// Config is the consensus's; the member sets its OnChange and
	// Offsets.
	Config
	// Auth is how the member logs in to other members' client ports: the
	// user (empty: AUTH with the password alone) and the password (empty:
	// no AUTH), read at each call.
	Auth func() (user, pass string)
	// Follow is called, from one goroutine, with the latest topology
	// this member has applied whenever it changes: where the node becomes
	// a replica or a primary and settles its open slots.
	Follow func(*Topology)
}

// Member is a node's running membership in a cluster.
type Member struct {
	cons    *Consensus
	cfg     MemberConfig
	changed chan struct{} // a new topology to follow
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// StartMember starts a node's membership: its consensus (Open) and the
// goroutine that hands each new topology to Follow. Close stops both.
func StartMember(cfg MemberConfig) (*Member, error) {
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	if cfg.Auth == nil {
		cfg.Auth = func() (string, string) { return "", "" }
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 15 * time.Second
	}
	m := &Member{cfg: cfg, changed: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	cc := cfg.Config
	cc.Offsets = m.replicaOffsets
	cc.OnChange = func(*Topology) {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
	cons, err := Open(cc)
	if err != nil {
		return nil, err
	}
	m.cons = cons
	go m.follow()
	return m, nil
}

// Consensus is the member's consensus.
func (m *Member) Consensus() *Consensus { return m.cons }

// Close stops following and leaves the cluster's work (Consensus.Close).
func (m *Member) Close() {
	m.once.Do(func() {
		close(m.stop)
		<-m.done
		m.cons.Close()
	})
}

// follow hands Follow the latest topology each time it changes.
func (m *Member) follow() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-m.changed:
		}
		if m.cfg.Follow != nil {
			m.cfg.Follow(m.cons.Topology())
		}
	}
}

// replicaOffsets asks each replica, over its client port, how much of its
// primary's stream it holds (INFO replication's slave_repl_offset); -1
// for one that does not answer.
func (m *Member) replicaOffsets(replicas []Node) map[string]int64 {
	out := make(map[string]int64, len(replicas))
	for _, n := range replicas {
		out[n.ID] = -1
		r, info, err := m.read(n.Addr(), "INFO", "replication")
		if err != nil || r.IsError() {
			continue
		}
		for _, line := range strings.Split(string(info), "\r\n") {
			if v, ok := strings.CutPrefix(line, "slave_repl_offset:"); ok {
				if off, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[n.ID] = off
				}
			}
		}
	}
	return out
}

// Propose makes change ch through the leader (OnLeader, the leader's
// CLUSTER RAFT-PROPOSE when this node does not lead) under a proposal ID
// of its own, so that the retries after a lost lead make it once. With
// wait it returns once this node has applied it.
func (m *Member) Propose(ch Change, wait bool) error {
	if ch.Proposal == "" {
		ch.Proposal = NewProposalID()
	}
	return m.OnLeader(func() (uint64, error) { return m.cons.Propose(ch) }, wait,
		"CLUSTER", "RAFT-PROPOSE", string(ch.Encode()))
}

// OnLeader runs do on the leader (Consensus.OnLeader), handing args to it
// over its client port when this node does not lead. The leader answers
// TRYAGAIN when it no longer leads; a leader that cannot be reached, or
// whose answer does not come, is asked again as well.
func (m *Member) OnLeader(do func() (uint64, error), wait bool, args ...string) error {
	return m.cons.OnLeader(do, func(leader *Node) (uint64, bool, error) {
		r, err := m.Call(leader.Addr(), args...)
		if err != nil || strings.HasPrefix(r.Line, "TRYAGAIN") {
			return 0, true, nil
		}
		if r.Type == ':' {
			index, _ := strconv.ParseUint(r.Line, 10, 64)
			return index, false, nil
		}
		return 0, false, ReplyError(r)
	}, wait)
}

// PeerError is an error another node answered, in its words.
type PeerError string

func (e PeerError) Error() string { return string(e) }

// ReplyError is r as a PeerError when it is an error reply, else nil.
func ReplyError(r resp.Reply) error {
	if r.IsError() {
		return PeerError(r.Line)
	}
	return nil
}

// Call sends one command to the node at addr's client port and reads its
// reply, waiting for it up to three times the node timeout, and at least
// callWait: the other node may itself wait up to twice the node timeout
// for its leader (OnLeader), then make the change, which for a join means
// sending the new member the log.
func (m *Member) Call(addr string, args ...string) (resp.Reply, error) {
	r, _, err := m.readWithin(max(3*m.cfg.NodeTimeout, callWait), addr, args...)
	return r, err
}

// callWait is the least time Call waits for an answer: a member that gave
// up on a change still under way (a join) would act on a wrong belief,
// and a busy machine can take seconds to make a change that an idle one
// makes in milliseconds.
const callWait = 30 * time.Second

// maxPeerBulk bounds the bulk reply read keeps: an INFO section.
const maxPeerBulk = 1 << 20

// read sends one command and returns its reply and a bulk reply's body,
// waiting up to twice the node timeout.
func (m *Member) read(addr string, args ...string) (resp.Reply, []byte, error) {
	return m.readWithin(2*m.cfg.NodeTimeout, addr, args...)
}

// readWithin is read that waits up to limit.
func (m *Member) readWithin(limit time.Duration, addr string, args ...string) (resp.Reply, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, m.cfg.NodeTimeout)
	if err != nil {
		return resp.Reply{}, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(limit))
	w := resp.NewWriter(conn)
	user, pass := m.cfg.Auth()
	if pass != "" {
		auth := []string{"AUTH", pass}
		if user != "" {
			auth = []string{"AUTH", user, pass}
		}
		writeCommand(w, auth)
	}
	writeCommand(w, args)
	if err := w.Flush(); err != nil {
		return resp.Reply{}, nil, err
	}
	br := bufio.NewReader(conn)
	if pass != "" {
		if r, err := resp.ReadReply(br); err != nil || r.IsError() {
			return r, nil, err
		}
	}
	return resp.ReadBulk(br, maxPeerBulk)
}

// writeCommand buffers args as a command: an array of bulk strings.
func writeCommand(w *resp.Writer, args []string) {
	w.Array(len(args))
	for _, a := range args {
		w.BulkString(a)
	}
}

// Meet joins this node and the node at ip:port into one cluster (CLUSTER
// MEET); a node the topology holds already is met. The one that is alone joins
// the other's: this node when it is (as redis-cli --cluster create and
// add-node have it), else the other is asked to (RAFT-MEET, answered by
// AcceptMeet). Two clusters of several nodes are never merged.
func (m *Member) Meet(ip string, port int) error {
	for _, n := range m.cons.Topology().Nodes() {
		if n.IP == ip && n.Port == port {
			return nil
		}
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	if m.cons.Alone() {
		return m.join(addr)
	}
	self := m.cons.Self()
	r, err := m.Call(addr, "CLUSTER", "RAFT-MEET", self.IP, strconv.Itoa(self.Port))
	if err == nil {
		err = ReplyError(r)
	}
	return err
}

// AcceptMeet is MEET asked of this node by the cluster of the node at
// ip:port: it joins that cluster only when alone.
func (m *Member) AcceptMeet(ip, port string) error {
	if !m.cons.Alone() {
		return fmt.Errorf("%s:%s is in another cluster; limitdb does not merge clusters", ip, port)
	}
	return m.join(net.JoinHostPort(ip, port))
}

// join makes this node, alone, a member of the cluster of the node at
// addr, keeping its slots; when that cluster refuses, the node is alone
// again with its slots.
func (m *Member) join(addr string) error {
	cons := m.cons
	self := cons.Self()
	slots := cons.Topology().SlotsOf(self.ID)
	node, _ := json.Marshal(self)
	rs, _ := json.Marshal(slots)
	if err := cons.Reset(); err != nil {
		return err
	}
	// The other node hands the join to its leader, retrying while it
	// has none; a leader that lost the lead answers TRYAGAIN. Joining
	// again is harmless (Consensus.Join), so this node asks again, for
	// up to twice the node timeout.
	var err error
	for deadline := m.cfg.Clock.Mono() + 2*m.cfg.NodeTimeout; ; m.cfg.Clock.Sleep(50 * time.Millisecond) {
		var r resp.Reply
		if r, err = m.Call(addr, "CLUSTER", "RAFT-JOIN", string(node), string(rs)); err == nil {
			err = ReplyError(r)
		}
		if err == nil || !strings.HasPrefix(r.Line, "TRYAGAIN") || m.cfg.Clock.Mono() > deadline {
			break
		}
	}
	if err != nil {
		if berr := cons.Rebootstrap(slots); berr != nil {
			m.cfg.Logger.Printf("cluster: could not become a cluster of one again: %v", berr)
		}
		return err
	}
	m.cfg.Logger.Printf("cluster: joined the cluster of %s", addr)
	return nil
}
