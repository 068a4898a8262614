package tests

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A partition of a cluster's bus, made with TCP proxies: every node's bus
// is reached only through a proxy of its own (cluster-announce-bus-port),
// so that one node can be cut off from the others in both directions,
// whichever side connects. A connection is the cut-off node's when it
// goes to the node's own proxy, or when what its opener sends first names
// the node (Redis's bus messages carry the sender's id, raft's RPCs the
// sender's server id, which is its node id).

// busNet is the proxies of one cluster's bus.
type busNet struct {
	mu      sync.Mutex
	victim  string // the node id cut off, once known
	cut     bool
	proxies []*busProxy
}

type busProxy struct {
	net    *busNet
	owner  string // the id of the node behind it, once known
	ln     net.Listener
	target string
	conns  []*busConn
}

const senderBytes = 160

type busConn struct {
	in, out net.Conn
	tainted bool // its opener named the victim
}

func (b *busNet) add(t *testing.T, listen, target int) *busProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(listen))
	require.NoError(t, err)
	p := &busProxy{net: b, ln: ln, target: "127.0.0.1:" + strconv.Itoa(target)}
	b.proxies = append(b.proxies, p)
	t.Cleanup(func() { ln.Close(); b.mu.Lock(); p.closeAll(func(*busConn) bool { return true }); b.mu.Unlock() })
	go p.serve()
	return p
}

// isolated reports whether c must not pass now; b.mu held.
func (p *busProxy) isolated(c *busConn) bool {
	return p.net.cut && (p.owner == p.net.victim || c.tainted)
}

// closeAll closes the connections drop selects; b.mu held.
func (p *busProxy) closeAll(drop func(*busConn) bool) {
	kept := p.conns[:0]
	for _, c := range p.conns {
		if drop(c) {
			c.in.Close()
			c.out.Close()
		} else {
			kept = append(kept, c)
		}
	}
	p.conns = kept
}

func (p *busProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		c := &busConn{in: in, out: out}
		p.net.mu.Lock()
		if p.isolated(c) {
			p.net.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns = append(p.conns, c)
		p.net.mu.Unlock()
		go func() { io.Copy(in, out); in.Close() }()
		go p.forward(c)
	}
}

