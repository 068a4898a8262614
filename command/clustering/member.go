package clustering

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/command"
)

// This node's membership in a cluster (cluster-enabled yes) is a
// cluster.Member: its consensus, joining another cluster, handing a change
// to the leader, and telling the node each topology it applies. Here are
// the commands that drive it, and followTopology, where the node's
// replication and open slots follow the topology.

// StartCluster joins the node's consensus (cluster-enabled yes) once it
// listens on port: a cluster of one at first, or the cluster its log in
// --dir says it belongs to.
func (f *Family) StartCluster(port int) error {
	cs := f.cs
	if !cs.on || cs.emulated {
		return nil
	}
	cfg := f.env.Config()
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
			Logger:      f.env.Logger,
			Clock:       f.env.Clock,
		},
		Auth: func() (string, string) {
			cfg := f.env.Config()
			return cfg.MasterUser, cfg.MasterAuth
		},
		Follow: f.followTopology,
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
func (f *Family) followTopology(t *cluster.Topology) {
	cs := f.cs
	me, ok := t.Node(cs.id)
	if !ok {
		return
	}
	if me.Primary != "" {
		if p, ok := t.Node(me.Primary); ok {
			if f.env.BecomeReplica(p.IP, p.Port) {
				f.env.Logger.Printf("cluster: replicating %s (%s)", p.ID, p.Addr())
			}
		}
	} else if f.env.BecomePrimary() {
		f.env.Logger.Printf("cluster: now the primary of %d slot ranges", len(t.SlotsOf(cs.id)))
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
func (f *Family) onLeader(do func() (uint64, error), wait bool, args ...string) error {
	return f.cs.member.Load().OnLeader(do, wait, args...)
}

func (f *Family) cmdClusterRaftPropose(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	ch, err := cluster.DecodeChange(args[2])
	if err != nil {
		c.Errf("%v", err)
		return
	}
	index, err := cons.Propose(ch)
	leaderReply(c, index, err)
}

// cmdClusterRaftApplied answers, once this node has followed the log up
// to index or after timeout-ms, the index it has followed: the member
// that made a change asks every other before it answers its client
// (cluster.Member.Everywhere). The wait does not hold the connection's
// event loop.
func (f *Family) cmdClusterRaftApplied(c *command.Client, args [][]byte) {
	if _, ok := f.realCluster(c); !ok {
		return
	}
	index, err1 := strconv.ParseUint(string(args[2]), 10, 64)
	ms, err2 := strconv.ParseUint(string(args[3]), 10, 32)
	if err1 != nil || err2 != nil {
		c.Err("ERR value is not an integer or out of range")
		return
	}
	m := f.cs.member.Load()
	if m.Followed() >= index {
		c.Int(int64(m.Followed()))
		return
	}
	finish, ok := c.Block()
	if !ok {
		c.Int(int64(m.Followed()))
		return
	}
	go func() {
		m.WaitFollowed(index, time.Duration(ms)*time.Millisecond)
		finish([]byte(":" + strconv.FormatUint(m.Followed(), 10) + "\r\n"))
	}()
}

// leaderReply answers a request this node ran as the leader: the log
// index of the change, which the asking node waits to apply.
func leaderReply(c *command.Client, index uint64, err error) {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		c.Err("TRYAGAIN not the cluster leader")
	case err != nil:
		clusterError(c, err)
	default:
		c.Int(int64(index))
	}
}

func (f *Family) cmdClusterRaftJoin(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	var n cluster.Node
	var slots []cluster.Range
	if json.Unmarshal(args[2], &n) != nil || json.Unmarshal(args[3], &slots) != nil {
		c.Errf("bad join request")
		return
	}
	err := f.onLeader(func() (uint64, error) { return cons.Join(n, slots) }, true,
		"CLUSTER", "RAFT-JOIN", string(args[2]), string(args[3]))
	clusterReply(c, err)
}

// cmdClusterMeet joins this node and the node at ip:port into one
// cluster (cluster.Member.Meet). Unlike Redis's, it answers once the join
// is made.
func (f *Family) cmdClusterMeet(c *command.Client, args [][]byte) {
	if _, ok := f.realCluster(c); !ok {
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
	clusterReply(c, f.cs.member.Load().Meet(ip, int(port)))
}

// cmdClusterRaftMeet is MEET asked of a node by a cluster it should join:
// it does only when alone.
func (f *Family) cmdClusterRaftMeet(c *command.Client, args [][]byte) {
	if _, ok := f.realCluster(c); !ok {
		return
	}
	clusterReply(c, f.cs.member.Load().AcceptMeet(string(args[2]), string(args[3])))
}
