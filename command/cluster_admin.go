package command

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/replication"
	"github.com/limitdb/limitdb/resp"
)

// The CLUSTER subcommands that change the cluster, as redis-cli --cluster
// sends them. Each becomes a change proposed to the consensus leader;
// when this node does not lead, it hands the change to the leader over
// the leader's client port (CLUSTER RAFT-PROPOSE, authenticated as a
// replica authenticates to its primary, with masteruser/masterauth).

func registerCluster(t *Table) {
	sub := func(name string, arity int, syntax, summary string, h func(*Client, [][]byte)) *Command {
		return &Command{Name: "cluster|" + name, Arity: arity, Flags: FlagStale, Group: "cluster", Since: "0.1.0",
			Complexity: "O(1)", Summary: summary, Syntax: syntax, Handler: h}
	}
	admin := func(name string, arity int, syntax, summary string, h func(*Client, [][]byte)) *Command {
		c := sub(name, arity, syntax, summary, h)
		c.Flags |= FlagAdmin | FlagNoMulti
		c.Complexity = "O(N) where N is the number of slots or nodes named"
		return c
	}
	keysIn := func(c *Command) *Command { c.Complexity = "O(N) where N is the number of keys"; return c }
	mode := func(name, summary string, h func(*Client, [][]byte)) *Command {
		return &Command{Name: name, Arity: 1, Flags: FlagFast | FlagLoading | FlagStale, Group: "cluster", Since: "0.1.0",
			Complexity: "O(1)", Summary: summary, Handler: h}
	}
	t.register(
		&Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "0.1.0", Complexity: "Depends on subcommand.",
			Summary: "A container for Redis Cluster commands (cluster-enabled yes or emulated).",
			Subs: []*Command{
				sub("info", 2, "", "Returns the cluster's state.", cmdClusterInfo),
				sub("myid", 2, "", "Returns this node's id.", cmdClusterMyID),
				sub("myshardid", 2, "", "Returns this node's shard id.", cmdClusterMyShardID),
				sub("nodes", 2, "", "Returns the cluster's nodes in nodes.conf's format.", cmdClusterNodes),
				sub("replicas", 3, "node-id", "Lists a primary's replicas in CLUSTER NODES' format.", cmdClusterReplicas),
				sub("slaves", 3, "node-id", "CLUSTER REPLICAS' old name.", cmdClusterReplicas),
				sub("slots", 2, "", "Returns the slot ranges and their nodes.", cmdClusterSlots),
				sub("shards", 2, "", "Returns the shards, their slots and nodes.", cmdClusterShards),
				sub("keyslot", 3, "key", "Returns the hash slot of a key.", cmdClusterKeySlot),
				keysIn(sub("countkeysinslot", 3, "slot", "Counts the keys stored in a hash slot.", cmdClusterCountKeys)),
				keysIn(sub("getkeysinslot", 4, "slot count", "Returns up to count keys stored in a hash slot.", cmdClusterGetKeys)),
				admin("meet", -4, "ip port [cluster-bus-port]", "Joins this node and another into one cluster.", cmdClusterMeet),
				admin("addslots", -3, "slot [slot ...]", "Assigns unassigned slots to this node.", cmdClusterAddSlots),
				admin("addslotsrange", -4, "start-slot end-slot [start-slot end-slot ...]", "Assigns ranges of unassigned slots to this node.", cmdClusterAddSlots),
				admin("delslots", -3, "slot [slot ...]", "Makes slots unassigned.", cmdClusterDelSlots),
				admin("delslotsrange", -4, "start-slot end-slot [start-slot end-slot ...]", "Makes ranges of slots unassigned.", cmdClusterDelSlots),
				admin("setslot", -4, "slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE", "Opens, closes or moves a slot.", cmdClusterSetSlot),
				admin("set-config-epoch", 3, "config-epoch", "Sets the config epoch of a node that knows no other.", cmdClusterSetEpoch),
				admin("bumpepoch", 2, "", "Gives this node a new, highest config epoch.", cmdClusterBumpEpoch),
				admin("replicate", 3, "node-id", "Makes this node a replica of a primary.", cmdClusterReplicate),
				admin("failover", -2, "[FORCE | TAKEOVER]", "Makes this replica its primary's replacement.", cmdClusterFailover),
				admin("forget", 3, "node-id", "Removes a node from the cluster.", cmdClusterForget),
				admin("reset", -2, "[HARD | SOFT]", "Makes this node leave its cluster.", cmdClusterReset),
				admin("saveconfig", 2, "", "Returns OK: the topology is saved with every change.", func(c *Client, _ [][]byte) {
					if _, ok := c.realCluster(); ok {
						c.OK()
					}
				}),
				admin("count-failure-reports", 3, "node-id", "Returns 0: failures are decided by the consensus leader, not reported.", cmdClusterFailureReports),
				admin("raft-propose", 3, "change", "Internal: a change handed to the consensus leader.", cmdClusterRaftPropose),
				admin("raft-join", 4, "node slots", "Internal: a node asks the consensus leader to add it.", cmdClusterRaftJoin),
				admin("raft-meet", 4, "ip port", "Internal: join the cluster of the node at ip:port if alone.", cmdClusterRaftMeet),
				{Name: "cluster|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "cluster", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CLUSTER subcommands.", Handler: helpFor("cluster")},
			}},
		mode("readonly", "Lets this connection read from a replica of the slot's primary.", cmdClusterReadOnly),
		mode("readwrite", "Ends READONLY.", cmdClusterReadWrite),
		mode("asking", "Lets the next command reach a slot this node is importing.", cmdClusterAsking),
	)
	t.registerGate(16, "cluster", clusterGate)
	t.registerInfo("cluster", 85, infoCluster)
}

