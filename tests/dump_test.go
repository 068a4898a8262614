package tests

import (
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// hostPort splits a test server's address for MIGRATE.
func hostPort(t testing.TB, addr string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return host, port
}

// outcome is a command's outcome as the comparisons read it: its value, or
// "error: <text>".
func outcome(c *redis.Client, args ...any) string {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprint(v)
}

// TestMigrate moves keys between two limitdb nodes: every form of MIGRATE,
// and what each leaves on both sides.
func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before [][]any // on the source, then on the target (args prefixed "dst:")
		flags  []any   // after MIGRATE host port key|"" db timeout
		key    string  // "" with KEYS in flags
		want   string
		src    map[string]string // GET on the source afterwards ("" absent)
		dst    map[string]string // GET on the target afterwards
	}{
		{"one key", [][]any{{"SET", "k", "v"}}, nil, "k", "OK",
			map[string]string{"k": ""}, map[string]string{"k": "v"}},
		{"keys", [][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, []any{"KEYS", "a", "absent", "b"}, "", "OK",
			map[string]string{"a": "", "b": ""}, map[string]string{"a": "1", "b": "2", "absent": ""}},
		{"copy", [][]any{{"SET", "k", "v"}}, []any{"COPY"}, "k", "OK",
			map[string]string{"k": "v"}, map[string]string{"k": "v"}},
		{"busy key", [][]any{{"SET", "k", "new"}, {"dst:SET", "k", "old"}}, nil, "k",
			"error: ERR Target instance replied with error: BUSYKEY Target key name already exists.",
			map[string]string{"k": "new"}, map[string]string{"k": "old"}},
		{"busy key among others", [][]any{{"SET", "a", "1"}, {"SET", "b", "2"}, {"dst:SET", "b", "old"}}, []any{"KEYS", "a", "b"}, "",
			"error: ERR Target instance replied with error: BUSYKEY Target key name already exists.",
			map[string]string{"a": "", "b": "2"}, map[string]string{"a": "1", "b": "old"}},
		{"replace", [][]any{{"SET", "k", "new"}, {"dst:SET", "k", "old"}}, []any{"REPLACE"}, "k", "OK",
			map[string]string{"k": ""}, map[string]string{"k": "new"}},
		{"no key", nil, nil, "k", "NOKEY", map[string]string{"k": ""}, map[string]string{"k": ""}},
		{"db 1", [][]any{{"SET", "k", "v"}}, nil, "k:db1",
			"error: ERR DB index is out of range",
			map[string]string{"k": "v"}, map[string]string{"k": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, dst := startServer(t), startServer(t)
			sc, dc := src.client(t, 2), dst.client(t, 2)
			for _, cmd := range tc.before {
				c := sc
				if name := cmd[0].(string); strings.HasPrefix(name, "dst:") {
					c, cmd = dc, append([]any{strings.TrimPrefix(name, "dst:")}, cmd[1:]...)
				}
				require.NoError(t, c.Do(ctx, cmd...).Err(), "%v", cmd)
			}
			host, port := hostPort(t, dst.addr)
			key, db := tc.key, "0"
			if k, ok := strings.CutSuffix(key, ":db1"); ok {
				key, db = k, "1"
			}
			args := append([]any{"MIGRATE", host, port, key, db, 5000}, tc.flags...)
			require.Equal(t, tc.want, outcome(sc, args...))
			for side, c := range map[string]*redis.Client{"source": sc, "target": dc} {
				want := tc.src
				if side == "target" {
					want = tc.dst
				}
				for k, v := range want {
					got, err := c.Get(ctx, k).Result()
					if err == redis.Nil {
						got = ""
					}
					require.Equal(t, v, got, "GET %s on the %s", k, side)
				}
			}
		})
	}
}

