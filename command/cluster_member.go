package command

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/limitdb/limitdb/cluster"
)

// This node's membership in a cluster (cluster-enabled yes) is a
// cluster.Member: its consensus, joining another cluster, handing a change
// to the leader, and telling the node each topology it applies. Here are
// the commands that drive it, and followTopology, where the node's
// replication and open slots follow the topology.

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
	m, err := cluster.StartMember(cluster.MemberConfig{
		Config: cluster.Config{
			Self:        cluster.Node{ID: cs.id, Shard: cs.shardID, IP: announceIP(cfg.Bind, cfg.ClusterAnnounceIP), Port: port, BusPort: announced},
			BusListen:   bus,
			Dir:         dir,
			NodeTimeout: time.Duration(cfg.ClusterNodeTimeout) * time.Millisecond,
			Logger:      s.logger,
			Clock:       s.clk,
		},
		Auth: func() (string, string) {
			cfg := s.Config()
			return cfg.MasterUser, cfg.MasterAuth
		},
		Follow: s.followTopology,
	})
	if err != nil {
		return err
	}
	cs.member.Store(m)
	cs.cons.Store(m.Consensus())
	return nil
}

// followTopology makes this node what topology t says it is: a replica
// of its primary, or a primary; and closes the open slots a finished move
// has settled. The member calls it with each topology it applies.
func (s *Server) followTopology(t *cluster.Topology) {
	cs := s.cluster
	me, ok := t.Node(cs.id)
	if !ok {
		return
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

// onLeader runs do on the leader, handing args to it over its client
// port when this node does not lead (cluster.Member.OnLeader).
func (s *Server) onLeader(do func() (uint64, error), wait bool, args ...string) error {
	return s.cluster.member.Load().OnLeader(do, wait, args...)
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
	err := c.srv.onLeader(func() (uint64, error) { return cons.Join(n, slots) }, true,
		"CLUSTER", "RAFT-JOIN", string(args[2]), string(args[3]))
	clusterReply(c, err)
}

// cmdClusterMeet joins this node and the node at ip:port into one
// cluster (cluster.Member.Meet). Unlike Redis's, it answers once the join
// is made.
func cmdClusterMeet(c *Client, args [][]byte) {
	if _, ok := c.realCluster(); !ok {
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
	clusterReply(c, c.srv.cluster.member.Load().Meet(ip, int(port)))
}

// cmdClusterRaftMeet is MEET asked of a node by a cluster it should join:
// it does only when alone.
func cmdClusterRaftMeet(c *Client, args [][]byte) {
	if _, ok := c.realCluster(); !ok {
		return
	}
	clusterReply(c, c.srv.cluster.member.Load().AcceptMeet(string(args[2]), string(args[3])))
}
