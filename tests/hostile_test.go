package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/internal/testlog"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClientKillIsDoneWhenAnswered: once CLIENT KILL has answered, the
// victim runs nothing more. Each trial kills a fresh connection and at
// once sends it a command; in 300 trials none may run (Redis: none).
func TestClientKillIsDoneWhenAnswered(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc, bufio.NewReader(nc)
	}
	line := func(rd *bufio.Reader) string {
		l, _ := rd.ReadString('\n')
		return strings.TrimRight(l, "\r\n")
	}
	killer, kr := dial()
	defer killer.Close()
	for i := 0; i < 300; i++ {
		victim, vr := dial()
		io.WriteString(victim, "CLIENT ID\r\n")
		id := strings.TrimPrefix(line(vr), ":")
		fmt.Fprintf(killer, "CLIENT KILL ID %s\r\n", id)
		if got := line(kr); got != ":1" {
			t.Fatalf("trial %d: CLIENT KILL ID %s answered %q", i, id, got)
		}
		io.WriteString(victim, "INCR served\r\n")
		if got := line(vr); got != "" {
			t.Fatalf("trial %d: the killed client was served: %q", i, got)
		}
		victim.Close()
	}
	io.WriteString(killer, "GET served\r\n")
	if got := line(kr); got != "$-1" {
		t.Fatalf("GET served = %q: a killed client's INCR ran", got)
	}
}

// TestTimeoutClosesATrickle: with timeout 1, a client that sends one byte
// of a command every 200 ms is closed about a second after its last whole
// command, on the event loop and on a goroutine per connection alike,
// while a client that keeps sending whole commands stays.
func TestTimeoutClosesATrickle(t *testing.T) {
	t.Parallel()
	for _, loop := range []bool{true, false} {
		t.Run(fmt.Sprint("event-loop=", loop), func(t *testing.T) {
			t.Parallel()
			ts, _ := startWith(t, func(c *config.Config) { c.Timeout, c.EventLoop = 1, loop }, nil)
			busy := dialRaw(t, ts.addr)
			slow := dialRaw(t, ts.addr)
			slow.send(cmd("PING"))
			if got := slow.mustLine(); got != "+PONG" {
				t.Fatal(got)
			}
			trickle := cmd("ECHO", strings.Repeat("x", 100))
			start := time.Now()
			closedAfter := time.Duration(0)
			for i := 0; i < len(trickle) && closedAfter == 0; i++ {
				if _, err := slow.nc.Write([]byte{trickle[i]}); err != nil {
					closedAfter = time.Since(start)
					break
				}
				busy.send(cmd("PING"))
				if got := busy.mustLine(); got != "+PONG" {
					t.Fatalf("the busy client after %v: %q", time.Since(start), got)
				}
				time.Sleep(200 * time.Millisecond)
				if time.Since(start) > 5*time.Second {
					break
				}
			}
			if closedAfter == 0 && !slow.closed() {
				t.Fatalf("a client trickling a byte every 200 ms was not closed in %v", time.Since(start))
			}
			if el := time.Since(start); el > 4*time.Second {
				t.Errorf("closed after %v, want about 1 s", el)
			}
		})
	}
}