// TestMigrateKeepsLimits: a limiter and a string moved with MIGRATE keep
// their TTL to the millisecond, and the limiter answers on the target as
// it does on a COPY left on the source.
func TestMigrateKeepsLimits(t *testing.T) {
	t.Parallel()
	src, dst := startServer(t), startServer(t)
	sc, dc := src.client(t, 2), dst.client(t, 3)
	throttle := []any{"CL.THROTTLE", "cl", 3, 10, 60, 2}
	require.NoError(t, sc.Do(ctx, throttle...).Err())
	require.NoError(t, sc.Do(ctx, "SET", "s", "v", "PX", 123456).Err())
	host, port := hostPort(t, dst.addr)
	require.Equal(t, "OK", outcome(sc, "MIGRATE", host, port, "", 0, 5000, "COPY", "KEYS", "cl", "s"))
	for _, k := range []string{"cl", "s"} {
		a, b := sc.PTTL(ctx, k).Val(), dc.PTTL(ctx, k).Val()
		require.Positive(t, a)
		require.InDelta(t, a.Milliseconds(), b.Milliseconds(), 2, "PTTL %s: source %v, target %v", k, a, b)
	}
	for step := 0; step < 6; step++ {
		require.Equal(t, ints(t, sc.Do(ctx, throttle...)), ints(t, dc.Do(ctx, throttle...)), "step %d", step)
		src.clk.Advance(7 * time.Second)
		dst.clk.Advance(7 * time.Second)
	}
}

// TestMigrateAuthAndFailures: AUTH and AUTH2 reach a target that wants a
// password; a wrong one or none is the target's error passed on; a port
// nobody listens on, or a target silent past the timeout, is IOERR; the
// key stays unless the target took it.
func TestMigrateAuthAndFailures(t *testing.T) {
	t.Parallel()
	dst, _ := startWith(t, func(c *config.Config) { c.RequirePass = "pw" }, nil)
	host, port := hostPort(t, dst.addr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, closed := hostPort(t, ln.Addr().String())
	ln.Close()
	// A target that takes the connection and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	_, mute := hostPort(t, silent.Addr().String())
	for _, tc := range []struct {
		name  string
		port  string
		flags []any
		want  string
	}{
		{"auth", port, []any{"AUTH", "pw"}, "OK"},
		{"auth2", port, []any{"AUTH2", "default", "pw"}, "OK"},
		{"no auth", port, nil, "error: ERR Target instance replied with error: NOAUTH Authentication required."},
		{"wrong password", port, []any{"AUTH", "nope"}, "error: ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."},
		{"refused", closed, nil, "error: IOERR error or timeout connecting to the client"},
		{"no answer", mute, nil, "error: IOERR error or timeout reading to target instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := startServer(t)
			sc := src.client(t, 2)
			require.NoError(t, sc.Set(ctx, "k:"+tc.name, "v", 0).Err())
			args := append([]any{"MIGRATE", host, tc.port, "k:" + tc.name, 0, 200}, tc.flags...)
			got := outcome(sc, args...)
			require.Equal(t, tc.want, got)
			left := sc.Exists(ctx, "k:"+tc.name).Val()
			require.Equal(t, map[bool]int64{true: 0, false: 1}[got == "OK"], left, "the key on the source")
		})
	}
}

// TestMigrateReachesReplicas: a replica of the source sees the key
// deleted, a replica of the target sees it restored.
func TestMigrateReachesReplicas(t *testing.T) {
	t.Parallel()
	src, dst, srcR, dstR := startServer(t), startServer(t), startServer(t), startServer(t)
	sc, dc, src2, dst2 := src.client(t, 2), dst.client(t, 2), srcR.client(t, 2), dstR.client(t, 2)
	replicate(t, src2, src)
	replicate(t, dst2, dst)
	require.NoError(t, sc.Do(ctx, "TB.TAKE", "tb", 10, 1, "1s", 4).Err())
	require.NoError(t, sc.Do(ctx, "WAIT", 1, 5000).Err())
	require.Equal(t, int64(1), src2.Exists(ctx, "tb").Val())
	host, port := hostPort(t, dst.addr)
	require.Equal(t, "OK", outcome(sc, "MIGRATE", host, port, "tb", 0, 5000))
	for _, c := range []*redis.Client{sc, dc} {
		n, err := c.Do(ctx, "WAIT", 1, 5000).Int()
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	require.Equal(t, int64(0), src2.Exists(ctx, "tb").Val(), "the source's replica still has the key")
	require.Equal(t, keyspaceOf(t, dst.srv.Engine()), keyspaceOf(t, dstR.srv.Engine()), "the target's replica")
	require.Contains(t, keyspaceOf(t, dstR.srv.Engine()), "tb")
}

// startRedisTCP runs redis-server on a loopback TCP port (MIGRATE's target
// must be one) and returns a client and its port.
func startRedisTCP(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return startRedisTCPArgs(t)
}

// startRedisTCPArgs is startRedisTCP with more arguments for redis-server.
func startRedisTCPArgs(t *testing.T, extra ...string) (*redis.Client, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port := hostPort(t, ln.Addr().String())
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond, "redis-server did not start")
	return c, port
}

