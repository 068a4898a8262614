package command

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/replication"
)

// Emulated cluster mode (cluster-enabled yes): the node answers the Redis
// Cluster client protocol as a cluster of one primary owning every slot,
// as Dragonfly's emulated mode does. Cluster clients discover it with
// CLUSTER SLOTS, NODES or SHARDS, route by themselves, and are refused
// commands whose keys span slots, so that an application written against
// it keeps working when the slots are spread over several nodes.

const (
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	errClusterDisabled = "ERR This instance has cluster support disabled"
	// nodeIDFile keeps the node's identity in --dir across restarts, as
	// Redis keeps it in nodes.conf.
	nodeIDFile = "cluster-node-id"
)

// clusterState is the node's cluster identity; on is false unless
// cluster-enabled is yes, which cannot change while the server runs.
type clusterState struct {
	on      bool
	id      string // 40 hex digits, CLUSTER MYID
	shardID string // 40 hex digits, CLUSTER MYSHARDID
}

// newClusterState reads the node's identity from --dir, or makes one and
// writes it there. Without a usable --dir the identity lasts one run.
func newClusterState(cfg config.Config, logger *log.Logger) clusterState {
	if !cfg.ClusterEnabled {
		return clusterState{}
	}
	st := clusterState{on: true}
	if cfg.Dir == "" {
		st.id, st.shardID = replication.NewID(), replication.NewID()
		return st
	}
	path := filepath.Join(cfg.Dir, nodeIDFile)
	if b, err := os.ReadFile(path); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 && isNodeID(f[0]) && isNodeID(f[1]) {
			st.id, st.shardID = f[0], f[1]
			return st
		}
		logger.Printf("cluster: %s is not two node ids; making new ones", path)
	}
	st.id, st.shardID = replication.NewID(), replication.NewID()
	if err := writeFileAtomic(path, []byte(st.id+" "+st.shardID+"\n")); err != nil {
		logger.Printf("cluster: the node id lasts this run only: %v", err)
	}
	return st
}

func isNodeID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// writeFileAtomic writes b to path through a temporary file, synced and
// renamed, so that a crash leaves the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), nodeIDFile+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func registerCluster(t *Table) {
	sub := func(name string, arity int, syntax, summary string, h func(*Client, [][]byte)) *Command {
		return &Command{Name: "cluster|" + name, Arity: arity, Flags: FlagStale, Group: "cluster", Since: "0.1.0",
			Complexity: "O(1)", Summary: summary, Syntax: syntax, Handler: h}
	}
	keysIn := func(c *Command) *Command { c.Complexity = "O(N) where N is the number of keys"; return c }
	mode := func(name, summary string, h func(*Client, [][]byte)) *Command {
		return &Command{Name: name, Arity: 1, Flags: FlagFast | FlagLoading | FlagStale, Group: "cluster", Since: "0.1.0",
			Complexity: "O(1)", Summary: summary, Handler: h}
	}
	t.register(
		&Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "0.1.0", Complexity: "Depends on subcommand.",
			Summary: "A container for Redis Cluster commands (cluster-enabled yes).",
			Subs: []*Command{
				sub("info", 2, "", "Returns the cluster's state.", cmdClusterInfo),
				sub("myid", 2, "", "Returns this node's id.", cmdClusterMyID),
				sub("myshardid", 2, "", "Returns this node's shard id.", cmdClusterMyShardID),
				sub("nodes", 2, "", "Returns the cluster's nodes in nodes.conf's format.", cmdClusterNodes),
				sub("slots", 2, "", "Returns the slot ranges and their nodes.", cmdClusterSlots),
				sub("shards", 2, "", "Returns the shards, their slots and nodes.", cmdClusterShards),
				sub("keyslot", 3, "key", "Returns the hash slot of a key.", cmdClusterKeySlot),
				keysIn(sub("countkeysinslot", 3, "slot", "Counts the keys stored in a hash slot.", cmdClusterCountKeys)),
				keysIn(sub("getkeysinslot", 4, "slot count", "Returns up to count keys stored in a hash slot.", cmdClusterGetKeys)),
				{Name: "cluster|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "cluster", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CLUSTER subcommands.", Handler: helpFor("cluster")},
			}},
		mode("readonly", "Lets a cluster client read from a replica (OK: this node is a primary).", cmdClusterMode),
		mode("readwrite", "Ends READONLY (OK).", cmdClusterMode),
	)
	t.registerGate(19, "cluster", clusterGate)
	t.registerInfo("cluster", 85, infoCluster)
}