// TestFewFileDescriptors: started with ulimit -n 100, the server lowers
// maxclients to what fits (100 less the 32 it keeps for itself) and says
// so, as Redis does, instead of failing accepts at maxclients.
func TestFewFileDescriptors(t *testing.T) {
	t.Parallel()
	bin := limitdbBinary(t)
	proc := exec.Command("sh", "-c", `ulimit -n 100 && exec "$0" "$@"`, bin, "--port", "0", "--dir", t.TempDir(), "--save", "0")
	var out testlog.Buffer
	proc.Stderr = &out
	require.NoError(t, proc.Start())
	defer func() { proc.Process.Kill(); proc.Wait() }()
	var addr string
	for i := 0; addr == ""; i++ {
		if i == 2000 {
			t.Fatalf("did not start:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
		if m := listenRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if !strings.Contains(out.String(), "only 100 open files allowed") {
		t.Errorf("no warning about the file limit:\n%s", out.String())
	}
	r := dialRaw(t, addr)
	r.send(cmd("CONFIG", "GET", "maxclients"))
	var lines []string
	for i := 0; i < 5; i++ { // *2, $10, maxclients, $2, 68
		lines = append(lines, r.mustLine())
	}
	if got := lines[4]; got != "68" {
		t.Errorf("maxclients = %q, want 68", got)
	}
}

// TestClientOutputBufferLimit: with client-output-buffer-limit normal
// 64kb, a KEYS reply of about 400 KB closes the client that asked, as
// Redis does, with a log line; CLIENT LIST reports omem and tot-mem, and
// CONFIG GET shows the limits in Redis's form.
func TestClientOutputBufferLimit(t *testing.T) {
	t.Parallel()
	ts, logs := startWith(t, nil, nil)
	c := ts.client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "client-output-buffer-limit", "normal 64kb 0 0").Err())
	got, err := c.ConfigGet(ctx, "client-output-buffer-limit").Result()
	require.NoError(t, err)
	require.Equal(t, "normal 65536 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60", got["client-output-buffer-limit"])
	for i := 0; i < 400; i++ {
		keys := make([]any, 0, 100)
		for j := 0; j < 50; j++ {
			keys = append(keys, fmt.Sprintf("key:%03d:%02d:%s", i, j, strings.Repeat("k", 8)), "v")
		}
		require.NoError(t, c.MSet(ctx, keys...).Err())
	}
	r := dialRaw(t, ts.addr)
	r.send(cmd("KEYS", "*"))
	if !r.closed() {
		t.Fatal("a 400 KB reply over a 64 KB limit did not close the client")
	}
	if !strings.Contains(logs.String(), "closed for overcoming of output buffer limits") {
		t.Errorf("no log line:\n%s", logs.String())
	}
	list, err := c.ClientList(ctx).Result()
	require.NoError(t, err)
	require.Regexp(t, `omem=0 tot-mem=\d+ `, list)
	require.NoError(t, c.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0").Err())
	n, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, n, 20000, "KEYS under no limit")
}

// TestFloodingClientIsBounded: a client that pipelines CL.THROTTLE as
// fast as it can and never reads makes the server stop reading it once
// its replies wait: the server's memory stays within 64 MiB of where it
// started, and a bystander's PING, and a new connection's, are answered
// within 500 ms throughout.
// (-soak.scale runs it longer.)
func TestFloodingClientIsBounded(t *testing.T) {
	// Not parallel: the flood takes a core, and it measures latency.
	p := mustStart(t, t.TempDir(), "--save", "0")
	rss := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		require.NoError(t, err)
		m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
		require.NotNil(t, m)
		kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return kb << 10
	}
	start := rss()
	flood, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer flood.Close()
	stop := make(chan struct{})
	sent := make(chan int64, 1)
	go func() {
		batch := []byte(strings.Repeat(cmd("CL.THROTTLE", "k", "9", "1", "60"), 1000))
		var n int64
		defer func() { sent <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			flood.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			m, _ := flood.Write(batch)
			n += int64(m)
		}
	}()
	by := dialRaw(t, p.addr)
	worst, worstNew, peak := time.Duration(0), time.Duration(0), start
	for end := time.Now().Add(time.Duration(*soakScale) * 5 * time.Second); time.Now().Before(end); {
		t0 := time.Now()
		by.send(cmd("PING"))
		require.Equal(t, "+PONG", by.mustLine())
		worst = max(worst, time.Since(t0))
		// Accepting is not starved either: a new connection is served.
		t0 = time.Now()
		fresh := dialRaw(t, p.addr)
		fresh.send(cmd("PING"))
		require.Equal(t, "+PONG", fresh.mustLine())
		fresh.nc.Close()
		worstNew = max(worstNew, time.Since(t0))
		peak = max(peak, rss())
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	t.Logf("the flooding client sent %d MB; server RSS %d MiB at start, %d MiB at most; bystander's worst PING %v, a new connection's %v",
		<-sent>>20, start>>20, peak>>20, worst, worstNew)
	if peak-start > 64<<20 {
		t.Errorf("server RSS grew by %d MiB under a client that never reads", (peak-start)>>20)
	}
	if worst > 500*time.Millisecond || worstNew > 500*time.Millisecond {
		t.Errorf("a bystander waited %v for PING, a new connection %v", worst, worstNew)
	}
}

// TestBystanderDuringLargeCommands: while one client runs the largest
// input of each command that grows with it, a bystander's PING on another
// connection is answered within a second (Redis answers in milliseconds;
// the bound leaves room for a loaded CI machine). Each command's own time
// must grow about linearly: 60,000 keys finish within 5 s.
func TestBystanderDuringLargeCommands(t *testing.T) {
	// Not parallel: it measures latency.
	ts, _ := startWith(t, nil, nil)
	c := ts.client(t, 2)
	const n = 60000
	keys := make([]any, n)
	pairs := make([]any, 0, 2*n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k:%d", i)
		pairs = append(pairs, keys[i], "v")
	}
	cases := []struct {
		name string
		run  func() error
	}{
		{"MSET 60000", func() error { return c.MSet(ctx, pairs...).Err() }},
		{"MGET 60000", func() error { return c.MGet(ctx, strs(keys)...).Err() }},
		{"EXISTS 60000", func() error { return c.Exists(ctx, strs(keys)...).Err() }},
		{"KEYS *", func() error { return c.Keys(ctx, "*").Err() }},
		{"KEYS with 15 stars", func() error { return c.Keys(ctx, strings.Repeat("*a", 15)+"b").Err() }},
		{"SCAN MATCH with 15 stars", func() error {
			return c.Scan(ctx, 0, strings.Repeat("*a", 15)+"b", 100000).Err()
		}},
		{"RL.HITALL 10000 pairs", func() error {
			require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "api", "gcra", 100, "1m").Err())
			args := []any{"RL.HITALL", 10000}
			for i := 0; i < 10000; i++ {
				args = append(args, "api", fmt.Sprintf("u:%d", i))
			}
			return c.Do(ctx, args...).Err()
		}},
		{"EXEC of 20000 commands", func() error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for i := 0; i < 20000; i++ {
					p.Incr(ctx, "counter")
				}
				return nil
			})
			return err
		}},
		{"DEL 60000", func() error { return c.Del(ctx, strs(keys)...).Err() }},
		{"FLUSHALL", func() error {
			require.NoError(t, c.MSet(ctx, pairs...).Err())
			return c.FlushAll(ctx).Err()
		}},
	}
	require.NoError(t, c.Set(ctx, strings.Repeat("a", 60), "pathological for a naive glob", 0).Err())
	for _, tc := range cases {
		by := dialRaw(t, ts.addr)
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- tc.run() }()
		worst := time.Duration(0)
		for running := true; running; {
			select {
			case err := <-done:
				require.NoError(t, err, tc.name)
				running = false
			default:
				t0 := time.Now()
				by.send(cmd("PING"))
				require.Equal(t, "+PONG", by.mustLine(), tc.name)
				worst = max(worst, time.Since(t0))
				time.Sleep(2 * time.Millisecond)
			}
		}
		took := time.Since(start)
		t.Logf("%-26s %8v, bystander's worst PING %v", tc.name, took.Round(time.Millisecond), worst.Round(time.Microsecond))
		if worst > time.Second {
			t.Errorf("%s: a bystander waited %v", tc.name, worst)
		}
		if took > 5*time.Second {
			t.Errorf("%s took %v", tc.name, took)
		}
	}
}

func strs(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.(string)
	}
	return out
}