// TestDumpRestoreMigrateMatchRedis: the same DUMP, RESTORE and MIGRATE
// steps answer the same on a pair of redis-servers and a pair of limitdb
// nodes: errors, OK, NOKEY and nil. Payloads differ (each its own format),
// so RESTORE takes the payload its own server dumped; PAYLOAD stands for it
// and PORT for the target's port.
func TestDumpRestoreMigrateMatchRedis(t *testing.T) {
	t.Parallel()
	rs, _ := startRedisTCP(t)
	rd, rport := startRedisTCP(t)
	ls, ld := startServer(t), startServer(t)
	lsc, ldc := ls.client(t, 2), ld.client(t, 2)
	_, lport := hostPort(t, ld.addr)
	steps := [][]any{
		{"SET", "k", "v"},
		{"DUMP", "absent"},
		{"RESTORE", "k", 0, "PAYLOAD"},
		{"RESTORE", "k", -1, "junk"},
		{"RESTORE", "n", -1, "PAYLOAD"},
		{"RESTORE", "n", "x", "PAYLOAD"},
		{"RESTORE", "n", 0, "junk"},
		{"RESTORE", "n", 0, "PAYLOAD", "IDLETIME", -1},
		{"RESTORE", "n", 0, "PAYLOAD", "FREQ", 256},
		{"RESTORE", "n", 0, "PAYLOAD", "IDLETIME", 1, "FREQ", 1},
		{"RESTORE", "n", 0, "PAYLOAD", "BOGUS"},
		{"RESTORE", "n", 0, "PAYLOAD", "IDLETIME", 5},
		{"RESTORE", "n", 0, "PAYLOAD", "REPLACE", "FREQ", 3},
		{"RESTORE", "n", 1, "PAYLOAD", "REPLACE", "ABSTTL"},
		{"EXISTS", "n"},
		{"RESTORE-ASKING", "n", 0, "PAYLOAD"},
		{"RESTORE", "n"},
		{"MIGRATE", "127.0.0.1", "PORT", "absent", 0, 1000},
		{"MIGRATE", "127.0.0.1", "PORT", "", 0, 1000, "KEYS", "absent"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "KEYS", "k"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "BOGUS"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, "x"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "AUTH"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "COPY"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "COPY"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "REPLACE"},
		{"EXISTS", "k"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000},
		{"SET", "k", "v2"},
		{"MIGRATE", "127.0.0.1", "PORT", "k", 0, 1000, "AUTH", "pw"},
		{"EXISTS", "k"},
	}
	run := func(c *redis.Client, port string, payload string, step []any) string {
		args := make([]any, len(step))
		for i, a := range step {
			switch a {
			case "PAYLOAD":
				a = payload
			case "PORT":
				a = port
			}
			args[i] = a
		}
		return outcome(c, args...)
	}
	for i, step := range steps {
		rp, lp := rs.Dump(ctx, "k").Val(), lsc.Dump(ctx, "k").Val()
		want, got := run(rs, rport, rp, step), run(lsc, lport, lp, step)
		require.Equal(t, want, got, "step %d: %v", i, step)
	}
	// The targets hold what was moved, the same on both.
	require.Equal(t, outcome(rd, "GET", "k"), outcome(ldc, "GET", "k"))
	require.Equal(t, outcome(rd, "DBSIZE"), outcome(ldc, "DBSIZE"))
	// A payload of one is refused by the other, with the same error.
	rp, lp := rd.Dump(ctx, "k").Val(), ldc.Dump(ctx, "k").Val()
	require.NotEmpty(t, rp)
	require.NotEmpty(t, lp)
	require.Equal(t, "error: ERR DUMP payload version or checksum are wrong", outcome(ldc, "RESTORE", "x", 0, rp))
	require.Equal(t, "error: ERR DUMP payload version or checksum are wrong", outcome(rd, "RESTORE", "x", 0, lp))
}

