package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests drive real clients and tools (Node.js clients, redis-py,
// redis-cli, redis-benchmark) against an in-process server. .ci/run installs
// every one of them, so under CI=true a missing tool fails the test; on a
// developer's machine it skips.

// need returns the path of tool, or skips (fails under CI) when it is absent.
func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		missing(t, "%s is not installed: %v", tool, err)
	}
	return p
}

// missing fails under CI, where .ci/run installs everything, and skips elsewhere.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format+" (skipped outside CI)", args...)
}

// port is the server's port as a string.
func (ts *testServer) port() string {
	return ts.addr[strings.LastIndexByte(ts.addr, ':')+1:]
}

// run runs a command with a deadline and returns its combined output,
// failing the test with that output when the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nodeDir is the Node.js client tests' folder, with its modules installed
// (by `npm ci` in .ci/run).
func nodeDir(t *testing.T) string {
	t.Helper()
	need(t, "node")
	dir, err := filepath.Abs("clients/node")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis")); err != nil {
		missing(t, "node modules are not installed: run `npm ci` in tests/clients/node")
	}
	return dir
}

func TestNodeClients(t *testing.T) {
	t.Parallel()
	dir := nodeDir(t)
	ts := startServer(t)
	out := run(t, dir, []string{"LIMITDB_PORT=" + ts.port()}, "node", "--test", "--test-reporter=tap", "clients.test.mjs")
	// node's runner exits non-zero on a failure; make sure tests did run.
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0\n") {
		t.Fatalf("node tests did not all pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 8))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// python finds an interpreter with redis-py: Debian's python3-redis lives
// in /usr/bin/python3, which another python3 on PATH may hide.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import redis").Run() == nil {
			return p
		}
	}
	missing(t, "no python3 with redis-py (Debian: python3-redis)")
	return ""
}

func TestRedisPy(t *testing.T) {
	t.Parallel()
	py := python(t)
	ts := startServer(t)
	out := run(t, "clients/python", []string{"LIMITDB_PORT=" + ts.port(), "PYTHONDONTWRITEBYTECODE=1"}, py, "-m", "unittest", "-v", "test_clients")
	if !strings.Contains(out, "\nOK") {
		t.Fatalf("redis-py tests did not pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 4))
}

// TestRateLimiterFlexible runs a real rate-limiting library, unchanged,
// against limitdb: rate-limiter-flexible's Redis stores, without Lua (MULTI
// with GET, PTTL, SET EX, PEXPIRE, INCRBY, DEL) and with its Lua script.
func TestRateLimiterFlexible(t *testing.T) {
	t.Parallel()
	dir := nodeDir(t)
	ts := startServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	out := run(t, dir, []string{"LIMITDB_PORT=" + ts.port()}, "node", "--test", "--test-reporter=tap", "ratelimiter.test.mjs")
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0\n") {
		t.Fatalf("rate-limiter-flexible tests did not all pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 8))
	// The library's traffic went through transactions, plain string
	// commands and its script.
	stats := c.Info(ctx, "commandstats").Val()
	if !strings.Contains(stats, "cmdstat_eval:calls=") && !strings.Contains(stats, "cmdstat_evalsha:calls=") {
		t.Errorf("rate-limiter-flexible never ran its script:\n%s", stats)
	}
	for _, cmd := range []string{"multi", "exec", "get", "pttl", "set", "pexpire", "incrby", "del"} {
		if !strings.Contains(stats, "cmdstat_"+cmd+":calls=") {
			t.Errorf("rate-limiter-flexible never sent %s:\n%s", strings.ToUpper(cmd), stats)
		}
	}
}
