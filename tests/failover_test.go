package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ---- a limitdb process behind a logging proxy -----------------------------

// proxiedNode is a limitdb process announced to its primary, and so to
// Sentinel, at the port of its own respProxy. It can be killed and started
// again at the same port and dir. It has a config file, as Sentinel
// expects (it sends CONFIG REWRITE with every SLAVEOF).
type proxiedNode struct {
	dir   string
	port  string // the process's own port, kept across restarts
	proxy *respProxy
	proc  *proc
}

func startProxiedNode(t *testing.T, extra ...string) *proxiedNode {
	t.Helper()
	n := &proxiedNode{dir: t.TempDir(), port: "0", proxy: newRESPProxy(t)}
	require.NoError(t, os.WriteFile(n.config(), []byte("# written by Sentinel's CONFIG REWRITE\n"), 0o600))
	n.start(t, extra...)
	return n
}

func (n *proxiedNode) config() string { return filepath.Join(n.dir, "limitdb.conf") }

// start runs the process on n.port (a free one the first time).
func (n *proxiedNode) start(t *testing.T, extra ...string) {
	t.Helper()
	args := append([]string{"--config", n.config(), "--port", n.port, "--save", "0",
		"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", strconv.Itoa(n.proxy.port)}, extra...)
	n.proc = mustStart(t, n.dir, args...)
	_, n.port, _ = net.SplitHostPort(n.proc.addr)
	n.proxy.forwardTo(n.proc.addr)
}

// role is the node's ROLE reply, as strings.
func role(c *redis.Client) ([]string, error) {
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(v))
	for _, x := range v {
		out = append(out, fmt.Sprint(x))
	}
	return out, nil
}

// ---- Sentinel's view --------------------------------------------------------

// sentinelMaster is the primary's address as sentinel s names it.
func sentinelMaster(s *redis.Client) string {
	addr, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").StringSlice()
	if err != nil || len(addr) != 2 {
		return ""
	}
	return net.JoinHostPort(addr[0], addr[1])
}

// sentinelInstances is SENTINEL REPLICAS or SENTINELS mymaster, each
// instance as a map of its fields.
func sentinelInstances(s *redis.Client, which string) []map[string]string {
	v, err := s.Do(ctx, "SENTINEL", which, "mymaster").Slice()
	if err != nil {
		return nil
	}
	var out []map[string]string
	for _, inst := range v {
		fields, _ := inst.([]any)
		m := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fmt.Sprint(fields[i])] = fmt.Sprint(fields[i+1])
		}
		out = append(out, m)
	}
	return out
}