// TestMigrateInClusterMode: a node in cluster mode sends RESTORE-ASKING,
// as Redis Cluster's MIGRATE does, and the target restores the keys; a
// policy's state moved answers there as it does on its source.
func TestMigrateInClusterMode(t *testing.T) {
	t.Parallel()
	src, dst := startClusterServer(t), startClusterServer(t)
	sc, dc := src.client(t, 2), dst.client(t, 2)
	require.NoError(t, sc.Do(ctx, "RL.HIT", "api", "{u1}").Err())
	require.NoError(t, sc.Set(ctx, "{u1}s", "v", 0).Err())
	host, port := hostPort(t, dst.addr)
	require.Equal(t, "error: CROSSSLOT Keys in request don't hash to the same slot",
		outcome(sc, "MIGRATE", host, port, "", 0, 5000, "KEYS", "rl:api:{u1}", "other"))
	require.Equal(t, "OK", outcome(sc, "MIGRATE", host, port, "", 0, 5000, "COPY", "KEYS", "rl:api:{u1}", "{u1}s"))
	require.Equal(t, "v", dc.Get(ctx, "{u1}s").Val())
	require.Contains(t, infoOf(t, dc, "commandstats", "cmdstat_restore-asking"), "calls=2,")
	require.Equal(t, ints(t, sc.Do(ctx, "RL.HIT", "api", "{u1}")), ints(t, dc.Do(ctx, "RL.HIT", "api", "{u1}")))
}

// TestDumpCommandInfo: COMMAND INFO's arity, key positions and ACL
// categories are Redis's; so are the flags, but for two on purpose:
// MIGRATE is no_multi here, and RESTORE-ASKING lacks Redis's "asking"
// (the cluster layer gives it that meaning).
func TestDumpCommandInfo(t *testing.T) {
	t.Parallel()
	ours, theirs := startServer(t).client(t, 2), startRedis(t)
	for _, name := range []string{"dump", "restore", "restore-asking", "migrate"} {
		want, got := commandInfoAll(t, theirs, name), commandInfoAll(t, ours, name)
		switch name {
		case "migrate":
			want.flags = strings.Replace(want.flags, "movablekeys", "movablekeys no_multi", 1)
		case "restore-asking":
			want.flags = strings.Replace(want.flags, "asking ", "", 1)
		}
		require.Equal(t, want, got, "COMMAND INFO %s", name)
	}
}

type cmdInfo struct{ arity, flags, keys, categories string }

