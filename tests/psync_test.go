package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to a target and cuts them on demand,
// as a network that fails between a replica and its primary: cut closes
// every connection it carries; while held, it closes new ones at once.
type cutProxy struct {
	ln     net.Listener
	target string
	held   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.held.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// cut closes every connection the proxy carries.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// infoInt reads an integer field of INFO section.
func infoInt(t testing.TB, c *redis.Client, section, field string) int64 {
	t.Helper()
	v := infoOf(t, c, section, field)
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "INFO %s %s = %q", section, field, v)
	return n
}

// linkUp waits for a replica's link to its primary.
func linkUp(t testing.TB, c *redis.Client) {
	t.Helper()
	require.Eventually(t, func() bool { return infoOf(t, c, "replication", "master_link_status") == "up" },
		30*time.Second, 5*time.Millisecond, "the replica's link never came up")
}

// writeLoad runs CL.THROTTLE on 1000 keys in pipelines of 50 on c until
// stop is called, which returns the number of writes.
func writeLoad(t testing.TB, c *redis.Client) (stop func() int64) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; {
			pipe := c.Pipeline()
			for j := 0; j < 50; j, i = j+1, i+1 {
				pipe.Do(ctx, "CL.THROTTLE", fmt.Sprintf("load:%d", i%1000), 99, 1000, 60)
			}
			if _, err := pipe.Exec(ctx); err == nil {
				n.Add(50)
			}
		}
	}()
	return func() int64 { cancel(); <-done; return n.Load() }
}

// caughtUp waits until WAIT 1 says the replica has every write, then
// compares the keyspaces.
func caughtUp(t testing.TB, pc *redis.Client, p, r *testServer) {
	t.Helper()
	n, err := pc.Do(ctx, "WAIT", 1, 0).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, keyspaceOf(t, p.srv.Engine()), keyspaceOf(t, r.srv.Engine()), "the replica's keyspace")
}

// TestLinkCutUnderLoadContinues: a link cut again and again while the
// primary takes writes is continued each time from the backlog
// (+CONTINUE): sync_partial_ok counts every cut, sync_full only the first
// sync, and the replica ends with the primary's keyspace.
func TestLinkCutUnderLoadContinues(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	proxy := newCutProxy(t, p.addr)
	host, port, _ := net.SplitHostPort(proxy.addr())
	require.NoError(t, rc.Do(ctx, "REPLICAOF", host, port).Err())
	linkUp(t, rc)
	stop := writeLoad(t, pc)
	const cuts = 5
	for i := 0; i < cuts; i++ {
		time.Sleep(50 * time.Millisecond) // writes flow on the link
		before := infoInt(t, pc, "stats", "sync_partial_ok")
		proxy.cut()
		require.Eventually(t, func() bool { return infoInt(t, pc, "stats", "sync_partial_ok") > before },
			30*time.Second, 5*time.Millisecond, "cut %d: the replica did not continue", i+1)
	}
	writes := stop()
	caughtUp(t, pc, p, r)
	t.Logf("%d writes, %d cuts", writes, cuts)
	require.Equal(t, int64(1), infoInt(t, pc, "stats", "sync_full"), "a cut cost a full copy")
	require.Equal(t, int64(cuts), infoInt(t, pc, "stats", "sync_partial_ok"))
}

