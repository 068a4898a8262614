package command

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/replication"
	"github.com/limitdb/limitdb/resp"
)

// This node's membership in a cluster (cluster-enabled yes): starting its
// consensus, joining another cluster (CLUSTER MEET), handing a change to
// the leader over the leader's client port (authenticated as a replica
// authenticates to its primary, with masteruser/masterauth), and making
// the node's replication follow the roles the topology gives it.

// StartCluster joins the node's consensus (cluster-enabled yes) once it
// listens on port: a cluster of one at first, or the cluster its log in
// --dir says it belongs to.
func (s *Server) StartCluster(port int) error {
	cs := s.cluster
	if !cs.on || cs.emulated {
		return nil
	}
	cfg := s.Config()
	bus := cfg.ClusterPort
	if bus == 0 {
		bus = port + 10000
	}
	announced := bus
	if cfg.ClusterAnnounceBusPort != 0 {
		announced = cfg.ClusterAnnounceBusPort
	}
	dir := ""
	if cfg.Dir != "" {
		dir = filepath.Join(cfg.Dir, "cluster")
	}
	cons, err := cluster.Open(cluster.Config{
		Self:        cluster.Node{ID: cs.id, Shard: cs.shardID, IP: announceIP(cfg.Bind, cfg.ClusterAnnounceIP), Port: port, BusPort: announced},
		BusListen:   bus,
		Dir:         dir,
		NodeTimeout: time.Duration(cfg.ClusterNodeTimeout) * time.Millisecond,
		Logger:      s.logger,
		Clock:       s.clk,
		Offsets:     s.replicaOffsets,
		OnChange: func(*cluster.Topology) {
			select {
			case cs.changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	cs.cons.Store(cons)
	go s.followTopology(cons)
	return nil
}

// replicaOffsets asks each replica, over its client port, how much of its
// primary's stream it holds (INFO replication's slave_repl_offset); -1
// for one that does not answer.
func (s *Server) replicaOffsets(replicas []cluster.Node) map[string]int64 {
	out := make(map[string]int64, len(replicas))
	for _, n := range replicas {
		out[n.ID] = -1
		r, info, err := s.peerRead(n.Addr(), "INFO", "replication")
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

// followTopology makes this node what the topology says it is: a replica
// of its primary, or a primary; and closes the open slots a finished move
// has settled.
func (s *Server) followTopology(cons *cluster.Consensus) {
	cs := s.cluster
	for {
		select {
		case <-s.done:
			return
		case <-cs.changed:
		}
		t := cons.Topology()
		me, ok := t.Node(cs.id)
		if !ok {
			continue
		}
		if me.Primary != "" {
			if p, ok := t.Node(me.Primary); ok {
				if s.becomeReplica(p.IP, p.Port) {
					s.logger.Printf("cluster: replicating %s (%s)", p.ID, p.Addr())
				}
			}
		} else if s.becomePrimary() {
			s.logger.Printf("cluster: now the primary of %d slot ranges", len(t.SlotsOf(cs.id)))
		}
		cs.mu.Lock()
		for slot := range cs.migrating {
			if o := t.Owner(slot); o == nil || o.ID != cs.id {
				delete(cs.migrating, slot)
			}
		}
		for slot := range cs.importing {
			if o := t.Owner(slot); o != nil && o.ID == cs.id {
				delete(cs.importing, slot)
				delete(cs.claimed, slot)
			}
		}
		cs.open.Store(int32(len(cs.migrating) + len(cs.importing)))
		cs.mu.Unlock()
	}
}

// onLeader runs do on the leader (cluster.Consensus.OnLeader), handing
// args to it over its client port when this node does not lead.
func (s *Server) onLeader(cons *cluster.Consensus, do func() (uint64, error), wait bool, args ...string) error {
	return cons.OnLeader(do, func(leader *cluster.Node) (uint64, bool, error) {
		r, err := s.peerCall(leader.Addr(), args...)
		if err != nil || strings.HasPrefix(r.Line, "TRYAGAIN") {
			return 0, true, nil
		}
		if r.Type == ':' {
			index, _ := strconv.ParseUint(r.Line, 10, 64)
			return index, false, nil
		}
		return 0, false, replyErr(r)
	}, wait)
}

// peerError is an error another node answered, in its words.
type peerError string

func (e peerError) Error() string { return string(e) }

func replyErr(r resp.Reply) error {
	if r.IsError() {
		return peerError(r.Line)
	}
	return nil
}

// peerCall sends one command to another node and reads its reply.
func (s *Server) peerCall(addr string, args ...string) (resp.Reply, error) {
	r, _, err := s.peerRead(addr, args...)
	return r, err
}

// maxPeerBulk bounds the bulk reply peerRead keeps: an INFO section.
const maxPeerBulk = 1 << 20

// peerRead is peerCall that also returns a bulk reply's body.
func (s *Server) peerRead(addr string, args ...string) (resp.Reply, []byte, error) {
	cfg := s.Config()
	timeout := time.Duration(cfg.ClusterNodeTimeout) * time.Millisecond
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return resp.Reply{}, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * timeout))
	var out []byte
	if cfg.MasterAuth != "" {
		auth := []string{"AUTH", cfg.MasterAuth}
		if cfg.MasterUser != "" {
			auth = []string{"AUTH", cfg.MasterUser, cfg.MasterAuth}
		}
		out = replication.AppendCommand(out, auth...)
	}
	out = replication.AppendCommand(out, args...)
	if _, err := conn.Write(out); err != nil {
		return resp.Reply{}, nil, err
	}
	br := bufio.NewReader(conn)
	if cfg.MasterAuth != "" {
		if r, err := resp.ReadReply(br); err != nil || r.IsError() {
			return r, nil, err
		}
	}
	return resp.ReadBulk(br, maxPeerBulk)
}

func cmdClusterRaftPropose(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	ch, err := cluster.DecodeChange(args[2])
	if err != nil {
		c.Errf("%v", err)
		return
	}
	c.leaderReply(cons.Propose(ch))
}

// leaderReply answers a request this node ran as the leader: the log
// index of the change, which the asking node waits to apply.
func (c *Client) leaderReply(index uint64, err error) {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		c.Err("TRYAGAIN not the cluster leader")
	case err != nil:
		clusterError(c, err)
	default:
		c.Int(int64(index))
	}
}

func cmdClusterRaftJoin(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	var n cluster.Node
	var slots []cluster.Range
	if json.Unmarshal(args[2], &n) != nil || json.Unmarshal(args[3], &slots) != nil {
		c.Errf("bad join request")
		return
	}
	err := c.srv.onLeader(cons, func() (uint64, error) { return cons.Join(n, slots) }, true,
		"CLUSTER", "RAFT-JOIN", string(args[2]), string(args[3]))
	clusterReply(c, err)
}

// cmdClusterMeet joins this node and the node at ip:port into one
// cluster. The one that is alone joins the other's: this node when it is
// (as redis-cli --cluster create and add-node have it), else the other is
// asked to. Two clusters of several nodes are never merged. Unlike
// Redis's, it answers once the join is made.
func cmdClusterMeet(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	ip := string(args[2])
	port, err := strconv.ParseInt(string(args[3]), 10, 64)
	if err != nil {
		c.Errf("Invalid TCP base port specified: %s", args[3])
		return
	}
	if len(args) > 4 {
		if _, err := strconv.ParseInt(string(args[4]), 10, 64); err != nil {
			c.Errf("Invalid TCP bus port specified: %s", args[4])
			return
		}
	}
	if port <= 0 || port > 65535 || net.ParseIP(ip) == nil {
		c.Errf("Invalid node address specified: %s:%s", args[2], args[3])
		return
	}
	for _, n := range cons.Topology().Nodes() {
		if n.IP == ip && int64(n.Port) == port {
			c.OK()
			return
		}
	}
	addr := net.JoinHostPort(ip, strconv.FormatInt(port, 10))
	if cons.Alone() {
		if err := c.srv.joinCluster(cons, addr); err != nil {
			clusterError(c, err)
			return
		}
		c.OK()
		return
	}
	self := cons.Self()
	r, err := c.srv.peerCall(addr, "CLUSTER", "RAFT-MEET", self.IP, strconv.Itoa(self.Port))
	if err == nil {
		err = replyErr(r)
	}
	clusterReply(c, err)
}

// cmdClusterRaftMeet is MEET asked of a node by a cluster it should join:
// it does only when alone.
func cmdClusterRaftMeet(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	if !cons.Alone() {
		c.Errf("%s:%s is in another cluster; limitdb does not merge clusters", args[2], args[3])
		return
	}
	if err := c.srv.joinCluster(cons, net.JoinHostPort(string(args[2]), string(args[3]))); err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
}

// joinCluster makes this node, alone, a member of the cluster of the node
// at addr, keeping its slots; when that cluster refuses, the node is
// alone again with its slots.
func (s *Server) joinCluster(cons *cluster.Consensus, addr string) error {
	self := cons.Self()
	slots := cons.Topology().SlotsOf(self.ID)
	node, _ := json.Marshal(self)
	rs, _ := json.Marshal(slots)
	if err := cons.Reset(); err != nil {
		return err
	}
	r, err := s.peerCall(addr, "CLUSTER", "RAFT-JOIN", string(node), string(rs))
	if err == nil {
		err = replyErr(r)
	}
	if err != nil {
		if berr := cons.Rebootstrap(slots); berr != nil {
			s.logger.Printf("cluster: could not become a cluster of one again: %v", berr)
		}
		return err
	}
	s.logger.Printf("cluster: joined the cluster of %s", addr)
	return nil
}
