package clustering

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// What cluster clients and redis-cli read: the topology in Redis 7.0's
// formats, from the topology this node last applied (or, emulated, a
// topology of one node at the address the client reached).

// clusterView is the topology a CLUSTER subcommand answers from.
type clusterView struct {
	t       *cluster.Topology
	me      string
	serving bool // cluster_state:ok
}

// view returns the topology to answer from; false (after answering) when
// cluster mode is off.
func (f *Family) view(c *command.Client) (clusterView, bool) {
	cs := f.cs
	if !cs.on {
		c.Err(errClusterDisabled)
		return clusterView{}, false
	}
	if cs.emulated {
		ip, port := f.endpoint(c)
		self := cluster.Node{ID: cs.id, Shard: cs.shardID, IP: ip, Port: port, BusPort: port + 10000}
		t, _ := cluster.Empty().Apply(cluster.Change{Op: cluster.OpAddNode, Node: &self, Slots: []cluster.Range{{First: 0, Last: cluster.Slots - 1}}})
		return clusterView{t: t, me: cs.id, serving: true}, true
	}
	return f.memberView(), true
}

// memberView is the view of a real cluster's member (not emulated).
func (f *Family) memberView() clusterView {
	cs := f.cs
	cons := cs.cons.Load()
	if cons == nil {
		return clusterView{t: cluster.Empty(), me: cs.id}
	}
	t := cons.Topology()
	if _, ok := t.Node(cs.id); !ok { // between wiping its log and receiving the cluster's
		self := cons.Self()
		t, _ = t.Apply(cluster.Change{Op: cluster.OpAddNode, Node: &self})
	}
	return clusterView{t: t, me: cs.id, serving: clusterServing(cons, t)}
}

// endpoint is the address emulated mode sends cluster clients to: the one
// this client reached the node at, so that a node bound to every
// interface names one its client can use.
func (f *Family) endpoint(c *command.Client) (ip string, port int) {
	port = f.env.Port()
	if h, _, err := net.SplitHostPort(c.LAddr); err == nil && h != "" {
		return h, port
	}
	return announceIP(f.env.Config().Bind, ""), port
}

// announceIP is the address a node gives others for itself: the
// configured one, else the first bind address unless it is a wildcard.
func announceIP(bind, announce string) string {
	if announce != "" {
		return announce
	}
	if f := strings.Fields(bind); len(f) > 0 && f[0] != "0.0.0.0" && f[0] != "::" && f[0] != "*" {
		return f[0]
	}
	return "127.0.0.1"
}

func (f *Family) cmdClusterInfo(c *command.Client, _ [][]byte) {
	v, ok := f.view(c)
	if !ok {
		return
	}
	sum := summarize(v)
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v any
	}{
		{"cluster_state", sum.State}, {"cluster_slots_assigned", sum.SlotsAssigned}, {"cluster_slots_ok", sum.SlotsOK},
		{"cluster_slots_pfail", 0}, {"cluster_slots_fail", sum.SlotsAssigned - sum.SlotsOK}, {"cluster_known_nodes", sum.KnownNodes},
		{"cluster_size", sum.Size}, {"cluster_current_epoch", sum.CurrentEpoch}, {"cluster_my_epoch", sum.MyEpoch},
		{"cluster_stats_messages_sent", 0}, {"cluster_stats_messages_received", 0},
		{"total_cluster_links_buffer_limit_exceeded", 0},
	} {
		fmt.Fprintf(&b, "%s:%v\r\n", kv.k, kv.v)
	}
	c.Verbatim(b.String())
}

// Summary is the node's cluster state as CLUSTER INFO reports it, for
// readers without a connection (the dashboard). Outside cluster mode only
// Enabled (false) is set.
type Summary struct {
	Enabled       bool   `json:"enabled"`
	Emulated      bool   `json:"emulated"` // cluster-enabled emulated: one node owning every slot
	State         string `json:"state"`    // cluster_state: ok or fail
	SlotsAssigned int    `json:"slots_assigned"`
	SlotsOK       int    `json:"slots_ok"`
	KnownNodes    int    `json:"known_nodes"`
	Size          int    `json:"size"` // primaries serving at least one slot
	CurrentEpoch  uint64 `json:"current_epoch"`
	MyEpoch       uint64 `json:"my_epoch"`
	MyID          string `json:"my_id"`
}

// Summary reports the node's cluster state, as CLUSTER INFO would.
func (f *Family) Summary() Summary {
	cs := f.cs
	if !cs.on {
		return Summary{}
	}
	if cs.emulated {
		self := cluster.Node{ID: cs.id, Shard: cs.shardID, IP: "127.0.0.1", Port: f.env.Port(), BusPort: f.env.Port() + 10000}
		t, _ := cluster.Empty().Apply(cluster.Change{Op: cluster.OpAddNode, Node: &self, Slots: []cluster.Range{{First: 0, Last: cluster.Slots - 1}}})
		sum := summarize(clusterView{t: t, me: cs.id, serving: true})
		sum.Emulated = true
		return sum
	}
	return summarize(f.memberView())
}