// TestBacklogOverflowResyncsFully: a replica kept away while the primary
// writes more than its backlog holds cannot continue; it gets a full copy
// and ends with the primary's keyspace.
func TestBacklogOverflowResyncsFully(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	require.NoError(t, pc.ConfigSet(ctx, "repl-backlog-size", "16kb").Err())
	proxy := newCutProxy(t, p.addr)
	host, port, _ := net.SplitHostPort(proxy.addr())
	require.NoError(t, rc.Do(ctx, "REPLICAOF", host, port).Err())
	linkUp(t, rc)
	errs := infoInt(t, pc, "stats", "sync_partial_err") // 1: REPLICAOF at run time asks to continue the server's own history
	proxy.held.Store(true)
	proxy.cut()
	require.Eventually(t, func() bool { return infoOf(t, rc, "replication", "master_link_status") == "down" },
		30*time.Second, 5*time.Millisecond)
	start := infoInt(t, pc, "replication", "master_repl_offset")
	// More than the backlog and the 64 KB pieces the stream drops whole.
	fillKeys(t, pc, "over", 12000)
	require.Greater(t, infoInt(t, pc, "replication", "master_repl_offset")-start, int64(192<<10))
	proxy.held.Store(false)
	defer r.stepping(10 * time.Millisecond)() // the replica's retries back off on its clock
	linkUp(t, rc)
	caughtUp(t, pc, p, r)
	require.Equal(t, int64(2), infoInt(t, pc, "stats", "sync_full"))
	require.Equal(t, int64(0), infoInt(t, pc, "stats", "sync_partial_ok"))
	require.Equal(t, errs+1, infoInt(t, pc, "stats", "sync_partial_err"), "the replica asked to continue, as Redis counts it")
}

// TestFirstSyncIsNoPartialError: a replica that starts with replicaof and
// no snapshot asks "PSYNC ? -1", which Redis does not count as a failed
// partial resynchronisation; one made a replica at run time asks to
// continue its own history, which Redis counts. Both on redis-server too.
func TestFirstSyncIsNoPartialError(t *testing.T) {
	t.Parallel()
	type counts struct{ full, err int64 }
	run := func(t *testing.T, start func(replicaof string) *redis.Client, primary *redis.Client, addr string) (counts, counts) {
		host, port, _ := net.SplitHostPort(addr)
		r1 := start(host + " " + port)
		linkUp(t, r1)
		first := counts{infoInt(t, primary, "stats", "sync_full"), infoInt(t, primary, "stats", "sync_partial_err")}
		r2 := start("")
		require.NoError(t, r2.Do(ctx, "REPLICAOF", host, port).Err())
		linkUp(t, r2)
		second := counts{infoInt(t, primary, "stats", "sync_full"), infoInt(t, primary, "stats", "sync_partial_err")}
		return first, second
	}
	t.Run("limitdb", func(t *testing.T) {
		t.Parallel()
		pp := mustStart(t, t.TempDir(), "--save", "0")
		pc := pp.client(t)
		start := func(replicaof string) *redis.Client {
			args := []string{"--save", "0"}
			if replicaof != "" {
				args = append(args, "--replicaof", replicaof)
			}
			return mustStart(t, t.TempDir(), args...).client(t)
		}
		first, second := run(t, start, pc, pp.addr)
		require.Equal(t, counts{1, 0}, first, "sync_full, sync_partial_err after a replica started with replicaof")
		require.Equal(t, counts{2, 1}, second, "after REPLICAOF at run time")
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		pc, port := startRedisTCPArgs(t, "--repl-diskless-sync-delay", "0")
		startReplica := func(replicaof string) *redis.Client {
			if replicaof == "" {
				c, _ := startRedisTCP(t)
				return c
			}
			return startRedisReplica(t, port)
		}
		first, second := run(t, startReplica, pc, "127.0.0.1:"+port)
		require.Equal(t, counts{1, 0}, first)
		require.Equal(t, counts{2, 1}, second)
	})
}

// startRedisReplica runs redis-server with --replicaof 127.0.0.1 port.
func startRedisReplica(t *testing.T, port string) *redis.Client {
	t.Helper()
	c, _ := startRedisTCPArgs(t, "--replicaof", "127.0.0.1", port)
	return c
}

