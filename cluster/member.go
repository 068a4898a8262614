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
	changed chan struct{} // a new topology, or a new entry applied, to follow
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	// followed is the log index of the topology Follow last returned
	// from; advanced is closed, and replaced, each time it moves.
	fmu      sync.Mutex
	followed uint64
	advanced chan struct{}

	peers peerPool // connections to the other members' client ports
	// lagging are members that did not apply a change within the node
	// timeout (Everywhere), until when they are not waited for again.
	lagMu   sync.Mutex
	lagging map[string]time.Duration
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
	m := &Member{cfg: cfg, changed: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		advanced: make(chan struct{}), lagging: map[string]time.Duration{}}
	m.peers.dial = m.dial
	cc := cfg.Config
	cc.Offsets = m.replicaOffsets
	cc.OnApplied = func(uint64) {
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
		m.peers.close()
	})
}

// follow hands Follow the latest topology each time the log moves on,
// and then records how far it has followed.
func (m *Member) follow() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-m.changed:
		}
		index := m.cons.Applied() // before the topology: that is at least as new
		if m.cfg.Follow != nil {
			m.cfg.Follow(m.cons.Topology())
		}
		m.fmu.Lock()
		if index != m.followed { // lower after a reset: a new log
			m.followed = index
			close(m.advanced)
			m.advanced = make(chan struct{})
		}
		m.fmu.Unlock()
	}
}

// Followed is the log index of the topology this node last followed:
// what its CLUSTER NODES, SLOTS and open slots show.
func (m *Member) Followed() uint64 {
	m.fmu.Lock()
	defer m.fmu.Unlock()
	return m.followed
}

// WaitFollowed waits, at most limit, until this node has followed the log
// up to index; it reports whether it has.
func (m *Member) WaitFollowed(index uint64, limit time.Duration) bool {
	timeout := m.cfg.Clock.After(limit)
	for {
		m.fmu.Lock()
		done, wake := m.followed >= index, m.advanced
		m.fmu.Unlock()
		if done {
			return true
		}
		select {
		case <-wake:
		case <-timeout:
			return false
		case <-m.stop:
			return false
		}
	}
}

// Everywhere waits until every reachable member has followed the log up
// to index, so that a change answered is one every member shows: this
// node, and each other member not marked failed, asked over its client
// port (CLUSTER RAFT-APPLIED). A member that does not follow within the
// node timeout (cut off, or stopped and not yet marked failed) is left
// out, and is not waited for again for a node timeout. It reports the
// members left out.
func (m *Member) Everywhere(index uint64) []string {
	limit := m.cfg.NodeTimeout
	self := m.cons.cfg.Self.ID
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		late []string
	)
	now := m.cfg.Clock.Mono()
	for _, n := range m.cons.Topology().Nodes() {
		if n.ID == self || n.Failed || m.isLagging(n.ID, now) {
			continue
		}
		wg.Add(1)
		go func(n Node) {
			defer wg.Done()
			r, err := m.peers.call(n.Addr(), limit+time.Second, "CLUSTER", "RAFT-APPLIED", strconv.FormatUint(index, 10), strconv.FormatInt(limit.Milliseconds(), 10))
			if err == nil && r.Type == ':' {
				if got, _ := strconv.ParseUint(r.Line, 10, 64); got >= index {
					return
				}
			} else if err == nil {
				return // a member that does not know the command: nothing to wait for
			}
			mu.Lock()
			late = append(late, n.ID)
			mu.Unlock()
		}(n)
	}
	if !m.WaitFollowed(index, limit) {
		late = append(late, self)
	}
	wg.Wait()
	if len(late) > 0 {
		until := m.cfg.Clock.Mono() + limit
		m.lagMu.Lock()
		for _, id := range late {
			m.lagging[id] = until
		}
		m.lagMu.Unlock()
	}
	return late
}

