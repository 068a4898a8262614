package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ---- every kind's state round-trips exactly (in process, fake clock) ------

// roundTrip lists, per kind, commands that build state before the save and
// commands that read and change it after. Kinds whose commands this build
// does not have yet are skipped, so the table picks algorithms up as they
// land; a kind with no row at all fails the test.
var roundTrip = map[engine.Kind]struct {
	before, after [][]any
}{
	engine.KindGCRA: {
		before: [][]any{{"CL.THROTTLE", "{k}", 5, 10, 60, 3}, {"GCRA", "{k}2", 4, 2, "1.5", "TOKENS", 2}},
		after:  [][]any{{"CL.THROTTLE", "{k}", 5, 10, 60, 0}, {"CL.THROTTLE", "{k}", 5, 10, 60, 2}, {"CL.THROTTLE", "{k}", 5, 10, 60, 9}, {"GCRA", "{k}2", 4, 2, "1.5"}},
	},
	engine.KindTokenBucket: {
		before: [][]any{{"TB.TAKE", "{k}", 10, 2, "1s", 7}},
		after:  [][]any{{"TB.TAKE", "{k}", 10, 2, "1s", 0}, {"TB.TAKE", "{k}", 10, 2, "1s", 4}, {"TB.TAKE", "{k}", 10, 2, "1s", 1}},
	},
	engine.KindLeakyQueue: {
		before: [][]any{{"LB.QUEUE", "{k}", 5, 2, "1s"}, {"LB.QUEUE", "{k}", 5, 2, "1s", 2}},
		after:  [][]any{{"LB.QUEUE", "{k}", 5, 2, "1s", 0}, {"LB.QUEUE", "{k}", 5, 2, "1s"}, {"LB.QUEUE", "{k}", 5, 2, "1s", 3}},
	},
	engine.KindFixedWindow: {
		before: [][]any{{"FW.INCR", "{k}", 10, "1m", 4}},
		after:  [][]any{{"FW.INCR", "{k}", 10, "1m", 0}, {"FW.INCR", "{k}", 10, "1m", 6}, {"FW.INCR", "{k}", 10, "1m"}},
	},
	engine.KindSlidingWindow: {
		before: [][]any{{"SW.INCR", "{k}", 10, "1m", 4}},
		after:  [][]any{{"SW.INCR", "{k}", 10, "1m", 0}, {"SW.INCR", "{k}", 10, "1m", 5}, {"SW.INCR", "{k}", 10, "1m", 3}},
	},
	engine.KindSlidingLog: {
		before: [][]any{{"SL.INCR", "{k}", 5, "10s"}, {"SL.INCR", "{k}", 5, "10s", 2}},
		after:  [][]any{{"SL.INCR", "{k}", 5, "10s", 0}, {"SL.INCR", "{k}", 5, "10s", 2}, {"SL.INCR", "{k}", 5, "10s"}},
	},
	engine.KindString: {
		before: [][]any{{"SET", "{k}", "41", "EX", 100}, {"INCR", "{k}"}},
		after:  [][]any{{"GET", "{k}"}, {"INCRBY", "{k}", 3}, {"GET", "{k}"}},
	},
	engine.KindHash: {
		before: [][]any{{"HSET", "{k}", "tokens", 5, "ts", 1}, {"HINCRBY", "{k}", "tokens", -1}, {"EXPIRE", "{k}", 100}},
		after:  [][]any{{"HGETALL", "{k}"}, {"HINCRBYFLOAT", "{k}", "ts", "0.5"}, {"HGETALL", "{k}"}},
	},
	engine.KindSet: {
		before: [][]any{{"SADD", "{k}", 3, 1, "x"}, {"EXPIRE", "{k}", 100}},
		after:  [][]any{{"SCARD", "{k}"}, {"SISMEMBER", "{k}", "x"}, {"SREM", "{k}", 1}, {"SMISMEMBER", "{k}", 1, 3}},
	},
	engine.KindZSet: {
		before: [][]any{{"ZADD", "{k}", 1, "a", 2.5, "b", "-inf", "c"}, {"EXPIRE", "{k}", 100}},
		after:  [][]any{{"ZRANGE", "{k}", 0, -1, "WITHSCORES"}, {"ZADD", "{k}", "INCR", 1, "a"}, {"ZPOPMIN", "{k}"}},
	},
	engine.KindList: {
		before: [][]any{{"LPUSH", "{k}", "a", "b", "c"}, {"RPUSH", "{k}", ""}, {"EXPIRE", "{k}", 100}},
		after:  [][]any{{"LRANGE", "{k}", 0, -1}, {"LPOP", "{k}"}, {"LTRIM", "{k}", 0, 1}, {"LRANGE", "{k}", 0, -1}},
	},

	engine.KindCalendarWindow: {
		before: [][]any{{"FW.INCR", "{k}", 10, "month", 4, "TZ", "Europe/Paris"}},
		after:  [][]any{{"FW.INCR", "{k}", 10, "month", 0, "TZ", "Europe/Paris"}, {"SW.INCR", "{k}", 10, "month", 5, "TZ", "Europe/Paris"}, {"FW.INCR", "{k}", 10, "month", "TZ", "Europe/Paris"}},
	},

	// Reservations open on a policy's key (its ids: deadline ms - number).
	engine.KindReserve: {
		before: [][]any{{"RL.POLICY", "SET", "p", "gcra", 10, "1m"}, {"RL.RESERVE", "p", "{k}", 4, "60s"}, {"RL.RESERVE", "p", "{k}", 3, "60s"}},
		after: [][]any{{"TYPE", "rl:p:{k}"}, {"PTTL", "rl:p:{k}"}, {"RL.SETTLE", "p", "{k}", fmt.Sprintf("%d-1", t0/1e6+60500), 1},
			{"RL.SETTLE", "p", "{k}", fmt.Sprintf("%d-2", t0/1e6+60750), 9}, {"RL.HIT", "p", "{k}", 0}},
	},

	engine.KindLease: {
		before: [][]any{{"CL.ACQUIRE", "{k}", 3, "10s", "a"}, {"CL.ACQUIRE", "{k}", 3, "2s", "b"}, {"CL.ACQUIRE", "{k}", 3, "1s"}},
		after:  [][]any{{"CL.ACQUIRE", "{k}", 3, "5s", "c"}, {"CL.RELEASE", "{k}", "a"}, {"CL.RENEW", "{k}", "b", "1s"}, {"CL.ACQUIRE", "{k}", 3, "5s", "d"}},
	},
}