// TestRestartedReplicaContinues: a replica stopped with SIGTERM writes its
// snapshot with the replication ID and offset it holds; started again it
// asks to continue them and gets +CONTINUE. A primary restarted the same
// way keeps its old ID as master_replid2, and its replica continues too.
// The same scenario runs on redis-server (its RDB file's repl-id and
// repl-offset), with the same counts expected of both.
func TestRestartedReplicaContinues(t *testing.T) {
	t.Parallel()
	t.Run("limitdb", func(t *testing.T) {
		t.Parallel()
		pdir, rdir := t.TempDir(), t.TempDir()
		var p, r *proc
		restartScenario(t, restartNodes{
			fill: fillKeys,
			startPrimary: func() (*redis.Client, string) {
				p = mustStart(t, pdir, "--save", "0")
				return p.client(t), p.addr
			},
			stopPrimary: func() int {
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
				return p.wait(t)
			},
			restartPrimary: func() *redis.Client {
				_, port, _ := net.SplitHostPort(p.addr)
				p = startOnPort(t, pdir, port, "--save", "0")
				return p.client(t)
			},
			startReplica: func(primary string) *redis.Client {
				r = mustStart(t, rdir, "--save", "0", "--replicaof", replicaOf(primary))
				return r.client(t)
			},
			stopReplica: func() int {
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
				return r.wait(t)
			},
		})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("redis-server not installed")
		}
		pdir, rdir := t.TempDir(), t.TempDir()
		pport, rport := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
		var p, r *exec.Cmd
		// Redis saves on SIGTERM only with save points set.
		args := []string{"--save", "3600 1", "--repl-diskless-sync-delay", "0"}
		restartScenario(t, restartNodes{
			fill: setKeys,
			startPrimary: func() (*redis.Client, string) {
				var c *redis.Client
				p, c = startRedisOn(t, pdir, pport, args...)
				return c, "127.0.0.1:" + pport
			},
			stopPrimary: func() int { return stopRedis(t, p) },
			restartPrimary: func() *redis.Client {
				var c *redis.Client
				p, c = startRedisOn(t, pdir, pport, args...)
				return c
			},
			startReplica: func(primary string) *redis.Client {
				var c *redis.Client
				host, port, _ := net.SplitHostPort(primary)
				r, c = startRedisOn(t, rdir, rport, append(args, "--replicaof", host, port)...)
				return c
			},
			stopReplica: func() int { return stopRedis(t, r) },
		})
	})
}

// restartNodes is how restartScenario starts and stops a primary and its
// replica, each in its own directory, and writes to the primary.
type restartNodes struct {
	fill           func(t *testing.T, c *redis.Client, prefix string, n int)
	startPrimary   func() (*redis.Client, string)
	stopPrimary    func() int // SIGTERM; the exit code
	restartPrimary func() *redis.Client
	startReplica   func(primary string) *redis.Client // started again the same way after stopReplica
	stopReplica    func() int
}

// restartScenario: a replica stopped with SIGTERM and started again
// continues (sync_partial_ok, no second full copy); then the primary
// restarted on its port keeps its old history as master_replid2 up to
// second_repl_offset, and its replica continues from it.
func restartScenario(t *testing.T, n restartNodes) {
	pc, paddr := n.startPrimary()
	n.fill(t, pc, "a", 500)
	rc := n.startReplica(paddr)
	linkUp(t, rc)
	n.fill(t, pc, "b", 500)
	waitReplicas(t, pc, 1)
	require.Equal(t, 0, n.stopReplica())
	n.fill(t, pc, "c", 500) // written while it is away

	rc = n.startReplica(paddr)
	linkUp(t, rc)
	waitReplicas(t, pc, 1)
	require.Equal(t, int64(1), infoInt(t, pc, "stats", "sync_full"), "the restarted replica needed a full copy")
	require.Equal(t, int64(1), infoInt(t, pc, "stats", "sync_partial_ok"))
	require.Equal(t, int64(0), infoInt(t, pc, "stats", "sync_partial_err"))
	require.Equal(t, dbsize(t, pc), dbsize(t, rc))

	// The primary, restarted on its port, continues its old history.
	oldID := infoOf(t, pc, "replication", "master_replid")
	oldOff := infoInt(t, pc, "replication", "master_repl_offset")
	require.Equal(t, 0, n.stopPrimary())
	pc = n.restartPrimary()
	// Its offset goes on from where it stopped: oldOff, or past it by
	// what a shutdown sends (Redis's REPLCONF GETACK to its replicas).
	off := infoInt(t, pc, "replication", "master_repl_offset")
	require.Equal(t, oldID, infoOf(t, pc, "replication", "master_replid2"))
	require.Equal(t, off+1, infoInt(t, pc, "replication", "second_repl_offset"))
	require.GreaterOrEqual(t, off, oldOff)
	require.Less(t, off, oldOff+1024)
	linkUp(t, rc)
	n.fill(t, pc, "d", 100)
	waitReplicas(t, pc, 1)
	require.Equal(t, int64(0), infoInt(t, pc, "stats", "sync_full"), "the replica of the restarted primary needed a full copy")
	require.Equal(t, int64(1), infoInt(t, pc, "stats", "sync_partial_ok"))
	require.Equal(t, dbsize(t, pc), dbsize(t, rc))
}

