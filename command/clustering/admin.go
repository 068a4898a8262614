package clustering

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/command"
)

// The CLUSTER subcommands that change the cluster, as redis-cli --cluster
// sends them. Each becomes a change proposed to the consensus leader
// (member.go hands it over when this node does not lead).

func (f *Family) registerCommands(t *command.Table) {
	sub := func(name string, arity int, syntax, summary string, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: "cluster|" + name, Arity: arity, Flags: command.FlagStale, Group: "cluster", Since: "0.1.0",
			Complexity: "O(1)", Summary: summary, Syntax: syntax, Handler: h}
	}
	admin := func(name string, arity int, syntax, summary string, h func(*command.Client, [][]byte)) *command.Command {
		c := sub(name, arity, syntax, summary, h)
		c.Flags |= command.FlagAdmin | command.FlagNoMulti
		c.Complexity = "O(N) where N is the number of slots or nodes named"
		return c
	}
	adminSub := func(c *command.Command) *command.Command { // Redis's CLUSTER REPLICAS is administration
		c.Flags |= command.FlagAdmin
		return c
	}
	keysIn := func(c *command.Command) *command.Command {
		c.Complexity = "O(N) where N is the number of keys"
		return c
	}
	mode := func(name, summary string, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: 1, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Group: "cluster", Since: "0.1.0",
			ACLCats: []string{"connection"}, Complexity: "O(1)", Summary: summary, Handler: h}
	}
	t.Register(
		&command.Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "0.1.0", Complexity: "Depends on subcommand.",
			Summary: "A container for Redis Cluster commands (cluster-enabled yes or emulated).",
			Subs: []*command.Command{
				sub("info", 2, "", "Returns the cluster's state.", f.cmdClusterInfo),
				sub("myid", 2, "", "Returns this node's id.", f.cmdClusterMyID),
				sub("myshardid", 2, "", "Returns this node's shard id.", f.cmdClusterMyShardID),
				sub("nodes", 2, "", "Returns the cluster's nodes in nodes.conf's format.", f.cmdClusterNodes),
				adminSub(sub("replicas", 3, "node-id", "Lists a primary's replicas in CLUSTER NODES' format.", f.cmdClusterReplicas)),
				adminSub(sub("slaves", 3, "node-id", "CLUSTER REPLICAS' old name.", f.cmdClusterReplicas)),
				sub("slots", 2, "", "Returns the slot ranges and their nodes.", f.cmdClusterSlots),
				sub("shards", 2, "", "Returns the shards, their slots and nodes.", f.cmdClusterShards),
				sub("keyslot", 3, "key", "Returns the hash slot of a key.", f.cmdClusterKeySlot),
				keysIn(sub("countkeysinslot", 3, "slot", "Counts the keys stored in a hash slot.", f.cmdClusterCountKeys)),
				keysIn(sub("getkeysinslot", 4, "slot count", "Returns up to count keys stored in a hash slot.", f.cmdClusterGetKeys)),
				admin("meet", -4, "ip port [cluster-bus-port]", "Joins this node and another into one cluster.", f.cmdClusterMeet),
				admin("addslots", -3, "slot [slot ...]", "Assigns unassigned slots to this node.", f.cmdClusterAddSlots),
				admin("addslotsrange", -4, "start-slot end-slot [start-slot end-slot ...]", "Assigns ranges of unassigned slots to this node.", f.cmdClusterAddSlots),
				admin("delslots", -3, "slot [slot ...]", "Makes slots unassigned.", f.cmdClusterDelSlots),
				admin("delslotsrange", -4, "start-slot end-slot [start-slot end-slot ...]", "Makes ranges of slots unassigned.", f.cmdClusterDelSlots),
				admin("setslot", -4, "slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE", "Opens, closes or moves a slot.", f.cmdClusterSetSlot),
				admin("set-config-epoch", 3, "config-epoch", "Sets the config epoch of a node that knows no other.", f.cmdClusterSetEpoch),
				admin("bumpepoch", 2, "", "Gives this node a new, highest config epoch.", f.cmdClusterBumpEpoch),
				admin("replicate", 3, "node-id", "Makes this node a replica of a primary.", f.cmdClusterReplicate),
				admin("failover", -2, "[FORCE | TAKEOVER]", "Makes this replica its primary's replacement.", f.cmdClusterFailover),
				admin("forget", 3, "node-id", "Removes a node from the cluster.", f.cmdClusterForget),
				admin("reset", -2, "[HARD | SOFT]", "Makes this node leave its cluster.", f.cmdClusterReset),
				admin("saveconfig", 2, "", "Returns OK: the topology is saved with every change.", func(c *command.Client, _ [][]byte) {
					if _, ok := f.realCluster(c); ok {
						c.OK()
					}
				}),
				admin("count-failure-reports", 3, "node-id", "Returns 0: failures are decided by the consensus leader, not reported.", f.cmdClusterFailureReports),
				admin("raft-propose", 3, "change", "Internal: a change handed to the consensus leader.", f.cmdClusterRaftPropose),
				admin("raft-applied", 4, "index timeout-ms", "Internal: waits until this member shows the log up to index; returns how far it does.", f.cmdClusterRaftApplied),
				admin("raft-join", 4, "node slots", "Internal: a node asks the consensus leader to add it.", f.cmdClusterRaftJoin),
				admin("raft-meet", 4, "ip port", "Internal: join the cluster of the node at ip:port if alone.", f.cmdClusterRaftMeet),
				{Name: "cluster|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "cluster", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CLUSTER subcommands.", Handler: command.HelpFor("cluster")},
			}},
		mode("readonly", "Lets this connection read from a replica of the slot's primary.", f.cmdClusterReadOnly),
		mode("readwrite", "Ends READONLY.", f.cmdClusterReadWrite),
		mode("asking", "Lets the next command reach a slot this node is importing.", f.cmdClusterAsking),
	)
}