// serverFromDir starts an in-process server whose snapshots live in dir,
// loading the snapshot there first (node.Run).
func serverFromDir(t *testing.T, clk *clock.Fake, dir string) *testServer {
	t.Helper()
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, dir, 0
	return serve(t, node.New(cfg, engine.New(clk, 0), nil), clk)
}

func TestEveryKindRoundTripsAcrossSaveLoad(t *testing.T) {
	t.Parallel()
	for k := engine.Kind(1); k.String() != "unknown"; k++ {
		t.Run(k.String(), func(t *testing.T) {
			steps, ok := roundTrip[k]
			if !ok {
				t.Fatalf("kind %v has no round-trip steps: add a row to roundTrip", k)
			}
			dir := t.TempDir()
			a := serverFromDir(t, clock.NewFake(t0), dir)
			ca := a.client(t, 2)
			for _, cmd := range steps.before {
				require.NoError(t, ca.Do(ctx, "COMMAND", "INFO", cmd[0]).Err())
				if info := ca.Do(ctx, "COMMAND", "INFO", cmd[0]).Val(); info == nil || reflect.DeepEqual(info, []any{nil}) {
					t.Skipf("%s is not in this build yet", cmd[0])
				}
			}
			for i, cmd := range steps.before {
				a.clk.Advance(250 * time.Millisecond)
				if err := ca.Do(ctx, cmd...).Err(); err != nil {
					t.Fatalf("before step %d %v: %v", i, cmd, err)
				}
			}
			require.NoError(t, ca.Do(ctx, "SAVE").Err())
			// The copy starts from the file at the same instant; both then
			// live through the same steps and must answer alike.
			b := serverFromDir(t, clock.NewFake(a.clk.Now()), dir)
			cb := b.client(t, 2)
			for _, gap := range []time.Duration{0, 700 * time.Millisecond, 3 * time.Second} {
				a.clk.Advance(gap)
				b.clk.Advance(gap)
				for i, cmd := range append(steps.after, []any{"PTTL", "{k}"}, []any{"TYPE", "{k}"}) {
					ra, ea := ca.Do(ctx, cmd...).Result()
					rb, eb := cb.Do(ctx, cmd...).Result()
					if !reflect.DeepEqual(ra, rb) || fmt.Sprint(ea) != fmt.Sprint(eb) {
						t.Fatalf("gap %v, step %d %v: restored server answers %v (%v), original %v (%v)", gap, i, cmd, rb, eb, ra, ea)
					}
				}
			}
		})
	}
}