// summarize is what CLUSTER INFO says of v.
func summarize(v clusterView) Summary {
	sum := Summary{Enabled: true, State: "fail", KnownNodes: len(v.t.Nodes()), CurrentEpoch: v.t.CurrentEpoch(), MyID: v.me}
	sum.SlotsAssigned, sum.SlotsOK = v.t.Assigned()
	for _, n := range v.t.Nodes() {
		if n.Primary == "" && len(v.t.SlotsOf(n.ID)) > 0 {
			sum.Size++
		}
	}
	if v.serving {
		sum.State = "ok"
	}
	if n, ok := v.t.Node(v.me); ok {
		sum.MyEpoch = n.Epoch
	}
	return sum
}

func (f *Family) cmdClusterMyID(c *command.Client, _ [][]byte) {
	if _, ok := f.view(c); ok {
		c.BulkString(f.cs.id)
	}
}

func (f *Family) cmdClusterMyShardID(c *command.Client, _ [][]byte) {
	if v, ok := f.view(c); ok {
		n, _ := v.t.Node(v.me)
		c.BulkString(n.Shard)
	}
}

// nodeLine is one line of CLUSTER NODES (nodes.conf's format): id,
// ip:port@bus-port, flags, primary or "-", ping sent, pong received,
// config epoch, link state, slots; on this node's own line also the slots
// it is moving out ([slot->-id]) and in ([slot-<-id]).
func (f *Family) nodeLine(c *command.Client, b *strings.Builder, v clusterView, n *cluster.Node) {
	flags := "master"
	if n.Primary != "" {
		flags = "slave"
	}
	if n.ID == v.me {
		flags = "myself," + flags
	}
	if n.Failed {
		flags += ",fail"
	}
	primary := n.Primary
	if primary == "" {
		primary = "-"
	}
	pong, link := f.env.Clock.Now()/int64(time.Millisecond), "connected"
	if n.ID == v.me || f.cs.emulated {
		pong = 0
	}
	if n.Failed {
		link = "disconnected"
	}
	fmt.Fprintf(b, "%s %s:%d@%d %s %s 0 %d %d %s", n.ID, n.IP, n.Port, n.BusPort, flags, primary, pong, n.Epoch, link)
	for _, r := range v.t.SlotsOf(n.ID) {
		if r.First == r.Last {
			fmt.Fprintf(b, " %d", r.First)
		} else {
			fmt.Fprintf(b, " %d-%d", r.First, r.Last)
		}
	}
	if n.ID == v.me {
		cs := f.cs
		cs.mu.Lock()
		for _, s := range sortedSlots(cs.migrating) {
			fmt.Fprintf(b, " [%d->-%s]", s, cs.migrating[s])
		}
		for _, s := range sortedSlots(cs.importing) {
			fmt.Fprintf(b, " [%d-<-%s]", s, cs.importing[s])
		}
		cs.mu.Unlock()
	}
	b.WriteByte('\n')
}

func sortedSlots(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func (f *Family) cmdClusterNodes(c *command.Client, _ [][]byte) {
	v, ok := f.view(c)
	if !ok {
		return
	}
	var b strings.Builder
	for i := range v.t.Nodes() {
		f.nodeLine(c, &b, v, &v.t.Nodes()[i])
	}
	c.Verbatim(b.String())
}

// cmdClusterReplicas is CLUSTER REPLICAS (and SLAVES): the CLUSTER NODES
// lines of a primary's replicas.
func (f *Family) cmdClusterReplicas(c *command.Client, args [][]byte) {
	v, ok := f.view(c)
	if !ok {
		return
	}
	n, known := v.t.Node(string(args[2]))
	if !known {
		c.Errf("Unknown node %s", args[2])
		return
	}
	if n.Primary != "" {
		c.Errf("The specified node is not a master")
		return
	}
	rs := v.t.Replicas(n.ID)
	c.Array(len(rs))
	for _, r := range rs {
		var b strings.Builder
		f.nodeLine(c, &b, v, r)
		c.BulkString(b.String())
	}
}

// nodeEntry is a node as CLUSTER SLOTS lists it: ip, port, id, and the
// map of extra endpoints (none: the ip is the endpoint).
func nodeEntry(c *command.Client, n *cluster.Node) {
	c.Array(4)
	c.BulkString(n.IP)
	c.Int(int64(n.Port))
	c.BulkString(n.ID)
	c.Map(0)
}

func (f *Family) cmdClusterSlots(c *command.Client, _ [][]byte) {
	v, ok := f.view(c)
	if !ok {
		return
	}
	type run struct {
		r     cluster.Range
		owner *cluster.Node
	}
	var runs []run
	for _, n := range v.t.Nodes() {
		for _, r := range v.t.SlotsOf(n.ID) {
			runs = append(runs, run{r, v.t.Owner(r.First)})
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].r.First < runs[j].r.First })
	c.Array(len(runs))
	for _, rn := range runs {
		// As Redis's: a failed replica is left out, since a client that
		// reads from replicas should not be sent to it.
		var rs []*cluster.Node
		for _, r := range v.t.Replicas(rn.owner.ID) {
			if !r.Failed {
				rs = append(rs, r)
			}
		}
		c.Array(3 + len(rs))
		c.Int(int64(rn.r.First))
		c.Int(int64(rn.r.Last))
		nodeEntry(c, rn.owner)
		for _, r := range rs {
			nodeEntry(c, r)
		}
	}
}