// clusterGate refuses, in cluster mode, a command whose keys hash to
// different slots, and an EXEC whose queued commands do (Redis checks a
// transaction as one request at EXEC and discards it).
func clusterGate(c *Client, cmd *Command, args [][]byte) bool {
	if !c.srv.cluster.on {
		return true
	}
	if cmd.Name == "exec" {
		m := c.multi
		if m == nil || !m.active || m.dirty {
			return true
		}
		slot := -1
		for _, q := range m.queue {
			s := commandSlot(q.cmd, q.args)
			if s == crossSlot || (s >= 0 && slot >= 0 && s != slot) {
				c.endMulti()
				c.Err(errCrossSlot)
				return false
			}
			if s >= 0 {
				slot = s
			}
		}
		return true
	}
	if commandSlot(cmd, args) == crossSlot {
		c.Err(errCrossSlot)
		return false
	}
	return true
}

// crossSlot is commandSlot's answer for keys in several slots.
const crossSlot = -2

// commandSlot is the slot of a command's client-visible keys: -1 with no
// key, crossSlot when they span slots.
func commandSlot(cmd *Command, args [][]byte) int {
	slot := -1
	check := func(k []byte) bool {
		s := cluster.Slot(k)
		if slot >= 0 && s != slot {
			return false
		}
		slot = s
		return true
	}
	if cmd.KeyArgs != nil {
		for _, k := range cmd.KeyArgs(args) {
			if !check(k) {
				return crossSlot
			}
		}
		return slot
	}
	if cmd.FirstKey <= 0 {
		return -1
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.FirstKey; i <= last && i < len(args); i += max1(cmd.Step) {
		if !check(args[i]) {
			return crossSlot
		}
	}
	return slot
}

// keyArgs lists the keys a client names in a command, which decide its
// slot (COMMAND GETKEYS): the arguments themselves, not the keyspace keys
// a command derives from them (Keys).
func keyArgs(cmd *Command, args [][]byte) [][]byte {
	if cmd.KeyArgs != nil {
		return cmd.KeyArgs(args)
	}
	if cmd.FirstKey <= 0 {
		return nil
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	var keys [][]byte
	for i := cmd.FirstKey; i <= last && i < len(args); i += max1(cmd.Step) {
		keys = append(keys, args[i])
	}
	return keys
}

func cmdClusterMode(c *Client, _ [][]byte) {
	if !c.srv.cluster.on {
		c.Err(errClusterDisabled)
		return
	}
	c.OK()
}

// clusterOn answers the error Redis gives outside cluster mode.
func clusterOn(c *Client) bool {
	if !c.srv.cluster.on {
		c.Err(errClusterDisabled)
		return false
	}
	return true
}

// endpoint is the address cluster clients are sent to: the one this
// client reached the node at, so that a node bound to every interface
// names one its client can use.
func (c *Client) endpoint() (ip string, port int) {
	port, _ = strconv.Atoi(portOf(c.srv))
	if h, _, err := net.SplitHostPort(c.LAddr); err == nil && h != "" {
		return h, port
	}
	ip = c.srv.Config().Bind
	if ip == "" || ip == "0.0.0.0" || ip == "::" {
		ip = "127.0.0.1"
	}
	return ip, port
}

func cmdClusterInfo(c *Client, _ [][]byte) {
	if !clusterOn(c) {
		return
	}
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v any
	}{
		{"cluster_state", "ok"}, {"cluster_slots_assigned", cluster.Slots}, {"cluster_slots_ok", cluster.Slots},
		{"cluster_slots_pfail", 0}, {"cluster_slots_fail", 0}, {"cluster_known_nodes", 1}, {"cluster_size", 1},
		{"cluster_current_epoch", 0}, {"cluster_my_epoch", 0},
		{"cluster_stats_messages_sent", 0}, {"cluster_stats_messages_received", 0},
		{"total_cluster_links_buffer_limit_exceeded", 0},
	} {
		fmt.Fprintf(&b, "%s:%v\r\n", kv.k, kv.v)
	}
	c.Verbatim(b.String())
}

func cmdClusterMyID(c *Client, _ [][]byte) {
	if clusterOn(c) {
		c.BulkString(c.srv.cluster.id)
	}
}

func cmdClusterMyShardID(c *Client, _ [][]byte) {
	if clusterOn(c) {
		c.BulkString(c.srv.cluster.shardID)
	}
}

// cmdClusterNodes answers one line in nodes.conf's format: id, ip:port@
// cluster-bus-port, flags, primary ("-"), ping sent, pong received,
// config epoch, link state, slots.
func cmdClusterNodes(c *Client, _ [][]byte) {
	if !clusterOn(c) {
		return
	}
	ip, port := c.endpoint()
	c.Verbatim(fmt.Sprintf("%s %s:%d@%d myself,master - 0 0 0 connected 0-%d\n",
		c.srv.cluster.id, ip, port, port+10000, cluster.Slots-1))
}

func cmdClusterSlots(c *Client, _ [][]byte) {
	if !clusterOn(c) {
		return
	}
	ip, port := c.endpoint()
	c.Array(1)
	c.Array(3)
	c.Int(0)
	c.Int(cluster.Slots - 1)
	c.Array(4)
	c.BulkString(ip)
	c.Int(int64(port))
	c.BulkString(c.srv.cluster.id)
	c.Map(0) // no hostname: the endpoint is the ip
}

func cmdClusterShards(c *Client, _ [][]byte) {
	if !clusterOn(c) {
		return
	}
	ip, port := c.endpoint()
	c.Array(1)
	c.Map(2)
	c.BulkString("slots")
	c.Array(2)
	c.Int(0)
	c.Int(cluster.Slots - 1)
	c.BulkString("nodes")
	c.Array(1)
	c.Map(7)
	c.BulkString("id")
	c.BulkString(c.srv.cluster.id)
	c.BulkString("port")
	c.Int(int64(port))
	c.BulkString("ip")
	c.BulkString(ip)
	c.BulkString("endpoint")
	c.BulkString(ip)
	c.BulkString("role")
	c.BulkString("master")
	c.BulkString("replication-offset")
	c.Int(0)
	c.BulkString("health")
	c.BulkString("online")
}

func cmdClusterKeySlot(c *Client, args [][]byte) {
	if clusterOn(c) {
		c.Int(int64(cluster.Slot(args[2])))
	}
}

// slotArg parses a slot number as Redis does.
func slotArg(c *Client, b []byte, errRange string) (int, bool) {
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
// It walks the keyspace: the emulated node keeps no per-slot index.
func keysInSlot(c *Client, slot, max int) []string {
	eng, now := c.eng(), c.Now()
	var keys []string
	for i := 0; i < eng.Shards(); i++ {
		eng.RangeShard(i, now, func(k string, _ *engine.Entry) bool {
			if cluster.Slot([]byte(k)) == slot {
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

func cmdClusterCountKeys(c *Client, args [][]byte) {
	if !clusterOn(c) {
		return
	}
	if slot, ok := slotArg(c, args[2], "ERR Invalid slot"); ok {
		c.Int(int64(len(keysInSlot(c, slot, -1))))
	}
}

func cmdClusterGetKeys(c *Client, args [][]byte) {
	if !clusterOn(c) {
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

func infoCluster(s *Server, _ *engine.Engine, b *strings.Builder) {
	on := 0
	if s.cluster.on {
		on = 1
	}
	infoLine(b, "cluster_enabled", on)
}