// ---- the real binary: crashes, signals, damaged files ---------------------

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary limitdbBinary built once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// limitdbBinary builds cmd/limitdb once per test run.
func limitdbBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "limitdb-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "limitdb")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/limitdb").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running limitdb process.
type proc struct {
	cmd  *exec.Cmd
	addr string
	log  *logBuffer
	done chan error
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

var listenRE = regexp.MustCompile(`limitdb \S+ listening on (127\.0\.0\.1:\d+)`) // the plain port, not the TLS one

// startProc runs the binary on a free port with --dir dir and waits until
// it listens, or returns its exit error and log if it stops first.
func startProc(t *testing.T, dir string, extra ...string) (*proc, error) {
	t.Helper()
	return startProcArgs(t, append([]string{"--port", "0", "--dir", dir}, extra...))
}

// startProcArgs runs the binary with args and waits until it listens, or
// returns its exit error and log if it stops first.
func startProcArgs(t *testing.T, args []string) (*proc, error) {
	t.Helper()
	cmd := exec.Command(limitdbBinary(t), args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, log: &logBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.mu.Lock()
			p.log.b.WriteString(line + "\n")
			p.log.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
		close(addr)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	select {
	case a, ok := <-addr:
		if !ok {
			err := <-p.done
			p.done <- err
			return p, fmt.Errorf("exited before listening: %v\n%s", err, p.log)
		}
		p.addr = a
		return p, nil
	case <-time.After(20 * time.Second):
		t.Fatalf("limitdb did not start:\n%s", p.log)
	}
	return nil, nil
}

func mustStart(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	p, err := startProc(t, dir, extra...)
	require.NoError(t, err)
	return p
}

func (p *proc) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("limitdb did not exit:\n%s", p.log)
		return -1
	}
}

func (p *proc) kill9(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
}

// throttle takes n units of a 100-per-hour limit on key and returns remaining.
func throttle(t *testing.T, c *redis.Client, key string, n int) int64 {
	t.Helper()
	return ints(t, c.Do(ctx, "CL.THROTTLE", key, 99, 100, 3600, n))[2]
}

func fillKeys(t *testing.T, c *redis.Client, prefix string, n int) {
	t.Helper()
	for start := 0; start < n; start += 1000 {
		pipe := c.Pipeline()
		for i := start; i < start+1000 && i < n; i++ {
			pipe.Do(ctx, "CL.THROTTLE", fmt.Sprint(prefix, i), 99, 100, 3600, 1+i%7)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func dbsize(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	return n
}

func TestKill9AfterSaveLosesNothingSaved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	fillKeys(t, c, "k", 500)
	if got := throttle(t, c, "user", 30); got != 70 {
		t.Fatalf("remaining %d, want 70", got)
	}
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	throttle(t, c, "after-save", 1) // not saved: lost by the crash, as documented
	p.kill9(t)

	p = mustStart(t, dir)
	c = p.client(t)
	if n := dbsize(t, c); n != 501 {
		t.Fatalf("DBSIZE %d after restart, want 501\n%s", n, p.log)
	}
	if got := throttle(t, c, "user", 0); got < 70 || got > 71 {
		t.Fatalf("restored remaining %d, want 70 (71 if a second of refill passed)", got)
	}
	if !strings.Contains(p.log.String(), "501 keys, 0 skipped as expired") {
		t.Fatalf("start-up log does not report the load:\n%s", p.log)
	}
}

func TestKill9DuringBGSaveKeepsPreviousSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	fillKeys(t, c, "a", 20000)
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	fillKeys(t, c, "b", 60000)
	if s, err := c.Do(ctx, "BGSAVE").Text(); err != nil || s != "Background saving started" {
		t.Fatalf("BGSAVE: %q, %v", s, err)
	}
	p.kill9(t) // most likely mid-write; either way one whole snapshot must load
	_, err := os.Stat(filepath.Join(dir, "dump.ldb.tmp"))
	t.Logf("killed with a half-written temp file: %v", err == nil)

	p = mustStart(t, dir)
	c = p.client(t)
	if n := dbsize(t, c); n != 20000 && n != 80000 {
		t.Fatalf("DBSIZE %d after restart, want 20000 (previous) or 80000 (new)\n%s", n, p.log)
	}
}

func TestSIGTERMAndShutdownSave(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stop  func(t *testing.T, p *proc, c *redis.Client)
		saved bool
	}{
		{"SIGTERM", func(t *testing.T, p *proc, c *redis.Client) { p.cmd.Process.Signal(syscall.SIGTERM) }, true},
		{"SIGINT", func(t *testing.T, p *proc, c *redis.Client) { p.cmd.Process.Signal(syscall.SIGINT) }, true},
		{"SHUTDOWN", func(t *testing.T, p *proc, c *redis.Client) { c.Do(ctx, "SHUTDOWN") }, true},
		{"SHUTDOWN NOSAVE", func(t *testing.T, p *proc, c *redis.Client) { c.Do(ctx, "SHUTDOWN", "NOSAVE") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := mustStart(t, dir, "--save", "0")
			c := p.client(t)
			fillKeys(t, c, "k", 100)
			tc.stop(t, p, c)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit code %d\n%s", code, p.log)
			}
			p = mustStart(t, dir)
			want := int64(0)
			if tc.saved {
				want = 100
			}
			if n := dbsize(t, p.client(t)); n != want {
				t.Fatalf("DBSIZE %d after restart, want %d\n%s", n, want, p.log)
			}
		})
	}
}

func TestDamagedSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	fillKeys(t, c, "k", 300)
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	p.kill9(t)
	path := filepath.Join(dir, "dump.ldb")
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/3] ^= 1
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)*2/3], "snapshot: crc mismatch"},
		{"corrupt", flipped, "snapshot: crc mismatch"},
		{"foreign", []byte("REDIS0011\xfa\x09redis-ver"), "snapshot: not a limitdb snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			_, err := startProc(t, dir)
			if err == nil {
				t.Fatal("limitdb started on a damaged snapshot")
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, tc.want) {
				t.Fatalf("start-up error does not name the file and the problem (%q):\n%s", tc.want, msg)
			}
			p := mustStart(t, dir, "--discard-corrupt-snapshot", "yes")
			if n := dbsize(t, p.client(t)); n != 0 {
				t.Fatalf("DBSIZE %d after discarding, want 0", n)
			}
			if kept, err := os.ReadFile(path + ".corrupt"); err != nil || string(kept) != string(tc.data) {
				t.Fatalf("damaged file not moved aside intact: %v", err)
			}
			p.kill9(t)
		})
	}
}

func TestPersistenceCommandsAndInfo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	fillKeys(t, c, "k", 10)
	info := c.Info(ctx, "persistence").Val()
	if !strings.Contains(info, "rdb_changes_since_last_save:10\r\n") {
		t.Fatalf("INFO persistence before save:\n%s", info)
	}
	before := time.Now().Unix()
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	last, err := c.Do(ctx, "LASTSAVE").Int64()
	if err != nil || last < before-1 {
		t.Fatalf("LASTSAVE %d (%v), want >= %d", last, err, before)
	}
	info = c.Info(ctx, "persistence").Val()
	for _, want := range []string{"rdb_changes_since_last_save:0\r\n", "rdb_last_bgsave_status:ok\r\n", "rdb_last_save_keys:10\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO persistence after SAVE lacks %q:\n%s", want, info)
		}
	}
	if s, err := c.Do(ctx, "BGSAVE").Text(); err != nil || s != "Background saving started" {
		t.Fatalf("BGSAVE: %q, %v", s, err)
	}
	if err := c.Do(ctx, "BGSAVE", "NOW").Err(); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("BGSAVE NOW: %v", err)
	}
	// dbfilename is protected, as in Redis 7: CONFIG SET could otherwise
	// make SAVE overwrite the aclfile or the config file.
	if err := c.ConfigSet(ctx, "dbfilename", "users.acl").Err(); err == nil || !strings.Contains(err.Error(), "can't set protected config") {
		t.Fatalf("CONFIG SET dbfilename without enable-protected-configs: %v", err)
	}
}

func TestProtectedConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--enable-protected-configs", "local")
	c := p.client(t)
	if err := c.ConfigSet(ctx, "dbfilename", "../x").Err(); err == nil {
		t.Fatal("dbfilename accepted a path")
	}
	if err := c.ConfigSet(ctx, "dbfilename", "other.ldb").Err(); err != nil {
		t.Fatalf("CONFIG SET dbfilename from loopback with enable-protected-configs local: %v", err)
	}
	require.NoError(t, c.Save(ctx).Err())
	if _, err := os.Stat(filepath.Join(dir, "other.ldb")); err != nil {
		t.Fatalf("SAVE after CONFIG SET dbfilename: %v", err)
	}
	if err := c.ConfigSet(ctx, "enable-protected-configs", "yes").Err(); err == nil {
		t.Fatal("enable-protected-configs changed at run time")
	}
}

func TestAutomaticSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "1")
	c := p.client(t)
	fillKeys(t, c, "k", 10)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Info(ctx, "persistence").Val(), "rdb_last_save_keys:10\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("no automatic snapshot within 10 s:\n%s", p.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.kill9(t)
	if n := dbsize(t, mustStart(t, dir).client(t)); n != 10 {
		t.Fatalf("DBSIZE %d after the automatic snapshot, want 10", n)
	}
}