// startRedisOn runs redis-server on port with dir as its directory, until
// stopRedis or the test's end.
func startRedisOn(t *testing.T, dir, port string, extra ...string) (*exec.Cmd, *redis.Client) {
	t.Helper()
	cmd := exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1", "--appendonly", "no", "--dir", dir}, extra...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 20*time.Second, 20*time.Millisecond, "redis-server did not start")
	return cmd, c
}

// stopRedis sends redis-server SIGTERM and returns its exit code.
func stopRedis(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	cmd.Wait()
	return cmd.ProcessState.ExitCode()
}

func replicaOf(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return host + " " + port
}

// waitReplicas waits until WAIT n answers n.
func waitReplicas(t testing.TB, c *redis.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := c.Do(ctx, "WAIT", n, 200).Int()
		return err == nil && got == n
	}, 30*time.Second, 10*time.Millisecond, "WAIT %d", n)
}

// startOnPort starts the binary on a given port, retrying while the port
// is still held by the process that just left it.
func startOnPort(t *testing.T, dir, port string, extra ...string) *proc {
	t.Helper()
	var p *proc
	require.Eventually(t, func() bool {
		var err error
		p, err = startProcArgs(t, append([]string{"--port", port, "--dir", dir}, extra...))
		return err == nil
	}, 20*time.Second, 100*time.Millisecond)
	return p
}

// TestClientKillMasterContinues: on a replica, CLIENT KILL TYPE master
// cuts the link to the primary and answers 1; the replica reconnects and
// continues (+CONTINUE), and CLIENT LIST shows the link as Redis shows its
// master client (flags=M, the primary's address, user=(superuser)), under
// the same ID after the partial resynchronisation. A USER filter never
// matches it, and a primary has none. The same steps on redis-server.
func TestClientKillMasterContinues(t *testing.T) {
	t.Parallel()
	type result struct {
		Killed, KilledByUser, KilledOnPrimary int64
		Line, LineAfter                       map[string]string // the master client's fields that do not vary
		SameID                                bool
		SyncFull, PartialOK                   int64
		Equal                                 bool
	}
	masterLine := func(t *testing.T, rc *redis.Client) map[string]string {
		t.Helper()
		list, err := rc.Do(ctx, "CLIENT", "LIST").Text()
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			f := map[string]string{}
			for _, kv := range strings.Fields(line) {
				k, v, _ := strings.Cut(kv, "=")
				f[k] = v
			}
			if strings.Contains(f["flags"], "M") {
				return f
			}
		}
		return nil
	}
	run := func(t *testing.T, pc, rc *redis.Client, paddr string) result {
		require.Eventually(t, func() bool { return masterLine(t, rc) != nil }, 30*time.Second, 10*time.Millisecond, "no master client listed")
		setKeys(t, pc, "a", 200)
		waitReplicas(t, pc, 1)
		var res result
		before := masterLine(t, rc)
		require.Equal(t, paddr, before["addr"])
		res.Line = map[string]string{"flags": before["flags"], "user": before["user"], "db": before["db"], "multi": before["multi"]}
		res.KilledByUser = rc.Do(ctx, "CLIENT", "KILL", "USER", "default", "TYPE", "master").Val().(int64)
		res.KilledOnPrimary = pc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Val().(int64)
		partial := infoInt(t, pc, "stats", "sync_partial_ok")
		res.Killed = rc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Val().(int64)
		require.Eventually(t, func() bool { return infoInt(t, pc, "stats", "sync_partial_ok") > partial },
			30*time.Second, 10*time.Millisecond, "the replica did not continue")
		linkUp(t, rc)
		setKeys(t, pc, "b", 200)
		waitReplicas(t, pc, 1)
		after := masterLine(t, rc)
		require.NotNil(t, after)
		res.LineAfter = map[string]string{"flags": after["flags"], "user": after["user"]}
		res.SameID = after["id"] == before["id"]
		res.SyncFull, res.PartialOK = infoInt(t, pc, "stats", "sync_full"), infoInt(t, pc, "stats", "sync_partial_ok")
		res.Equal = dbsize(t, pc) == dbsize(t, rc)
		return res
	}
	var mu sync.Mutex
	results := map[string]result{}
	t.Run("limitdb", func(t *testing.T) {
		p, r := startServer(t), startServer(t)
		pc, rc := p.client(t, 2), r.client(t, 2)
		host, port, _ := net.SplitHostPort(p.addr)
		require.NoError(t, rc.Do(ctx, "REPLICAOF", host, port).Err())
		res := run(t, pc, rc, p.addr)
		mu.Lock()
		results["limitdb"] = res
		mu.Unlock()
	})
	t.Run("redis", func(t *testing.T) {
		pc, port := startRedisTCPArgs(t, "--repl-diskless-sync-delay", "0")
		rc := startRedisReplica(t, port)
		res := run(t, pc, rc, "127.0.0.1:"+port)
		mu.Lock()
		results["redis"] = res
		mu.Unlock()
	})
	want := result{Killed: 1, Line: map[string]string{"flags": "M", "user": "(superuser)", "db": "0", "multi": "-1"},
		LineAfter: map[string]string{"flags": "M", "user": "(superuser)"}, SameID: true, SyncFull: 1, PartialOK: 1, Equal: true}
	if _, ok := results["redis"]; ok {
		require.Equal(t, want, results["redis"], "redis-server")
	}
	require.Equal(t, want, results["limitdb"], "limitdb")
}

