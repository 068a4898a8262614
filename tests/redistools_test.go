package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cli runs redis-cli one-shot against ts with extra flags and a command.
func (ts *testServer) cli(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, "", []string{"REDISCLI_HISTFILE=/dev/null"}, need(t, "redis-cli"),
		append([]string{"-h", "127.0.0.1", "-p", ts.port()}, args...)...)
}

func TestRedisCLIOneShot(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		// Output to a pipe is raw by default.
		{"pipe", []string{"CL.THROTTLE", "a", "15", "30", "60"}, "0\n16\n15\n-1\n2\n"},
		{"--raw", []string{"--raw", "CL.THROTTLE", "a", "15", "30", "60"}, "0\n16\n14\n-1\n4\n"},
		{"--no-raw", []string{"--no-raw", "CL.THROTTLE", "a", "15", "30", "60"},
			"1) (integer) 0\n2) (integer) 16\n3) (integer) 13\n4) (integer) -1\n5) (integer) 6\n"},
		{"-3 limiter", []string{"-3", "--no-raw", "GCRA", "g", "2", "1", "0.5"},
			"1) (integer) 0\n2) (integer) 3\n3) (integer) 2\n4) (integer) -1\n5) (integer) 1\n"},
		{"-3 map", []string{"-3", "--no-raw", "HELLO", "3"}, "1# \"server\" => \"redis\"\n"},
		{"TB.TAKE", []string{"--no-raw", "TB.TAKE", "tb", "10", "1", "1s"},
			"1) (integer) 0\n2) (integer) 10\n3) (integer) 9\n4) (integer) -1\n5) (integer) 1000\n"},
		{"LB.QUEUE", []string{"--no-raw", "LB.QUEUE", "lb", "3", "10", "1s", "2"},
			"1) (integer) 0\n2) (integer) 3\n3) (integer) 1\n4) (integer) -1\n5) (integer) 200\n6) (integer) 0\n"},
		{"FW.INCR -3", []string{"-3", "--no-raw", "FW.INCR", "fw", "3", "1s", "3"},
			"1) (integer) 0\n2) (integer) 3\n3) (integer) 0\n4) (integer) -1\n5) (integer) 1000\n"},
		{"SW.INCR", []string{"SW.INCR", "sw", "10", "1s", "11"}, "1\n10\n10\n-1\n0\n"},
		{"SL.INCR", []string{"--raw", "SL.INCR", "sl", "3", "1s"}, "0\n3\n2\n-1\n1000\n"},
		{"RL.POLICY", []string{"RL.POLICY", "SET", "api", "sliding_log", "2", "1m"}, "OK\n"},
		{"analytics", []string{"CONFIG", "SET", "analytics", "yes"}, "OK\n"},
		{"RL.HIT", []string{"--no-raw", "RL.HIT", "api", "bob"},
			"1) (integer) 0\n2) (integer) 2\n3) (integer) 1\n4) (integer) -1\n5) (integer) 60000\n"},
		{"RL.HITALL", []string{"--no-raw", "RL.HITALL", "2", "api", "bob", "api", "ann"},
			"1) (integer) 0\n2) 1) (integer) 0\n   2) (integer) 2\n   3) (integer) 0\n   4) (integer) -1\n   5) (integer) 60000\n" +
				"3) 1) (integer) 0\n   2) (integer) 2\n   3) (integer) 1\n   4) (integer) -1\n   5) (integer) 60000\n"},
		{"RL.TOP", []string{"--no-raw", "RL.TOP", "api", "HITS"},
			"1) 1) \"bob\"\n   2) (integer) 2\n   3) (integer) 0\n2) 1) \"ann\"\n   2) (integer) 1\n   3) (integer) 0\n"},
		{"RL.HISTORY", []string{"--no-raw", "RL.HISTORY", "api", "COUNT", "1"},
			"1) 1) (integer) 1767225600\n   2) (integer) 3\n   3) (integer) 0\n   4) (integer) 0\n"},
		{"error", []string{"--no-raw", "CL.THROTTLE", "a", "1", "0", "60"}, "(error) ERR count must be at least 1, got 0\n"},
		{"string", []string{"--no-raw", "SET", "s", "1", "EX", "10"}, "OK\n"},
		{"counter", []string{"--no-raw", "INCRBY", "s", "41"}, "(integer) 42\n"},
		{"type", []string{"TYPE", "a"}, "gcra\n"},
	}
	for _, tc := range cases {
		got := ts.cli(t, tc.args...)
		if tc.name == "-3 map" {
			got = got[:strings.IndexByte(got, '\n')+1] // the rest holds the connection id
		}
		if got != tc.want {
			t.Errorf("%s: redis-cli printed %q, want %q", tc.name, got, tc.want)
		}
	}
}

// tmux drives an interactive program in a detached tmux session on a
// private socket, reading its screen.
type tmux struct {
	t      *testing.T
	socket string
}

