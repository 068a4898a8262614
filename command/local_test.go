package command_test

import (
	"fmt"
	"github.com/limitdb/limitdb/command"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newLocal returns a client with no socket on a new server whose engine
// reads a fake clock.
func newLocal(t *testing.T) (*command.LocalClient, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(1_700_000_000e9)
	s := newServer(config.Default(), engine.New(clk, 0))
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	return s.NewLocalClient(), clk
}

// TestLocalClient runs commands with no socket, stepping the clock between
// them: the same table, arity checks and replies as a connection.
func TestLocalClient(t *testing.T) {
	t.Parallel()
	c, clk := newLocal(t)
	steps := []struct {
		advance time.Duration // before the command
		args    []string
		want    string
	}{
		{0, []string{"PING"}, "+PONG\r\n"},
		{0, []string{"PING", "hi"}, "$2\r\nhi\r\n"},
		{0, []string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:1\r\n:2\r\n:0\r\n:60\r\n:120\r\n"},
		{60 * time.Second, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60", "1", "x"}, "-ERR wrong number of arguments for 'cl.throttle' command\r\n"},
		{0, []string{"FW.INCR", "w", "2", "month", "1", "TZ", "UTC", "x"}, "-ERR wrong number of arguments for 'fw.incr' command\r\n"},
		{0, []string{"FW.INCR", "w", "2", "10s", "1", "x"}, "-ERR syntax error\r\n"},
		{0, []string{"SLOWLOG", "GET", "1", "x"}, "-ERR wrong number of arguments for 'slowlog|get' command\r\n"},
		{0, []string{"NOPE"}, "-ERR unknown command 'NOPE', with args beginning with: \r\n"},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestServersShareNothing: two servers in one process keep their own
// tables, statistics and keys.
func TestServersShareNothing(t *testing.T) {
	t.Parallel()
	a, _ := newLocal(t)
	b, _ := newLocal(t)
	a.DoString("SET", "k", "a")
	if got := string(b.DoString("GET", "k")); got != "$-1\r\n" {
		t.Fatalf("GET on the other server: %q", got)
	}
	a.Server().Commands().Register(&command.Command{Name: "only.a", Arity: 1, Handler: func(c *command.Client, _ [][]byte) { c.OK() }})
	if got := string(b.DoString("ONLY.A")); got[0] != '-' {
		t.Fatalf("a command added to one server's table answered on the other: %q", got)
	}
}

// TestExecRunsEveryQueuedCommandThroughTheTransaction: commands that reach
// every shard (INFO, DBSIZE, KEYS, SCAN, FLUSHALL) queued in MULTI run
// inside EXEC's transaction, which holds every shard, without waiting for
// a lock it holds itself.
func TestExecRunsEveryQueuedCommandThroughTheTransaction(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	c.DoString("SET", "k", "v")
	done := make(chan string, 1)
	go func() {
		c.DoString("MULTI")
		for _, cmd := range [][]string{{"INFO"}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"MEMORY", "USAGE", "k"},
			{"CL.THROTTLE", "t", "1", "1", "60"}, {"FLUSHALL"}, {"DBSIZE"}} {
			if got := string(c.DoString(cmd...)); got != "+QUEUED\r\n" {
				done <- fmt.Sprintf("%q queued as %q", cmd, got)
				return
			}
		}
		done <- string(c.DoString("EXEC"))
	}()
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "*8\r\n") || !strings.HasSuffix(got, ":0\r\n") {
			t.Fatalf("EXEC answered %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("EXEC did not finish: a queued command waited for a shard its own transaction holds")
	}
}

// TestMaxmemoryCountsClients: what the connections hold counts against
// maxmemory beside the keyspace, as in Redis: with the clients holding
// more than the limit, a new key is refused with OOM, while commands on
// existing keys and reads go on.
func TestMaxmemoryCountsClients(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.MaxMemory = 1 << 20
	s := newServer(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0))
	held := int64(0)
	s.ClientMemory = func() int64 { return held }
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	c := s.NewLocalClient()
	steps := []struct {
		clients int64
		args    []string
		want    string
	}{
		{0, []string{"SET", "a", "1"}, "+OK\r\n"},
		{2 << 20, []string{"SET", "b", "1"}, "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
		{2 << 20, []string{"SET", "a", "2"}, "+OK\r\n"},
		{2 << 20, []string{"GET", "a"}, "$1\r\n2\r\n"},
		{0, []string{"SET", "b", "1"}, "+OK\r\n"},
	}
	for i, st := range steps {
		held = st.clients
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d, clients holding %d: %q = %q, want %q", i, st.clients, st.args, got, st.want)
		}
	}
}