// setKeys SETs n keys prefix0.. in one pipeline: writes both limitdb and
// redis-server take.
func setKeys(t *testing.T, c *redis.Client, prefix string, n int) {
	t.Helper()
	pipe := c.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(ctx, prefix+strconv.Itoa(i), i, 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

// TestBacklogTTLFreesTheBacklog: a primary whose replicas have gone keeps
// its backlog while repl-backlog-ttl is 0, and frees it once it has been
// alone for longer than a repl-backlog-ttl that is not: INFO replication
// then shows no backlog and a new replication ID with none before it, and
// the replica that comes back gets a full copy and a new backlog from the
// offset the primary is at. The same steps on redis-server, where the
// cron runs on real time (a ttl of 1 s there, an hour stepped on the fake
// clock here); CONFIG GET's default is the same.
func TestBacklogTTLFreesTheBacklog(t *testing.T) {
	t.Parallel()
	type backlog struct {
		Active, FirstByte, HistLen int64
		First                      string // FirstByte: "1", "offset+1", "0" or the number
	}
	type result struct {
		Default                         string
		Before, Attached, Kept, Freed   backlog
		NewID, ID2Cleared, FullOnReturn bool
		Reattached                      backlog
	}
	read := func(t *testing.T, c *redis.Client) backlog {
		t.Helper()
		b := backlog{Active: infoInt(t, c, "replication", "repl_backlog_active"),
			FirstByte: infoInt(t, c, "replication", "repl_backlog_first_byte_offset"),
			HistLen:   infoInt(t, c, "replication", "repl_backlog_histlen")}
		switch off := infoInt(t, c, "replication", "master_repl_offset"); {
		case b.FirstByte == 0:
			b.First = "0"
		case b.FirstByte == 1:
			b.First = "1"
		case b.FirstByte == off+1:
			b.First = "offset+1"
		default:
			b.First = "other"
		}
		b.FirstByte = 0
		if b.HistLen > 0 {
			b.HistLen = 1 // some
		}
		return b
	}
	// run takes the primary and replica through the steps; alone waits
	// until the primary has been alone past ttl (stepping a clock or
	// sleeping), idle the same without expecting a change.
	run := func(t *testing.T, pc, rc *redis.Client, paddr string, setTTL func(v string), idle, alone func(cond func() bool)) result {
		var res result
		res.Default = pc.ConfigGet(ctx, "repl-backlog-ttl").Val()["repl-backlog-ttl"]
		res.Before = read(t, pc)
		host, port, _ := net.SplitHostPort(paddr)
		require.NoError(t, rc.Do(ctx, "REPLICAOF", host, port).Err())
		linkUp(t, rc)
		setKeys(t, pc, "a", 100)
		waitReplicas(t, pc, 1)
		res.Attached = read(t, pc)
		setTTL("0")
		require.NoError(t, rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
		require.Eventually(t, func() bool { return infoInt(t, pc, "replication", "connected_slaves") == 0 },
			30*time.Second, 10*time.Millisecond)
		id := infoOf(t, pc, "replication", "master_replid")
		idle(func() bool { return false })
		res.Kept = read(t, pc)
		setTTL(strconv.Itoa(1))
		alone(func() bool { return infoInt(t, pc, "replication", "repl_backlog_active") == 0 })
		res.Freed = read(t, pc)
		res.NewID = infoOf(t, pc, "replication", "master_replid") != id
		res.ID2Cleared = infoOf(t, pc, "replication", "master_replid2") == strings.Repeat("0", 40) &&
			infoInt(t, pc, "replication", "second_repl_offset") == -1
		full := infoInt(t, pc, "stats", "sync_full")
		require.NoError(t, rc.Do(ctx, "REPLICAOF", host, port).Err())
		linkUp(t, rc)
		res.Reattached = read(t, pc)
		res.FullOnReturn = infoInt(t, pc, "stats", "sync_full") == full+1
		return res
	}
	var mu sync.Mutex
	results := map[string]result{}
	t.Run("limitdb", func(t *testing.T) {
		p, r := startServer(t), startServer(t)
		pc, rc := p.client(t, 2), r.client(t, 2)
		setTTL := func(v string) {
			if v == "1" {
				v = "3600"
			}
			require.NoError(t, pc.ConfigSet(ctx, "repl-backlog-ttl", v).Err())
		}
		step := func(d time.Duration) {
			p.clk.Advance(d)
			require.True(t, p.clk.WaitForTicksTaken(30*time.Second))
		}
		idle := func(func() bool) {
			step(time.Second) // the cron sees the primary alone
			step(2 * time.Hour)
			step(time.Second)
		}
		alone := func(cond func() bool) {
			require.Eventually(t, func() bool { step(time.Second); return cond() }, 30*time.Second, 10*time.Millisecond)
		}
		res := run(t, pc, rc, p.addr, setTTL, idle, alone)
		mu.Lock()
		results["limitdb"] = res
		mu.Unlock()
	})
	t.Run("redis", func(t *testing.T) {
		pc, port := startRedisTCPArgs(t, "--repl-diskless-sync-delay", "0")
		rc, _ := startRedisTCP(t)
		setTTL := func(v string) { require.NoError(t, pc.ConfigSet(ctx, "repl-backlog-ttl", v).Err()) }
		idle := func(func() bool) { time.Sleep(2500 * time.Millisecond) } // more than 2 rounds of its cron
		alone := func(cond func() bool) { require.Eventually(t, cond, 30*time.Second, 50*time.Millisecond) }
		res := run(t, pc, rc, "127.0.0.1:"+port, setTTL, idle, alone)
		mu.Lock()
		results["redis"] = res
		mu.Unlock()
	})
	want := result{Default: "3600",
		Before: backlog{First: "0"}, Attached: backlog{Active: 1, First: "1", HistLen: 1},
		Kept: backlog{Active: 1, First: "1", HistLen: 1}, Freed: backlog{First: "0"},
		NewID: true, ID2Cleared: true, FullOnReturn: true,
		Reattached: backlog{Active: 1, First: "offset+1"}}
	if res, ok := results["redis"]; ok {
		require.Equal(t, want, res, "redis-server")
	}
	require.Equal(t, want, results["limitdb"], "limitdb")
}