// isLagging reports whether member id was left out of Everywhere less
// than a node timeout ago.
func (m *Member) isLagging(id string, now time.Duration) bool {
	m.lagMu.Lock()
	defer m.lagMu.Unlock()
	until, ok := m.lagging[id]
	if ok && now >= until {
		delete(m.lagging, id)
		return false
	}
	return ok
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
// wait it returns once every reachable member, this node included, has
// followed it (Everywhere): what the client that asked reads next, from
// any member, shows the change.
func (m *Member) Propose(ch Change, wait bool) error {
	if ch.Proposal == "" {
		ch.Proposal = NewProposalID()
	}
	var index uint64
	err := m.cons.OnLeader(func() (uint64, error) {
		i, err := m.cons.Propose(ch)
		index = i
		return i, err
	}, func(leader *Node) (uint64, bool, error) {
		i, retry, err := m.forward(leader, "CLUSTER", "RAFT-PROPOSE", string(ch.Encode()))
		index = i
		return i, retry, err
	}, false)
	if err == nil && wait {
		m.Everywhere(index)
	}
	return err
}

// OnLeader runs do on the leader (Consensus.OnLeader), handing args to it
// over its client port when this node does not lead. The leader answers
// TRYAGAIN when it no longer leads; a leader that cannot be reached, or
// whose answer does not come, is asked again as well.
func (m *Member) OnLeader(do func() (uint64, error), wait bool, args ...string) error {
	return m.cons.OnLeader(do, func(leader *Node) (uint64, bool, error) {
		return m.forward(leader, args...)
	}, wait)
}

// forward hands args to the leader over a kept connection to its client
// port: the log index it answers, or retry when it does not lead (or
// cannot be reached, or does not answer in time).
func (m *Member) forward(leader *Node, args ...string) (uint64, bool, error) {
	r, err := m.peers.call(leader.Addr(), max(3*m.cfg.NodeTimeout, callWait), args...)
	if err != nil || strings.HasPrefix(r.Line, "TRYAGAIN") {
		return 0, true, nil
	}
	if r.Type == ':' {
		index, _ := strconv.ParseUint(r.Line, 10, 64)
		return index, false, nil
	}
	return 0, false, ReplyError(r)
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
	pc, err := m.dial(addr)
	if err != nil {
		return resp.Reply{}, nil, err
	}
	defer pc.conn.Close()
	return pc.roundTrip(limit, args)
}

// dial connects to the client port at addr. The first command sent on it
// logs in first (MemberConfig.Auth), in the same write.
func (m *Member) dial(addr string) (*peerConn, error) {
	conn, err := net.DialTimeout("tcp", addr, m.cfg.NodeTimeout)
	if err != nil {
		return nil, err
	}
	pc := &peerConn{conn: conn, w: resp.NewWriter(conn), r: bufio.NewReader(conn)}
	if user, pass := m.cfg.Auth(); pass != "" {
		pc.auth = []string{"AUTH", pass}
		if user != "" {
			pc.auth = []string{"AUTH", user, pass}
		}
	}
	return pc, nil
}

// peerConn is a connection to another member's client port.
type peerConn struct {
	conn net.Conn
	w    *resp.Writer
	r    *bufio.Reader
	auth []string // AUTH to send before the first command; nil once sent
}

// roundTrip sends one command and reads its reply within limit. A refused
// AUTH is the reply, and the command's is not read.
func (pc *peerConn) roundTrip(limit time.Duration, args []string) (resp.Reply, []byte, error) {
	pc.conn.SetDeadline(time.Now().Add(limit))
	auth := pc.auth
	if auth != nil {
		writeCommand(pc.w, auth)
		pc.auth = nil
	}
	writeCommand(pc.w, args)
	if err := pc.w.Flush(); err != nil {
		return resp.Reply{}, nil, err
	}
	if auth != nil {
		if r, err := resp.ReadReply(pc.r); err != nil || r.IsError() {
			if err == nil {
				err = ReplyError(r)
			}
			return r, nil, err
		}
	}
	return resp.ReadBulk(pc.r, maxPeerBulk)
}

// peerPool keeps idle connections to the other members' client ports, so
// that the changes of a reshard, a few a slot, do not each connect and
// log in anew. A connection that fails is dropped.
type peerPool struct {
	dial   func(addr string) (*peerConn, error)
	mu     sync.Mutex
	idle   map[string][]*peerConn
	closed bool
}

// maxIdlePeerConns bounds the idle connections kept to one member: as
// many as changes made at once (Everywhere asks each member once).
const maxIdlePeerConns = 4

// call sends one command to addr over an idle connection, or a new one,
// and reads its reply within limit.
// A kept connection that fails (the member restarted since) is tried
// once more on a new one: the commands sent this way (RAFT-PROPOSE under
// a proposal ID, RAFT-APPLIED) may be repeated.
func (p *peerPool) call(addr string, limit time.Duration, args ...string) (resp.Reply, error) {
	for {
		pc, kept, err := p.get(addr)
		if err != nil {
			return resp.Reply{}, err
		}
		r, _, err := pc.roundTrip(limit, args)
		if err != nil {
			pc.conn.Close()
			if kept {
				continue
			}
			return r, err
		}
		p.put(addr, pc)
		return r, nil
	}
}

// get is an idle connection to addr (kept), or a new one.
func (p *peerPool) get(addr string) (pc *peerConn, kept bool, err error) {
	p.mu.Lock()
	if cs := p.idle[addr]; len(cs) > 0 {
		pc := cs[len(cs)-1]
		p.idle[addr] = cs[:len(cs)-1]
		p.mu.Unlock()
		return pc, true, nil
	}
	p.mu.Unlock()
	pc, err = p.dial(addr)
	return pc, false, err
}

func (p *peerPool) put(addr string, pc *peerConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= maxIdlePeerConns {
		pc.conn.Close()
		return
	}
	if p.idle == nil {
		p.idle = map[string][]*peerConn{}
	}
	p.idle[addr] = append(p.idle[addr], pc)
}

func (p *peerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, cs := range p.idle {
		for _, pc := range cs {
			pc.conn.Close()
		}
	}
	p.idle = nil
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