// commandInfoAll is a command's arity, key positions, and sorted flags and
// ACL categories.
func commandInfoAll(t *testing.T, c *redis.Client, name string) cmdInfo {
	t.Helper()
	v, err := c.Do(ctx, "COMMAND", "INFO", name).Slice()
	require.NoError(t, err)
	info, ok := v[0].([]any)
	require.True(t, ok, "COMMAND INFO %s: %v", name, v)
	sorted := func(x any) string {
		var out []string
		for _, f := range x.([]any) {
			out = append(out, fmt.Sprint(f))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	return cmdInfo{fmt.Sprint(info[1]), sorted(info[2]), fmt.Sprint(info[3:6]), sorted(info[6])}
}

// TestMigrateEveryKind: a key of every kind moved with MIGRATE COPY is the
// same on the target (its DUMP byte for byte, its PTTL), and the next
// command answers the same on both sides, now and 1.5 s later.
func TestMigrateEveryKind(t *testing.T) {
	t.Parallel()
	src, dst := startServer(t), startServer(t)
	sc, dc := src.client(t, 2), dst.client(t, 2)
	for _, c := range []*redis.Client{sc, dc} {
		require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p", "token_bucket", 5, "10s").Err())
	}
	kinds := []struct {
		key         string
		setup, next []any
	}{
		{"str", []any{"SET", "str", "v", "EX", 100}, []any{"GET", "str"}},
		{"cl", []any{"CL.THROTTLE", "cl", 2, 3, 60, 2}, []any{"CL.THROTTLE", "cl", 2, 3, 60}},
		{"gcra", []any{"GCRA", "gcra", 4, 2, "1.5"}, []any{"GCRA", "gcra", 4, 2, "1.5"}},
		{"tb", []any{"TB.TAKE", "tb", 5, 1, "1s", 4}, []any{"TB.TAKE", "tb", 5, 1, "1s"}},
		{"lb", []any{"LB.QUEUE", "lb", 5, 2, "1s", 3}, []any{"LB.QUEUE", "lb", 5, 2, "1s"}},
		{"fw", []any{"FW.INCR", "fw", 3, "10s", 2}, []any{"FW.INCR", "fw", 3, "10s"}},
		{"sw", []any{"SW.INCR", "sw", 5, "2s", 3, "PRECISION", 4}, []any{"SW.INCR", "sw", 5, "2s", 1, "PRECISION", 4}},
		{"sl", []any{"SL.INCR", "sl", 4, "2s", 3}, []any{"SL.INCR", "sl", 4, "2s"}},
		{"rl:p:u", []any{"RL.HIT", "p", "u", 3}, []any{"RL.HIT", "p", "u"}},
		{"h", []any{"HSET", "h", "tokens", 5, "ts", 17}, []any{"HINCRBY", "h", "tokens", -1}},
		{"s", []any{"SADD", "s", 3, 1, "word"}, []any{"SMISMEMBER", "s", 1, 2, 3, "word"}},
		{"z", []any{"ZADD", "z", 1.5, "a", -2, "b"}, []any{"ZRANGE", "z", 0, -1, "WITHSCORES"}},
		{"l", []any{"RPUSH", "l", "a", "", "c"}, []any{"LRANGE", "l", 0, -1}},

		{"cw", []any{"SW.INCR", "cw", 5, "day", 3, "TZ", "America/New_York"}, []any{"SW.INCR", "cw", 5, "day", "TZ", "America/New_York"}},
		{"rl:p:r", []any{"RL.RESERVE", "p", "r", 3}, []any{"RL.HIT", "p", "r"}},

		{"lease", []any{"CL.ACQUIRE", "lease", 2, "2s", "a"}, []any{"CL.ACQUIRE", "lease", 2, "2s", "b"}},
	}
	args := []any{"MIGRATE", "", "", "", 0, 5000, "COPY", "KEYS"}
	args[1], args[2] = hostPort(t, dst.addr)
	for _, k := range kinds {
		require.NoError(t, sc.Do(ctx, k.setup...).Err(), "%v", k.setup)
		args = append(args, k.key)
	}
	require.Equal(t, "OK", outcome(sc, args...))
	for _, k := range kinds {
		require.Equal(t, sc.Dump(ctx, k.key).Val(), dc.Dump(ctx, k.key).Val(), "DUMP %s", k.key)
		require.Equal(t, sc.PTTL(ctx, k.key).Val(), dc.PTTL(ctx, k.key).Val(), "PTTL %s", k.key)
	}
	for round := 0; round < 2; round++ {
		for _, k := range kinds {
			require.Equal(t, outcome(sc, k.next...), outcome(dc, k.next...), "round %d: %v", round, k.next)
		}
		src.clk.Advance(1500 * time.Millisecond)
		dst.clk.Advance(1500 * time.Millisecond)
	}
}