// forward copies what the opener sends, looking for the victim's id in
// its first senderBytes: the sender of a Redis bus message is at bytes
// 40-80 of its header, a raft RPC's in the header that starts it. Further
// on, messages name other nodes too (Redis's gossip, raft's entries).
func (p *busProxy) forward(c *busConn) {
	defer c.out.Close()
	var seen []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := c.in.Read(buf)
		if n > 0 {
			if len(seen) < senderBytes {
				seen = append(seen, buf[:min(n, senderBytes-len(seen))]...)
				p.net.mu.Lock()
				if v := p.net.victim; v != "" && bytes.Contains(seen, []byte(v)) {
					c.tainted = true
				}
				drop := p.isolated(c)
				p.net.mu.Unlock()
				if drop {
					c.in.Close()
					return
				}
			}
			if _, werr := c.out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// setCut cuts the victim off (closing its connections) or heals.
func (b *busNet) setCut(cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = cut
	if cut {
		for _, p := range b.proxies {
			p.closeAll(p.isolated)
		}
	}
}

// partitionedCluster is six nodes of kind, three primaries with a replica
// each, every bus behind a busNet proxy; the first is a primary whose
// client port is reached through a proxy of its own as well (clientCut).
type partitionedCluster struct {
	addrs     []string // client addresses, the first the victim's real one
	victim    *redis.Client
	victimID  string
	bus       *busNet
	clientCut *busCut
}

func startPartitionedCluster(t *testing.T, kind string) *partitionedCluster {
	t.Helper()
	need(t, "redis-cli")
	ports := freePorts(t, 6*3+1)
	pc := &partitionedCluster{bus: &busNet{}}
	var proxies []*busProxy
	for i := 0; i < 6; i++ {
		port, bus, announced := ports[i], ports[6+i], ports[12+i]
		proxies = append(proxies, pc.bus.add(t, announced, bus))
		addr := "127.0.0.1:" + strconv.Itoa(port)
		pc.addrs = append(pc.addrs, addr)
		if kind == "redis" {
			dir := t.TempDir()
			cmd := exec.Command(need(t, "redis-server"), "--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(bus),
				"--cluster-announce-bus-port", strconv.Itoa(announced), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
				"--cluster-node-timeout", clusterNodeTimeout, "--cluster-config-file", dir+"/nodes.conf",
				"--save", "", "--appendonly", "no", "--dir", dir)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		} else {
			n := &clusterNode{dir: t.TempDir(), port: port, bus: bus}
			n.start(t, "--cluster-announce-bus-port", strconv.Itoa(announced))
		}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		eventually(t, 30*time.Second, func() bool { return c.Ping(ctx).Err() == nil }, func() string { return kind + " at " + addr })
		id, err := c.ClusterMyID(ctx).Result()
		require.NoError(t, err)
		pc.bus.mu.Lock() // the proxies' goroutines read owner and victim
		proxies[i].owner = id
		pc.bus.mu.Unlock()
		if i == 0 {
			pc.victimID = id
		}
	}
	pc.bus.mu.Lock()
	pc.bus.victim = pc.victimID
	pc.bus.mu.Unlock()
	args := append([]string{"create"}, pc.addrs...)
	out, err := redisCliCluster(t, append(args, "--cluster-replicas", "1", "--cluster-yes")...)
	require.NoError(t, err, "%s", out)
	eventually(t, 60*time.Second, func() bool {
		out, err = redisCliCluster(t, "check", pc.addrs[1])
		return err == nil && !strings.Contains(out, "[WARNING]") && !strings.Contains(out, "[ERR]")
	}, func() string { return "redis-cli --cluster check:\n" + out })
	pc.clientCut = newBusCut(t, ports[18], ports[0])
	pc.victim = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(ports[18]), MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { pc.victim.Close() })
	return pc
}

// TestClusterPartitionMatchesRedis cuts a primary's clients off, then its
// bus, in a Redis Cluster and in a limitdb cluster built alike (three
// primaries with a replica each, a node timeout of 3 s), and measures
// what the cut-off primary accepts:
//
//   - clients cut off, bus intact: the cluster sees nothing wrong; the
//     primary keeps its slots (no failover) in both.
//   - bus cut, clients intact: the primary keeps accepting writes until it
//     knows it is in the minority, then refuses (CLUSTERDOWN), while the
//     majority promotes its replica. The window is at most the node
//     timeout plus a few heartbeats in both; the writes accepted in it are
//     lost when the partition heals and the old primary replicates its
//     replacement: the over-admission a limiter suffers, bounded by the
//     primary's write rate times that window.
func TestClusterPartitionMatchesRedis(t *testing.T) {
	t.Parallel()
	nt, _ := strconv.Atoi(clusterNodeTimeout)
	nodeTimeout := time.Duration(nt) * time.Millisecond
	for _, kind := range []string{"redis", "limitdb"} {
		t.Run(kind, func(t *testing.T) {
			pc := startPartitionedCluster(t, kind)
			// A key of the victim's: limitdb counts CL.THROTTLE admissions
			// (a limit no test reaches), Redis INCRs.
			var key string
			for i := 0; key == ""; i++ {
				k := fmt.Sprintf("part:%d", i)
				if slotOwner(t, pc.victim, cluster.Slot([]byte(k))) == pc.addrs[0] {
					key = k
				}
			}
			write := func() error {
				if kind == "redis" {
					return pc.victim.Incr(ctx, key).Err()
				}
				return pc.victim.Do(ctx, "CL.THROTTLE", key, 999999, 1000000, 86400).Err()
			}
			// A Redis primary refuses writes for a moment after the cluster
			// is made, until it has heard from the others.
			var err error
			eventually(t, 30*time.Second, func() bool { err = write(); return err == nil },
				func() string { return fmt.Sprintf("the primary to take writes: %v", err) })

			// Clients cut off, bus intact, for 1.5 node timeouts: no failover.
			pc.clientCut.setCut(true)
			require.Error(t, write())
			time.Sleep(nodeTimeout * 3 / 2)
			pc.clientCut.setCut(false)
			require.NoError(t, write(), "the primary serves again once its clients reach it")
			require.Equal(t, pc.addrs[0], slotOwner(t, pc.victim, cluster.Slot([]byte(key))), "no failover while only clients were cut off")

			// Bus cut, clients intact: how long, and how much, it accepts.
			acked := 2 // the writes above
			pc.bus.setCut(true)
			cutAt := time.Now()
			var lastOK time.Duration
			var refusal error
			for time.Since(cutAt) < 10*nodeTimeout {
				err := write()
				if err == nil {
					acked++
					lastOK = time.Since(cutAt)
					continue
				}
				if strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
					refusal = err
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			require.Error(t, refusal, "the cut-off primary never refused a write")
			t.Logf("%s: the cut-off primary accepted writes for %.1fs after its bus was cut (node timeout %v), %d in all, then: %v",
				kind, lastOK.Seconds(), nodeTimeout, acked, refusal)
			require.Less(t, lastOK, 2*nodeTimeout+5*time.Second, "a minority primary stops accepting writes after about the node timeout")

			// The majority promotes the replica; after the heal the old
			// primary replicates it and what it accepted alone is gone.
			maj := redis.NewClient(&redis.Options{Addr: pc.addrs[1], MaxRetries: -1})
			t.Cleanup(func() { maj.Close() })
			var promoted string
			eventually(t, 60*time.Second, func() bool {
				promoted = slotOwner(t, maj, cluster.Slot([]byte(key)))
				return promoted != "" && promoted != pc.addrs[0]
			}, func() string {
				return "the majority to promote the replica; CLUSTER NODES:\n" + maj.ClusterNodes(ctx).Val()
			})
			pc.bus.setCut(false)
			eventually(t, 60*time.Second, func() bool {
				r, err := pc.victim.Do(ctx, "ROLE").Slice()
				return err == nil && len(r) > 2 && r[0] == "slave" && fmt.Sprintf("127.0.0.1:%v", r[2]) == promoted
			}, func() string { return "the old primary to replicate the promoted one" })
			nc := redis.NewClient(&redis.Options{Addr: promoted, MaxRetries: -1})
			t.Cleanup(func() { nc.Close() })
			var kept int64
			if kind == "redis" {
				kept, _ = nc.Get(ctx, key).Int64()
			} else {
				r := ints(t, nc.Do(ctx, "CL.THROTTLE", key, 999999, 1000000, 86400, 0))
				kept = r[1] - r[2]
			}
			lost := int64(acked) - kept
			t.Logf("%s: %d writes acknowledged, %d kept by the promoted replica: %d lost in the partition (%.0f%% of those accepted after the cut)",
				kind, acked, kept, lost, 100*float64(lost)/float64(max(acked-2, 1)))
			require.GreaterOrEqual(t, lost, int64(0))
			require.LessOrEqual(t, lost, int64(acked-2), "only writes accepted after the cut may be lost")
		})
	}
}