func startTmux(t *testing.T, command string) *tmux {
	t.Helper()
	need(t, "tmux")
	tm := &tmux{t: t, socket: fmt.Sprintf("limitdb-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	tm.run("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", command)
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys types literally (no Enter).
func (tm *tmux) keys(s string) { tm.t.Helper(); tm.run("send-keys", "-t", "0", "-l", s) }
func (tm *tmux) enter()        { tm.t.Helper(); tm.run("send-keys", "-t", "0", "Enter") }

// waitFor polls the screen until it contains want. The poll is bounded: a
// text that never shows fails the test after 20 s.
func (tm *tmux) waitFor(want string) string {
	tm.t.Helper()
	var screen string
	for i := 0; i < 400; i++ {
		screen = tm.run("capture-pane", "-p", "-t", "0")
		if strings.Contains(screen, want) {
			return screen
		}
		time.Sleep(50 * time.Millisecond)
	}
	tm.t.Fatalf("screen never showed %q:\n%s", want, screen)
	return ""
}

func TestRedisCLIInteractive(t *testing.T) {
	t.Parallel()
	need(t, "redis-cli")
	ts := startServer(t)
	// capture-pane drops trailing blanks: a prompt at the end of a line
	// shows as "host:port>".
	prompt := "127.0.0.1:" + ts.port() + ">"
	tm := startTmux(t, "env REDISCLI_HISTFILE=/dev/null redis-cli -h 127.0.0.1 -p "+ts.port())
	tm.waitFor(prompt)

	// Hints come from COMMAND DOCS and shrink as arguments are typed.
	tm.keys("CL.THROTTLE ")
	tm.waitFor(prompt + " CL.THROTTLE key max_burst count period [quantity]")
	tm.keys("user:1 15 ")
	tm.waitFor(prompt + " CL.THROTTLE user:1 15 count period [quantity]")
	tm.keys("30 60")
	tm.enter()
	tm.waitFor("1) (integer) 0\n2) (integer) 16\n3) (integer) 15\n4) (integer) -1\n5) (integer) 2\n" + prompt)

	tm.keys("GCRA ")
	tm.waitFor(prompt + " GCRA key max_burst tokens_per_period period [TOKENS count]")
	tm.keys("g 2 1 0.5")
	tm.enter()
	tm.waitFor("1) (integer) 0\n2) (integer) 3\n3) (integer) 2\n4) (integer) -1\n5) (integer) 1\n" + prompt)
	tm.keys("GCRA g 2 1 0.5 TOKENS 0")
	tm.enter()
	tm.waitFor("(error) ERR value is out of range\n" + prompt)

	tm.keys("LB.QUEUE ")
	tm.waitFor(prompt + " LB.QUEUE key capacity rate period [cost]")
	tm.keys("q 3 10 1s")
	tm.enter()
	tm.waitFor("5) (integer) 100\n6) (integer) 0\n" + prompt)

	tm.keys("SET ")
	tm.waitFor(prompt + " SET key value")
	tm.keys("s 7")
	tm.enter()
	// Wait for each reply before typing on: redis-cli discards what was
	// typed while a command ran (linenoise flushes input entering raw mode).
	tm.waitFor("> SET s 7\nOK\n" + prompt)
	tm.keys("INCR s")
	tm.enter()
	tm.waitFor("(integer) 8\n" + prompt)
}

func TestRedisBenchmark(t *testing.T) {
	// Not parallel: redis-benchmark drives both cores.
	bench := need(t, "redis-benchmark")
	ts := startServer(t)
	base := []string{"-h", "127.0.0.1", "-p", ts.port(), "-n", "2000", "-c", "4", "-P", "4"}

	// The default set's commands that limitdb answers. --csv prints one line
	// per test, or "Error from server" and stops at the first error reply.
	out := run(t, "", nil, bench, append(base, "-t", "ping,set,get,incr,lpush,rpush,lpop,rpop,mset", "--csv")...)
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "MSET (10 keys)"} {
		if !strings.Contains(out, "\n\""+test+"\",\"") {
			t.Errorf("no result for %s:\n%s", test, out)
		}
	}
	if strings.Contains(out, "rror") || strings.Contains(out, "WARNING") {
		t.Errorf("redis-benchmark reported a problem:\n%s", out)
	}

	// Every limiter command as a custom benchmark, on random keys.
	for _, cmd := range []string{
		"CL.THROTTLE user:__rand_int__ 15 30 60",
		"GCRA user:__rand_int__ 15 30 60",
		"TB.TAKE user:__rand_int__ 10 1 1s",
		"LB.QUEUE user:__rand_int__ 3 10 1s",
		"FW.INCR user:__rand_int__ 10 1m",
		"SW.INCR user:__rand_int__ 10 1m",
		"SL.INCR user:__rand_int__ 10 1m",
	} {
		// Each command gets its own key type: a fresh keyspace for each.
		ts.cli(t, "FLUSHALL")
		out = run(t, "", nil, bench, append(append(base, "-r", "1000", "--csv"), strings.Fields(cmd)...)...)
		if !strings.Contains(out, "\n\""+cmd+"\",\"") || strings.Contains(out, "rror") {
			t.Errorf("%s benchmark:\n%s", cmd, out)
		}
	}

	// The whole default set runs to the end: every test answered, none an
	// error (issue 37's measure; bench/redisbench.sh sets the figures
	// beside Redis's).
	cmd := exec.Command(bench, append(base, "--csv")...)
	outb, err := cmd.CombinedOutput()
	out = string(outb)
	if err != nil || strings.Contains(out, "rror") {
		t.Errorf("default set: redis-benchmark %v:\n%s", err, out)
	}
	for _, test := range []string{"PING_INLINE", "SET", "GET", "INCR", "LPUSH", "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LRANGE_600 (first 600 elements)", "MSET (10 keys)"} {
		if !strings.Contains(out, "\n\""+test+"\",\"") {
			t.Errorf("default set: no %s in:\n%s", test, out)
		}
	}
	if got := ts.cli(t, "PING"); got != "PONG\n" {
		t.Errorf("PING after the default set: %q", got)
	}
}