// eventually polls cond every 50 ms until it holds, or fails the test
// with what describe says of the last state after limit.
func eventually(t *testing.T, limit time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- a steady load through go-redis's FailoverClient ----------------------

// ack is a write the server acknowledged: a new key, at a time.
type ack struct {
	key string
	at  time.Time
}

// failoverLoad writes a new key per command (CL.THROTTLE and SW.INCR in
// turn) through one FailoverClient until stopped, and keeps the
// acknowledged ones.
type failoverLoad struct {
	mu     sync.Mutex
	acks   []ack
	failed int
	stop   chan struct{}
	done   chan struct{}
}

func startFailoverLoad(fc *redis.Client) *failoverLoad {
	l := &failoverLoad{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for seq := 0; ; seq++ {
			select {
			case <-l.stop:
				return
			default:
			}
			var key string
			var err error
			if seq%2 == 0 {
				key = fmt.Sprint("load:cl:", seq)
				err = fc.Do(ctx, "CL.THROTTLE", key, 99, 100, 3600, 1).Err()
			} else {
				key = fmt.Sprint("load:sw:", seq)
				err = fc.Do(ctx, "SW.INCR", key, 100, "1h").Err()
			}
			at := time.Now()
			l.mu.Lock()
			if err == nil {
				l.acks = append(l.acks, ack{key, at})
			} else {
				l.failed++
			}
			l.mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return l
}

// ackedAfter counts acknowledgements after t.
func (l *failoverLoad) ackedAfter(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for i := len(l.acks) - 1; i >= 0 && l.acks[i].at.After(t); i-- {
		n++
	}
	return n
}

func (l *failoverLoad) finish() []ack {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks
}

// requireLossBound stops the load and checks its acknowledged writes on
// the new primary: those lost were acknowledged in the final 1.5 s before
// the kill, and none written to the new primary (acknowledged after
// newPrimarySince) is lost.
func (l *failoverLoad) requireLossBound(t *testing.T, newPrimary *redis.Client, killedAt, newPrimarySince time.Time) {
	t.Helper()
	acks := l.finish()
	pipe := newPrimary.Pipeline()
	exists := make([]*redis.IntCmd, len(acks))
	for i, a := range acks {
		exists[i] = pipe.Exists(ctx, a.key)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	var before, inLast, lost, after int
	var oldestLost time.Duration
	for i, a := range acks {
		if a.at.After(newPrimarySince) {
			after++
			require.Equal(t, int64(1), exists[i].Val(), "%s, written to the new primary, is missing there", a.key)
			continue
		}
		before++
		age := killedAt.Sub(a.at)
		if age <= 1500*time.Millisecond {
			inLast++
		}
		if exists[i].Val() == 0 {
			lost++
			oldestLost = max(oldestLost, age)
		}
	}
	t.Logf("writes without WAIT: %d acknowledged by the old primary, %d of them in its final 1.5 s, %d lost (acknowledged at most %v before the kill); %d acknowledged by the new primary, none lost; %d attempts failed",
		before, inLast, lost, oldestLost.Round(time.Millisecond), after, l.failed)
	if oldestLost > 1500*time.Millisecond {
		t.Fatalf("a write acknowledged %v before the kill is lost: replication lagged more than 1.5 s", oldestLost)
	}
}

// ---- client libraries' Sentinel support, in the background ----------------

// clientScript is a client library's test script running beside the
// failover: it finds the primary through the sentinels, writes ready in
// its state dir, waits for killed, then writes done with the port of the
// primary it reached afterwards.
type clientScript struct {
	name  string
	state string
	out   bytes.Buffer
	err   error
	done  chan struct{}
}

func startClientScript(t *testing.T, name, dir string, env []string, bin string, args ...string) *clientScript {
	t.Helper()
	s := &clientScript{name: name, state: t.TempDir(), done: make(chan struct{})}
	cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "LIMITDB_STATE_DIR="+s.state)
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	require.NoError(t, cmd.Start())
	go func() {
		s.err = cmd.Wait()
		cancel()
		close(s.done)
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func (s *clientScript) touch(t *testing.T, file string) {
	require.NoError(t, os.WriteFile(filepath.Join(s.state, file), nil, 0o600))
}

func (s *clientScript) has(file string) bool {
	_, err := os.Stat(filepath.Join(s.state, file))
	return err == nil
}

// ---- Sentinel's commands, as the proxies saw them ---------------------------

// sentinelCommandName is how a command Sentinel sent is listed: the name,
// with the subcommand or arguments that say what it does (CLIENT KILL
// TYPE normal, SLAVEOF NO ONE, PUBLISH's channel).
func sentinelCommandName(args []string) string {
	name := strings.ToUpper(args[0])
	switch name {
	case "CLIENT", "CONFIG", "SENTINEL", "COMMAND", "SCRIPT":
		if len(args) > 1 {
			name += " " + strings.ToUpper(args[1])
		}
		if name == "CLIENT KILL" {
			name += " " + strings.Join(args[2:], " ")
		}
	case "SLAVEOF", "REPLICAOF":
		if len(args) == 3 && strings.EqualFold(args[1], "no") && strings.EqualFold(args[2], "one") {
			name += " NO ONE"
		} else {
			name += " host port"
		}
	case "PUBLISH", "SUBSCRIBE", "PSUBSCRIBE":
		if len(args) > 1 {
			name += " " + args[1]
		}
	}
	return name
}

// TestSentinelFailsOverLimitdb: three real redis-sentinel processes
// monitor a limitdb primary with two replicas, every node behind a logging
// proxy. After kill -9 of the primary, Sentinel promotes a replica, points
// the other at it, and, once the old primary starts again on its port,
// makes it a replica too. Writes that WAIT acknowledged on both replicas
// are on the promoted node with the same state; writes without WAIT are
// lost only from the last moments before the kill. One FailoverClient
// carries its load across, and redis-py's and ioredis' Sentinel clients
// reach the new primary. Sentinel sent only the commands listed here.
func TestSentinelFailsOverLimitdb(t *testing.T) {
	t.Parallel()
	primary := startProxiedNode(t)
	replicaOf := "127.0.0.1 " + strconv.Itoa(primary.proxy.port)
	nodes := []*proxiedNode{primary, startProxiedNode(t, "--replicaof", replicaOf), startProxiedNode(t, "--replicaof", replicaOf)}
	for _, n := range nodes[1:] {
		c := n.proc.client(t)
		eventually(t, 30*time.Second, func() bool { return infoOf(t, c, "replication", "master_link_status") == "up" },
			func() string { return "a replica's link never came up:\n" + n.proc.log.String() })
	}

	sentinels := startSentinels(t, 3, primary.proxy.addr)
	var sentinelAddrs []string
	for _, s := range sentinels {
		sentinelAddrs = append(sentinelAddrs, s.Options().Addr)
	}
	eventually(t, 30*time.Second, func() bool {
		for _, s := range sentinels {
			replicas := sentinelInstances(s, "REPLICAS")
			if len(replicas) != 2 || len(sentinelInstances(s, "SENTINELS")) != 2 {
				return false
			}
			for _, r := range replicas {
				if r["flags"] != "slave" || r["master-link-status"] != "ok" {
					return false
				}
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("sentinels do not all see 2 healthy replicas and 2 other sentinels: %v, %d",
			sentinelInstances(sentinels[0], "REPLICAS"), len(sentinelInstances(sentinels[0], "SENTINELS")))
	})

	// redis-py and ioredis find the primary through the same sentinels.
	replicaPorts := strconv.Itoa(nodes[1].proxy.port) + "," + strconv.Itoa(nodes[2].proxy.port)
	scriptEnv := []string{"LIMITDB_SENTINELS=" + strings.Join(sentinelAddrs, ","),
		"LIMITDB_PRIMARY_PORT=" + strconv.Itoa(primary.proxy.port), "LIMITDB_REPLICA_PORTS=" + replicaPorts}
	// The scripts live as long as the test, not the subtests that find
	// their interpreters (and skip, or fail under CI, without them).
	scripts := map[string]*clientScript{}
	parent := t
	t.Run("start redis-py", func(t *testing.T) {
		py := python(t)
		scripts["redis-py"] = startClientScript(parent, "redis-py", "clients/python", append(scriptEnv, "PYTHONDONTWRITEBYTECODE=1"),
			py, "-m", "unittest", "-v", "test_sentinel")
	})
	t.Run("start ioredis", func(t *testing.T) {
		dir := nodeDir(t)
		scripts["ioredis"] = startClientScript(parent, "ioredis", dir, scriptEnv, "node", "--test", "--test-reporter=tap", "sentinel.test.mjs")
	})
	for _, s := range scripts {
		eventually(t, 20*time.Second, func() bool { return s.has("ready") }, func() string {
			select {
			case <-s.done:
				return s.name + " exited before it was ready: " + s.out.String()
			default:
				return s.name + " never found the primary through the sentinels"
			}
		})
	}

	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: sentinelAddrs, Protocol: 2,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1, PoolSize: 2,
	})
	t.Cleanup(func() { fc.Close() })
	load := startFailoverLoad(fc)
	defer func() {
		select {
		case <-load.stop:
		default:
			load.finish()
		}
	}()
	// Two seconds of load before the kill, so that the final 1.5 s below
	// is not all of it.
	loadFrom := time.Now()
	eventually(t, 30*time.Second, func() bool { return time.Since(loadFrom) > 2*time.Second && load.ackedAfter(loadFrom) >= 200 },
		func() string { return "the FailoverClient's load is not getting through" })

	// A burst that WAIT says both replicas have: it must survive the
	// failover exactly.
	pc := primary.proc.client(t)
	const burst = 200
	for i := 0; i < burst; i++ {
		require.NoError(t, pc.Do(ctx, "SET", fmt.Sprint("ack:s:", i), fmt.Sprint("v", i)).Err())
		require.NoError(t, pc.Do(ctx, "CL.THROTTLE", fmt.Sprint("ack:cl:", i), 99, 100, 3600, 1+i%7).Err())
	}
	n, err := pc.Do(ctx, "WAIT", 2, 30000).Int()
	require.NoError(t, err)
	require.Equal(t, 2, n, "WAIT 2 30000 after the burst")
	wantRemaining := make([]int64, burst)
	for i := range wantRemaining {
		wantRemaining[i] = throttle(t, pc, fmt.Sprint("ack:cl:", i), 0)
	}

	killedAt := time.Now()
	primary.proc.kill9(t)
	// No replica can be promoted before Sentinel's down-after-milliseconds
	// has passed: a write acknowledged before then was the old
	// primary's, even if its reply arrived after the kill.
	newPrimarySince := killedAt.Add(sentinelDownAfter)
	for _, s := range scripts {
		s.touch(t, "killed")
	}

	// Sentinel promotes a replica.
	var promoted, sibling *proxiedNode
	eventually(t, 30*time.Second, func() bool {
		addr := sentinelMaster(sentinels[0])
		for i, n := range nodes[1:] {
			if addr == n.proxy.addr {
				promoted, sibling = n, nodes[3-i-1]
				return true
			}
		}
		return false
	}, func() string { return "Sentinel did not promote a replica; it names " + sentinelMaster(sentinels[0]) })
	promotedAfter := time.Since(killedAt)
	for _, s := range sentinels[1:] {
		eventually(t, 30*time.Second, func() bool { return sentinelMaster(s) == promoted.proxy.addr },
			func() string { return "another sentinel names " + sentinelMaster(s) })
	}
	nc := promoted.proc.client(t)
	eventually(t, 30*time.Second, func() bool { r, _ := role(nc); return len(r) > 0 && r[0] == "master" },
		func() string { r, err := role(nc); return fmt.Sprintf("ROLE on the promoted node: %v %v", r, err) })

	// The FailoverClient carries on against it.
	eventually(t, 60*time.Second, func() bool { return load.ackedAfter(newPrimarySince) >= 100 },
		func() string { return "the FailoverClient writes nothing to the promoted node" })
	load.mu.Lock()
	var firstAfter time.Duration
	for _, a := range load.acks {
		if a.at.After(newPrimarySince) {
			firstAfter = a.at.Sub(killedAt)
			break
		}
	}
	load.mu.Unlock()
	t.Logf("failover: Sentinel named the new primary %v after kill -9, the FailoverClient's first write there %v after", promotedAfter.Round(time.Millisecond), firstAfter.Round(time.Millisecond))

	// What WAIT acknowledged is there, identical.
	for i := 0; i < burst; i++ {
		v, err := nc.Get(ctx, fmt.Sprint("ack:s:", i)).Result()
		require.NoError(t, err, "ack:s:%d, acknowledged by WAIT, is missing on the promoted node", i)
		require.Equal(t, fmt.Sprint("v", i), v)
		require.Equal(t, wantRemaining[i], throttle(t, nc, fmt.Sprint("ack:cl:", i), 0), "ack:cl:%d's remaining on the promoted node", i)
	}

	// The clients' scripts reached the new primary.
	for _, s := range scripts {
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not finish:\n%s", s.name, s.out.String())
		}
	}
	for _, name := range []string{"redis-py", "ioredis"} {
		t.Run(name+" follows the failover", func(t *testing.T) {
			s := scripts[name]
			if s == nil {
				t.Skip("not started")
			}
			if s.err != nil {
				t.Fatalf("%s: %v\n%s", name, s.err, s.out.String())
			}
			got, err := os.ReadFile(filepath.Join(s.state, "done"))
			require.NoError(t, err, "%s", s.out.String())
			require.Equal(t, strconv.Itoa(promoted.proxy.port), string(got), "the port %s reached after the failover", name)
		})
	}

	// The old primary starts again, empty, as a primary; Sentinel makes it
	// a replica of the new one.
	primary.start(t)
	oc := primary.proc.client(t)
	wantRole := []string{"slave", "127.0.0.1", strconv.Itoa(promoted.proxy.port), "connected"}
	for _, n := range []*proxiedNode{primary, sibling} {
		c := oc
		if n == sibling {
			c = sibling.proc.client(t)
		}
		eventually(t, 30*time.Second, func() bool {
			r, _ := role(c)
			return len(r) == 5 && strings.Join(r[:4], " ") == strings.Join(wantRole, " ") &&
				infoOf(t, c, "replication", "master_link_status") == "up"
		}, func() string {
			r, err := role(c)
			return fmt.Sprintf("ROLE %v (%v), want %v and link up\n%s", r, err, wantRole, n.proc.log)
		})
	}
	rejoined := time.Since(killedAt)

	t.Logf("the old primary, started again, was a replica of the new one %v after the kill", rejoined.Round(time.Millisecond))
	load.requireLossBound(t, nc, killedAt, newPrimarySince)

	// Sentinel rewrote the config files: started from them, the promoted
	// node is a primary and the sibling replicates the promoted node's
	// proxy.
	requireConfigReplicaOf(t, promoted, "")
	requireConfigReplicaOf(t, sibling, fmt.Sprintf("127.0.0.1 %d", promoted.proxy.port))

	requireSentinelCommands(t, nodes, promoted, sibling, primary)
}

// requireSentinelCommands: everything Sentinel sent the nodes, through
// their proxies, is on sentinelSends, and the failover's transactions are
// among it: the promotion to promoted, the reconfiguration to the others.
func requireSentinelCommands(t *testing.T, nodes []*proxiedNode, promoted, sibling, oldPrimary *proxiedNode) {
	t.Helper()
	seen := map[string]int{}
	for _, n := range nodes {
		for _, c := range n.proxy.commands("sentinel-") {
			seen[sentinelCommandName(c.args)]++
		}
	}
	var unexpected, counts []string
	for name, count := range seen {
		counts = append(counts, fmt.Sprintf("%s: %d", name, count))
		if !sentinelSends[name] {
			unexpected = append(unexpected, name)
		}
	}
	sort.Strings(counts)
	t.Logf("Sentinel sent, counted by the proxies:\n\t%s", strings.Join(counts, "\n\t"))
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		t.Errorf("Sentinel sent commands that are not on sentinelSends (check that limitdb answers them as Redis does, then add them):\n\t%s",
			strings.Join(unexpected, "\n\t"))
	}
	reconfigure := func(slaveof ...string) [][]string {
		return [][]string{{"MULTI"}, append([]string{"SLAVEOF"}, slaveof...), {"CONFIG", "REWRITE"},
			{"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}, {"EXEC"}}
	}
	newPrimary := []string{"127.0.0.1", strconv.Itoa(promoted.proxy.port)}
	for _, want := range []struct {
		node *proxiedNode
		what string
		tx   [][]string
	}{
		{promoted, "the promoted node", reconfigure("NO", "ONE")},
		{sibling, "the other replica", reconfigure(newPrimary...)},
		{oldPrimary, "the old primary", reconfigure(newPrimary...)},
	} {
		if !sentCommands(want.node.proxy.commands("sentinel-"), want.tx) {
			t.Errorf("Sentinel never sent %s the transaction %q; it sent:\n%s", want.what, want.tx, formatCommands(want.node.proxy.commands("sentinel-")))
		}
	}
}

// sentinelSends is every command redis-sentinel 7.0 sent the nodes in
// TestSentinelFailsOverLimitdb (named by sentinelCommandName), from the
// monitoring through the failover to the old primary's return. Sentinel
// reads roles and replicas from INFO, never from ROLE.
var sentinelSends = map[string]bool{
	"CLIENT SETNAME":               true, // each link's first command: sentinel-<id>-cmd or -pubsub
	"PING":                         true,
	"INFO":                         true,
	"SUBSCRIBE __sentinel__:hello": true, // how sentinels find one another
	"PUBLISH __sentinel__:hello":   true,
	"MULTI":                        true, // a (re)configuration is one transaction:
	"SLAVEOF NO ONE":               true, // the promotion,
	"SLAVEOF host port":            true, // or a replica pointed at the new primary,
	"CONFIG REWRITE":               true, // kept in the config file,
	"CLIENT KILL TYPE normal":      true, // clients told to reconnect,
	"CLIENT KILL TYPE pubsub":      true,
	"EXEC":                         true,
}

// sentCommands reports whether want was sent back to back on one
// connection.
func sentCommands(cmds []proxiedCommand, want [][]string) bool {
	for i := range cmds {
		match := true
		for j, w := range want {
			if i+j >= len(cmds) || cmds[i+j].conn != cmds[i].conn || !strings.EqualFold(strings.Join(cmds[i+j].args, " "), strings.Join(w, " ")) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// requireConfigReplicaOf fails unless n's config file makes it replicate
// want ("": nothing), written as Redis writes it: "replicaof host port",
// no slaveof line.
func requireConfigReplicaOf(t *testing.T, n *proxiedNode, want string) {
	t.Helper()
	b, err := os.ReadFile(n.config())
	require.NoError(t, err)
	got := ""
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "replicaof "); ok {
			got = v
		}
		if strings.HasPrefix(l, "slaveof ") {
			t.Fatalf("%s: a slaveof line beside replicaof:\n%s", n.config(), b)
		}
	}
	if got != want {
		t.Fatalf("%s: replicaof %q, want %q:\n%s", n.config(), got, want, b)
	}
}

// ---- a replica that stops, a replica that copies a million keys -----------

// snapshotKeyspace saves c's node into its dir and reads the snapshot back
// in process, at instant at: two nodes whose snapshots read alike hold the
// same keys in the same states.
func snapshotKeyspace(t *testing.T, c *redis.Client, dir string, at time.Time) map[string]string {
	t.Helper()
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	return keyspaceOf(t, serverFromDir(t, clock.NewFake(at.UnixNano()), dir).srv.Engine())
}

// keyspaceDiff says how replica differs from primary, with a few keys;
// "" when they are equal.
func keyspaceDiff(primary, replica map[string]string) string {
	var missing, extra, changed []string
	for k, v := range primary {
		if rv, ok := replica[k]; !ok {
			missing = append(missing, k)
		} else if rv != v {
			changed = append(changed, k)
		}
	}
	for k := range replica {
		if _, ok := primary[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(changed) == 0 {
		return ""
	}
	few := func(keys []string) []string { sort.Strings(keys); return keys[:min(len(keys), 5)] }
	return fmt.Sprintf("%d of %d missing %q, %d extra %q, %d in another state %q",
		len(missing), len(primary), few(missing), len(extra), few(extra), len(changed), few(changed))
}

// TestReplicaResumesAfterSIGSTOP: a replica process stopped for 2 s under
// a write load, then continued, catches up without a full copy: on the
// same link when it stayed up, or with a partial resynchronisation
// (+CONTINUE) when the primary dropped it meanwhile. Afterwards it holds
// exactly the primary's keys.
func TestReplicaResumesAfterSIGSTOP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		dropLink    bool
		partialSync string
	}{
		{"link kept", false, "0"},
		{"link dropped while stopped", true, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pdir, rdir := t.TempDir(), t.TempDir()
			p := mustStart(t, pdir, "--save", "0")
			_, port, _ := net.SplitHostPort(p.addr)
			r := mustStart(t, rdir, "--save", "0", "--replicaof", "127.0.0.1 "+port)
			pc, rc := p.client(t), r.client(t)
			eventually(t, 30*time.Second, func() bool { return infoOf(t, rc, "replication", "master_link_status") == "up" },
				func() string { return "the replica's link never came up:\n" + r.log.String() })

			stop, done := make(chan struct{}), make(chan error, 1)
			rounds := 0
			var progress atomic.Int64 // rounds so far
			go func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						rounds = i
						done <- nil
						return
					default:
					}
					k := fmt.Sprint(i % 2000)
					for _, cmd := range [][]any{
						{"CL.THROTTLE", "cl:" + k, 99, 100, 3600},
						{"SW.INCR", "sw:" + k, 1000, "1h"},
						{"SET", "s:" + k, i},
					} {
						if err := pc.Do(ctx, cmd...).Err(); err != nil {
							done <- fmt.Errorf("%v: %w", cmd, err)
							return
						}
					}
					progress.Store(int64(i + 1))
					time.Sleep(time.Millisecond)
				}
			}()
			// Each phase lasts until the primary has made so many rounds of
			// writes, however long a busy machine takes; a primary that a
			// stopped replica stalls never makes them.
			await := func(n int64, what string) {
				t.Helper()
				from := progress.Load()
				eventually(t, 60*time.Second, func() bool {
					select {
					case err := <-done:
						done <- err
						return true
					default:
					}
					return progress.Load()-from >= n
				}, func() string { return fmt.Sprintf("%d rounds of writes %s: made %d", n, what, progress.Load()-from) })
			}
			await(200, "before the replica is stopped")
			require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
			stoppedAt := progress.Load()
			t.Cleanup(func() { r.cmd.Process.Signal(syscall.SIGCONT) })
			if tc.dropLink {
				n, err := pc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Int()
				require.NoError(t, err)
				require.Equal(t, 1, n, "CLIENT KILL TYPE replica")
			}
			await(1000, "while the replica is stopped: a stopped replica must not stall its primary")
			whileStopped := progress.Load() - stoppedAt
			require.NoError(t, r.cmd.Process.Signal(syscall.SIGCONT))
			continued := time.Now()
			await(200, "after the replica continues")
			close(stop)
			require.NoError(t, <-done, "the load on the primary")

			eventually(t, 30*time.Second, func() bool {
				n, err := pc.Do(ctx, "WAIT", 1, 100).Int()
				return err == nil && n == 1
			}, func() string { return "WAIT 1: the replica never acknowledged\n" + r.log.String() })
			t.Logf("%d rounds of writes, %d while the replica was stopped; it acknowledged them all %v after SIGCONT (the load stopped 200 rounds after it)",
				rounds, whileStopped, time.Since(continued).Round(time.Millisecond))
			require.Equal(t, "1", infoOf(t, pc, "stats", "sync_full"), "full copies: the first one only")
			require.Equal(t, tc.partialSync, infoOf(t, pc, "stats", "sync_partial_ok"), "partial resynchronisations")
			require.Equal(t, infoOf(t, pc, "replication", "master_repl_offset"), infoOf(t, rc, "replication", "master_repl_offset"))
			at := time.Now()
			want := snapshotKeyspace(t, pc, pdir, at)
			require.Equal(t, 3*min(rounds, 2000), len(want), "keys written in %d rounds", rounds)
			if diff := keyspaceDiff(want, snapshotKeyspace(t, rc, rdir, at)); diff != "" {
				t.Fatalf("the replica's keys differ from the primary's: %s", diff)
			}
		})
	}
}

// TestFullResyncOfAMillionKeys: a replica that connects to a primary
// holding a million keys gets them all by one full copy. The time it took
// is logged, not asserted: the deadline is only a hang detector.
func TestFullResyncOfAMillionKeys(t *testing.T) {
	t.Parallel()
	const strs, limiters = 900_000, 100_000
	p := mustStart(t, t.TempDir(), "--save", "0")
	start := time.Now()
	pipeline(t, p.addr, strs/1000, func(b []byte, i int) []byte {
		b = append(b, "*2001\r\n$4\r\nMSET\r\n"...)
		for k := i * 1000; k < (i+1)*1000; k++ {
			v := strconv.Itoa(k)
			b = appendBulk(appendBulk(b, "s:"+v), v)
		}
		return b
	})
	pipeline(t, p.addr, limiters, func(b []byte, i int) []byte {
		b = appendBulk(append(b, "*6\r\n$11\r\nCL.THROTTLE\r\n"...), "cl:"+strconv.Itoa(i))
		return appendBulk(append(b, "$2\r\n99\r\n$3\r\n100\r\n$4\r\n3600\r\n"...), strconv.Itoa(1+i%7))
	})
	pc := p.client(t)
	require.Equal(t, int64(strs+limiters), dbsize(t, pc))
	loaded := time.Since(start)

	_, port, _ := net.SplitHostPort(p.addr)
	start = time.Now()
	r := mustStart(t, t.TempDir(), "--save", "0", "--replicaof", "127.0.0.1 "+port)
	rc := r.client(t)
	eventually(t, 60*time.Second, func() bool {
		return infoOf(t, rc, "replication", "master_link_status") == "up" && dbsize(t, rc) == strs+limiters
	}, func() string {
		return fmt.Sprintf("the replica has %d keys, link %s\n%s", dbsize(t, rc), infoOf(t, rc, "replication", "master_link_status"), r.log)
	})
	copied := time.Since(start)
	t.Logf("%d keys loaded in %v; a new replica had them all, link up, %v after it started", strs+limiters, loaded.Round(time.Millisecond), copied.Round(time.Millisecond))
	require.Equal(t, "1", infoOf(t, pc, "stats", "sync_full"))
	for _, k := range []int{0, 1, 449_999, strs - 1} {
		require.Equal(t, strconv.Itoa(k), rc.Get(ctx, fmt.Sprint("s:", k)).Val())
	}
	for _, k := range []int{0, 6, limiters - 1} {
		key := fmt.Sprint("cl:", k)
		require.Equal(t, throttle(t, pc, key, 0), throttle(t, rc, key, 0), "%s's remaining on the replica", key)
	}
}

func appendBulk(b []byte, s string) []byte {
	b = strconv.AppendInt(append(b, '$'), int64(len(s)), 10)
	return append(append(append(b, "\r\n"...), s...), "\r\n"...)
}

// pipeline sends n commands, built by add, on one connection without
// waiting for replies, and checks that none of the replies is an error.
func pipeline(t *testing.T, addr string, n int, add func(b []byte, i int) []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	sent := make(chan error, 1)
	go func() {
		var b []byte
		for i := 0; i < n; i++ {
			b = add(b, i)
			if len(b) > 256<<10 || i == n-1 {
				if _, err := nc.Write(b); err != nil {
					sent <- err
					return
				}
				b = b[:0]
			}
		}
		sent <- nil
	}()
	rd := bufio.NewReaderSize(nc, 64<<10)
	for i := 0; i < n; i++ {
		line, err := readLine(rd)
		require.NoError(t, err)
		if strings.HasPrefix(line, "-") {
			t.Fatalf("reply %d: %s", i, line)
		}
		if strings.HasPrefix(line, "*") { // a limiter's reply: its integers follow
			m, _ := strconv.Atoi(line[1:])
			for j := 0; j < m; j++ {
				_, err := readLine(rd)
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, <-sent)
}