func (f *Family) cmdClusterShards(c *command.Client, _ [][]byte) {
	v, ok := f.view(c)
	if !ok {
		return
	}
	var primaries []*cluster.Node
	for i, n := range v.t.Nodes() {
		if n.Primary == "" {
			primaries = append(primaries, &v.t.Nodes()[i])
		}
	}
	c.Array(len(primaries))
	for _, p := range primaries {
		c.Map(2)
		c.BulkString("slots")
		rs := v.t.SlotsOf(p.ID)
		c.Array(2 * len(rs))
		for _, r := range rs {
			c.Int(int64(r.First))
			c.Int(int64(r.Last))
		}
		c.BulkString("nodes")
		members := append([]*cluster.Node{p}, v.t.Replicas(p.ID)...)
		c.Array(len(members))
		for _, n := range members {
			f.shardNode(c, v, n)
		}
	}
}

// shardNode is one node of CLUSTER SHARDS.
func (f *Family) shardNode(c *command.Client, v clusterView, n *cluster.Node) {
	role, health, offset := "master", "online", int64(0)
	if n.Primary != "" {
		role = "replica"
	}
	if n.Failed {
		health = "fail"
	}
	if n.ID == v.me && !f.cs.emulated {
		offset = f.env.Replication.Stream().Offset()
	}
	c.Map(7)
	c.BulkString("id")
	c.BulkString(n.ID)
	c.BulkString("port")
	c.Int(int64(n.Port))
	c.BulkString("ip")
	c.BulkString(n.IP)
	c.BulkString("endpoint")
	c.BulkString(n.IP)
	c.BulkString("role")
	c.BulkString(role)
	c.BulkString("replication-offset")
	c.Int(offset)
	c.BulkString("health")
	c.BulkString(health)
}

func (f *Family) cmdClusterKeySlot(c *command.Client, args [][]byte) {
	if _, ok := f.view(c); ok {
		c.Int(int64(cluster.Slot(args[2])))
	}
}

// slotArg parses a slot number as Redis does.
func slotArg(c *command.Client, b []byte, errRange string) (int, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		c.Err("ERR value is not an integer or out of range")
		return 0, false
	}
	if n < 0 || n >= cluster.Slots {
		c.Err(errRange)
		return 0, false
	}
	return int(n), true
}

// keysInSlot lists up to max keys stored in slot (max < 0: all), sorted.
// A policy's state is in its client key's slot (storedSlot). It walks the
// keyspace: there is no per-slot index.
func keysInSlot(c *command.Client, slot, max int) []string {
	eng, now := c.Engine(), c.Now()
	var keys []string
	for i := 0; i < eng.Shards(); i++ {
		eng.RangeShard(i, now, func(k string, _ *engine.Entry) bool {
			if storedSlot([]byte(k)) == slot {
				keys = append(keys, k)
			}
			return true
		})
	}
	sort.Strings(keys)
	if max >= 0 && len(keys) > max {
		keys = keys[:max]
	}
	return keys
}

func (f *Family) cmdClusterCountKeys(c *command.Client, args [][]byte) {
	if _, ok := f.view(c); !ok {
		return
	}
	if slot, ok := slotArg(c, args[2], "ERR Invalid slot"); ok {
		c.Int(int64(len(keysInSlot(c, slot, -1))))
	}
}

func (f *Family) cmdClusterGetKeys(c *command.Client, args [][]byte) {
	if _, ok := f.view(c); !ok {
		return
	}
	const errBad = "ERR Invalid slot or number of keys"
	slot, err1 := strconv.ParseInt(string(args[2]), 10, 64)
	n, err2 := strconv.ParseInt(string(args[3]), 10, 64)
	if err1 != nil || err2 != nil {
		c.Err("ERR value is not an integer or out of range")
		return
	}
	if slot < 0 || slot >= cluster.Slots || n < 0 {
		c.Err(errBad)
		return
	}
	keys := keysInSlot(c, int(slot), int(min(n, 1<<31-1)))
	c.Array(len(keys))
	for _, k := range keys {
		c.BulkString(k)
	}
}