func (f *Family) cmdClusterReadOnly(c *command.Client, _ [][]byte) {
	if _, ok := f.view(c); ok {
		f.client(c).readonly = true
		c.OK()
	}
}

func (f *Family) cmdClusterReadWrite(c *command.Client, _ [][]byte) {
	if _, ok := f.view(c); ok {
		f.client(c).readonly = false
		c.OK()
	}
}

func (f *Family) cmdClusterAsking(c *command.Client, _ [][]byte) {
	if _, ok := f.view(c); ok {
		f.client(c).asking = true
		c.OK()
	}
}

// realCluster is the consensus of cluster-enabled yes; false (after
// answering) in any other mode.
func (f *Family) realCluster(c *command.Client) (*cluster.Consensus, bool) {
	cs := f.cs
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

// clusterReply answers OK, or err as clusterError does.
func clusterReply(c *command.Client, err error) {
	if err != nil {
		clusterError(c, err)
		return
	}
	c.OK()
}

// clusterError answers err as Redis would: a topology refusal in its own
// words, anything else as ERR.
func clusterError(c *command.Client, err error) {
	var te cluster.Error
	var pe cluster.PeerError
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
// once every reachable member shows it (cluster.Member.Propose): the
// client's next command, on any member, sees the change. The change
// survives a change of leader: it is retried, and made once.
func (f *Family) propose(c *command.Client, ch cluster.Change) {
	clusterReply(c, f.cs.member.Load().Propose(ch, true))
}

// slotOrReply parses a slot of the subcommands that change slots, which
// Redis answers with one error whether the slot is not a number or out of
// range.
func slotOrReply(c *command.Client, b []byte) (int, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 || n >= cluster.Slots {
		c.Errf("Invalid or out of range slot")
		return 0, false
	}
	return int(n), true
}

// slotRanges parses CLUSTER ADDSLOTS' slots or ADDSLOTSRANGE's pairs.
func slotRanges(c *command.Client, args [][]byte, pairs bool) ([]cluster.Range, bool) {
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

func (f *Family) cmdClusterAddSlots(c *command.Client, args [][]byte) {
	_, ok := f.realCluster(c)
	if !ok {
		return
	}
	rs, ok := slotRanges(c, args[2:], command.EqualFold(args[1], "addslotsrange"))
	if ok {
		f.propose(c, cluster.Change{Op: cluster.OpAddSlots, ID: f.cs.id, Slots: rs})
	}
}

func (f *Family) cmdClusterDelSlots(c *command.Client, args [][]byte) {
	_, ok := f.realCluster(c)
	if !ok {
		return
	}
	rs, ok := slotRanges(c, args[2:], command.EqualFold(args[1], "delslotsrange"))
	if ok {
		f.propose(c, cluster.Change{Op: cluster.OpDelSlots, Slots: rs})
	}
}

func (f *Family) cmdClusterSetSlot(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	slot, ok := slotOrReply(c, args[2])
	if !ok {
		return
	}
	cs, t := f.cs, cons.Topology()
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
		f.propose(c, cluster.Change{Op: cluster.OpSetSlot, ID: id, Slots: []cluster.Range{{First: slot, Last: slot}}})
		if c.Failed() {
			cs.claim(slot, false)
		}
	}
}

func (f *Family) cmdClusterSetEpoch(c *command.Client, args [][]byte) {
	_, ok := f.realCluster(c)
	if !ok {
		return
	}
	e, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || e < 0 {
		c.Errf("Invalid config epoch specified: %s", args[2])
		return
	}
	f.propose(c, cluster.Change{Op: cluster.OpSetEpoch, ID: f.cs.id, Epoch: uint64(e)})
}

func (f *Family) cmdClusterBumpEpoch(c *command.Client, _ [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	id := f.cs.id
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
	if err := f.cs.member.Load().Propose(cluster.Change{Op: cluster.OpBumpEpoch, ID: id}, true); err != nil {
		clusterError(c, err)
		return
	}
	n, _ := cons.Topology().Node(id)
	c.Simple(fmt.Sprintf("BUMPED %d", n.Epoch))
}

// cmdClusterReplicate makes this node a replica of a primary: it must
// hold no slots and, as in Redis, no keys.
func (f *Family) cmdClusterReplicate(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	t, id := cons.Topology(), string(args[2])
	target, known := t.Node(id)
	if !known {
		c.Errf("Unknown node %s", id)
		return
	}
	if id == f.cs.id {
		c.Errf("Can't replicate myself")
		return
	}
	if target.Primary != "" {
		c.Errf("I can only replicate a master, not a replica.")
		return
	}
	if f.cs.primaryOf(t) == "" && (len(t.SlotsOf(f.cs.id)) > 0 || c.Engine().Len() > 0) {
		c.Errf("To set a master the node must be empty and without assigned slots.")
		return
	}
	f.propose(c, cluster.Change{Op: cluster.OpReplicate, ID: f.cs.id, Target: id})
}

// cmdClusterFailover promotes this replica in its primary's place. The
// change is ordered by consensus, so FORCE and TAKEOVER do the same; a
// failover without them refuses while the link to the primary is down, as
// Redis's manual failover needs the primary.
func (f *Family) cmdClusterFailover(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	force := false
	if len(args) > 3 {
		c.Err("ERR syntax error")
		return
	}
	if len(args) == 3 {
		if !command.EqualFold(args[2], "force") && !command.EqualFold(args[2], "takeover") {
			c.Err("ERR syntax error")
			return
		}
		force = true
	}
	t := cons.Topology()
	if f.cs.primaryOf(t) == "" {
		c.Errf("You should send CLUSTER FAILOVER to a replica")
		return
	}
	if !force && !f.env.Replication.Status().Link.Up {
		c.Errf("Master is down or failed, please use CLUSTER FAILOVER FORCE")
		return
	}
	f.propose(c, cluster.Change{Op: cluster.OpFailover, ID: f.cs.id})
}

// cmdClusterForget removes a node from the whole cluster: unlike Redis's
// per-node FORGET, the removal is one change every member applies.
func (f *Family) cmdClusterForget(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	id, t := string(args[2]), cons.Topology()
	switch {
	case id == f.cs.id:
		c.Errf("I tried hard but I can't forget myself...")
		return
	case id == f.cs.primaryOf(t):
		c.Errf("Can't forget my master!")
		return
	}
	// A node removed by an earlier FORGET (redis-cli sends one to every
	// member) goes to the leader too: a lead lost between the topology's
	// change and raft's may have left it a voter, which the leader removes.
	if _, known := t.Node(id); !known && !t.Forgotten(id) {
		c.Errf("Unknown node %s", id)
		return
	}
	err := f.onLeader(func() (uint64, error) { return cons.Forget(id) }, true, "CLUSTER", "FORGET", id)
	clusterReply(c, err)
}

// cmdClusterReset makes this node leave its cluster and be a primary
// alone with no slots. HARD keeps the node id (the id is in --dir).
func (f *Family) cmdClusterReset(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	if len(args) > 3 || (len(args) == 3 && !command.EqualFold(args[2], "hard") && !command.EqualFold(args[2], "soft")) {
		c.Err("ERR syntax error")
		return
	}
	t := cons.Topology()
	if f.cs.primaryOf(t) == "" && c.Engine().Len() > 0 {
		c.Errf("CLUSTER RESET can't be called with master nodes containing keys")
		return
	}
	id := f.cs.id
	if !cons.Alone() {
		for _, n := range t.Nodes() {
			if n.ID == id {
				continue
			}
			r, err := f.cs.member.Load().Call(n.Addr(), "CLUSTER", "FORGET", id)
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

func (f *Family) cmdClusterFailureReports(c *command.Client, args [][]byte) {
	cons, ok := f.realCluster(c)
	if !ok {
		return
	}
	if _, known := cons.Topology().Node(string(args[2])); !known {
		c.Errf("Unknown node %s", args[2])
		return
	}
	c.Int(0)
}