func cmdClusterReadOnly(c *Client, _ [][]byte) {
	if _, ok := c.view(); ok {
		c.readonly = true
		c.OK()
	}
}

func cmdClusterReadWrite(c *Client, _ [][]byte) {
	if _, ok := c.view(); ok {
		c.readonly = false
		c.OK()
	}
}

func cmdClusterAsking(c *Client, _ [][]byte) {
	if _, ok := c.view(); ok {
		c.asking = true
		c.OK()
	}
}

// realCluster is the consensus of cluster-enabled yes; false (after
// answering) in any other mode.
func (c *Client) realCluster() (*cluster.Consensus, bool) {
	cs := c.srv.cluster
	switch {
	case !cs.on:
		c.Err(errClusterDisabled)
	case cs.emulated:
		c.Errf("This instance is an emulated cluster of one node (cluster-enabled emulated)")
	case cs.cons.Load() == nil:
		c.Errf("The cluster is starting")
	default:
		return cs.cons.Load(), true
	}
	return nil, false
}

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

// clusterError answers err as Redis would: a topology refusal in its own
// words, anything else as ERR.
func clusterError(c *Client, err error) {
	var te cluster.Error
	var pe peerError
	switch {
	case errors.As(err, &te):
		c.Err(string(te))
	case errors.As(err, &pe):
		c.Err(string(pe))
	default:
		c.Errf("%v", err)
	}
}

// propose makes a change through the leader and answers OK or why not,
// once this node has applied it.
func (c *Client) propose(cons *cluster.Consensus, ch cluster.Change) { c.proposeWait(cons, ch, true) }

// proposeWait is propose that, without wait, answers as soon as the
// leader has applied the change.
func (c *Client) proposeWait(cons *cluster.Consensus, ch cluster.Change, wait bool) {
	err := c.srv.onLeader(cons, func() (uint64, error) { return cons.Propose(ch) }, wait,
		"CLUSTER", "RAFT-PROPOSE", string(ch.Encode()))
	if err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
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
	if err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
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
	if err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
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

// slotOrReply parses a slot of the subcommands that change slots, which
// Redis answers with one error whether the slot is not a number or out of
// range.
func slotOrReply(c *Client, b []byte) (int, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 || n >= cluster.Slots {
		c.Errf("Invalid or out of range slot")
		return 0, false
	}
	return int(n), true
}

// slotRanges parses CLUSTER ADDSLOTS' slots or ADDSLOTSRANGE's pairs.
func slotRanges(c *Client, args [][]byte, pairs bool) ([]cluster.Range, bool) {
	if pairs && len(args)%2 != 0 {
		c.Errf("wrong number of arguments for '%s' command", strings.ToLower("cluster|"+string(args[1])))
		return nil, false
	}
	var out []cluster.Range
	for i := 0; i < len(args); i++ {
		first, ok := slotOrReply(c, args[i])
		if !ok {
			return nil, false
		}
		last := first
		if pairs {
			i++
			if last, ok = slotOrReply(c, args[i]); !ok {
				return nil, false
			}
			if first > last {
				c.Errf("start slot number %d is greater than end slot number %d", first, last)
				return nil, false
			}
		}
		out = append(out, cluster.Range{First: first, Last: last})
	}
	return out, true
}

func cmdClusterAddSlots(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	rs, ok := slotRanges(c, args[2:], equalFold(args[1], "addslotsrange"))
	if ok {
		c.propose(cons, cluster.Change{Op: cluster.OpAddSlots, ID: c.srv.cluster.id, Slots: rs})
	}
}

func cmdClusterDelSlots(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	rs, ok := slotRanges(c, args[2:], equalFold(args[1], "delslotsrange"))
	if ok {
		c.propose(cons, cluster.Change{Op: cluster.OpDelSlots, Slots: rs})
	}
}

func cmdClusterSetSlot(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	slot, ok := slotOrReply(c, args[2])
	if !ok {
		return
	}
	cs, t := c.srv.cluster, cons.Topology()
	if me, _ := t.Node(cs.id); me != nil && me.Primary != "" {
		c.Errf("Please use SETSLOT only with masters.")
		return
	}
	how := strings.ToLower(string(args[3]))
	if how == "stable" {
		cs.setOpen(cs.migrating, slot, "")
		cs.setOpen(cs.importing, slot, "")
		c.OK()
		return
	}
	if len(args) != 5 || (how != "importing" && how != "migrating" && how != "node") {
		c.Errf("Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
		return
	}
	id := string(args[4])
	if _, known := t.Node(id); !known {
		if how == "node" {
			c.Errf("Unknown node %s", id)
		} else {
			c.Errf("I don't know about node %s", id)
		}
		return
	}
	owner := t.Owner(slot)
	mine := owner != nil && owner.ID == cs.id
	switch how {
	case "migrating":
		if !mine {
			c.Errf("I'm not the owner of hash slot %d", slot)
			return
		}
		cs.setOpen(cs.migrating, slot, id)
		c.OK()
	case "importing":
		if mine {
			c.Errf("I'm already the owner of hash slot %d", slot)
			return
		}
		cs.setOpen(cs.importing, slot, id)
		c.OK()
	case "node":
		if _, open := cs.migratingTo(slot); open && id != cs.id && len(keysInSlot(c, slot, 1)) > 0 {
			c.Errf("Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot)
			return
		}
		if owner != nil && owner.ID == id { // already applied here: nothing to propose
			cs.setOpen(cs.migrating, slot, "")
			cs.setOpen(cs.importing, slot, "")
			c.OK()
			return
		}
		// The slot stays open here until this node applies the change
		// (followTopology closes it): a source that closed it sooner would
		// serve the slot again in the meantime. A target claims it at once.
		if id == cs.id {
			cs.claim(slot, true)
		}
		c.proposeWait(cons, cluster.Change{Op: cluster.OpSetSlot, ID: id, Slots: []cluster.Range{{First: slot, Last: slot}}}, false)
		if c.failed {
			cs.claim(slot, false)
		}
	}
}

func cmdClusterSetEpoch(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	e, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || e < 0 {
		c.Errf("Invalid config epoch specified: %s", args[2])
		return
	}
	c.propose(cons, cluster.Change{Op: cluster.OpSetEpoch, ID: c.srv.cluster.id, Epoch: uint64(e)})
}

func cmdClusterBumpEpoch(c *Client, _ [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	id := c.srv.cluster.id
	// As Redis: a node whose epoch is already the highest keeps it.
	t := cons.Topology()
	if me, ok := t.Node(id); ok && me.Epoch != 0 {
		highest := t.CurrentEpoch()
		for _, n := range t.Nodes() {
			highest = max(highest, n.Epoch)
		}
		if me.Epoch == highest {
			c.Simple(fmt.Sprintf("STILL %d", me.Epoch))
			return
		}
	}
	ch := cluster.Change{Op: cluster.OpBumpEpoch, ID: id}
	if err := c.srv.onLeader(cons, func() (uint64, error) { return cons.Propose(ch) }, true, "CLUSTER", "RAFT-PROPOSE", string(ch.Encode())); err != nil {
		clusterError(c, err)
		return
	}
	n, _ := cons.Topology().Node(id)
	c.Simple(fmt.Sprintf("BUMPED %d", n.Epoch))
}

// cmdClusterReplicate makes this node a replica of a primary: it must
// hold no slots and, as in Redis, no keys.
func cmdClusterReplicate(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	t, id := cons.Topology(), string(args[2])
	target, known := t.Node(id)
	if !known {
		c.Errf("Unknown node %s", id)
		return
	}
	if id == c.srv.cluster.id {
		c.Errf("Can't replicate myself")
		return
	}
	if target.Primary != "" {
		c.Errf("I can only replicate a master, not a replica.")
		return
	}
	if c.srv.cluster.primaryOf(t) == "" && (len(t.SlotsOf(c.srv.cluster.id)) > 0 || c.srv.eng.Len() > 0) {
		c.Errf("To set a master the node must be empty and without assigned slots.")
		return
	}
	c.propose(cons, cluster.Change{Op: cluster.OpReplicate, ID: c.srv.cluster.id, Target: id})
}

// cmdClusterFailover promotes this replica in its primary's place. The
// change is ordered by consensus, so FORCE and TAKEOVER do the same; a
// failover without them refuses while the link to the primary is down, as
// Redis's manual failover needs the primary.
func cmdClusterFailover(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	force := false
	if len(args) > 3 {
		c.Err("ERR syntax error")
		return
	}
	if len(args) == 3 {
		if !equalFold(args[2], "force") && !equalFold(args[2], "takeover") {
			c.Err("ERR syntax error")
			return
		}
		force = true
	}
	t := cons.Topology()
	if c.srv.cluster.primaryOf(t) == "" {
		c.Errf("You should send CLUSTER FAILOVER to a replica")
		return
	}
	if !force && !c.srv.repl.Status().Link.Up {
		c.Errf("Master is down or failed, please use CLUSTER FAILOVER FORCE")
		return
	}
	c.propose(cons, cluster.Change{Op: cluster.OpFailover, ID: c.srv.cluster.id})
}

// cmdClusterForget removes a node from the whole cluster: unlike Redis's
// per-node FORGET, the removal is one change every member applies.
func cmdClusterForget(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	id, t := string(args[2]), cons.Topology()
	switch {
	case id == c.srv.cluster.id:
		c.Errf("I tried hard but I can't forget myself...")
		return
	case id == c.srv.cluster.primaryOf(t):
		c.Errf("Can't forget my master!")
		return
	}
	if _, known := t.Node(id); !known {
		if t.Forgotten(id) { // removed for every member by an earlier FORGET
			c.OK()
			return
		}
		c.Errf("Unknown node %s", id)
		return
	}
	err := c.srv.onLeader(cons, func() (uint64, error) { return cons.Forget(id) }, true, "CLUSTER", "FORGET", id)
	if err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
}

// cmdClusterReset makes this node leave its cluster and be a primary
// alone with no slots. HARD keeps the node id (the id is in --dir).
func cmdClusterReset(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	if len(args) > 3 || (len(args) == 3 && !equalFold(args[2], "hard") && !equalFold(args[2], "soft")) {
		c.Err("ERR syntax error")
		return
	}
	t := cons.Topology()
	if c.srv.cluster.primaryOf(t) == "" && c.srv.eng.Len() > 0 {
		c.Errf("CLUSTER RESET can't be called with master nodes containing keys")
		return
	}
	id := c.srv.cluster.id
	if !cons.Alone() {
		for _, n := range t.Nodes() {
			if n.ID == id {
				continue
			}
			r, err := c.srv.peerCall(n.Addr(), "CLUSTER", "FORGET", id)
			if err == nil && !r.IsError() {
				break
			}
		}
		if err := cons.Reset(); err != nil {
			clusterError(c, err)
			return
		}
		if err := cons.Rebootstrap(nil); err != nil {
			clusterError(c, err)
			return
		}
	} else if rs := t.SlotsOf(id); len(rs) > 0 {
		if _, err := cons.Propose(cluster.Change{Op: cluster.OpDelSlots, Slots: rs}); err != nil {
			clusterError(c, err)
			return
		}
	}
	c.OK()
}

func cmdClusterFailureReports(c *Client, args [][]byte) {
	cons, ok := c.realCluster()
	if !ok {
		return
	}
	if _, known := cons.Topology().Node(string(args[2])); !known {
		c.Errf("Unknown node %s", args[2])
		return
	}
	c.Int(0)
}
