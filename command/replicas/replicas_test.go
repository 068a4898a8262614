package replicas_test

import (
	"io"
	"log"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/persist"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/command/replicas"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with this family beside the keyspace, the
// rate-limit commands, administration (INFO), the cluster commands and
// persistence, as the node registers them.
func newServer(t *testing.T, cfg config.Config) *command.Server {
	t.Helper()
	families := []command.Family{keyspace.New(), ratelimit.New(), admin.New(), replicas.New(), clustering.New(), persist.New()}
	s := command.New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), families...)
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// step is one command and the reply it must get.
type step struct {
	args []string
	want string
}

// run walks steps on c and reports each reply that differs.
func run(t *testing.T, c *command.LocalClient, steps []step) {
	t.Helper()
	for i, st := range steps {
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// deadPort is a port on 127.0.0.1 nothing listens on: the link to a
// primary there stays down.
func deadPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

var header = regexp.MustCompile(`(?m)^# (\w+)\r$`)

// fields lists the field names of an INFO reply, in order.
func fields(info string) string {
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}

// TestInfo: INFO replication takes its place between limits and cpu,
// names a primary's and a replica's fields in Redis's order, and INFO
// stats ends with the sync_* lines.
func TestInfo(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	c := s.NewLocalClient()
	var sections []string
	for _, m := range header.FindAllStringSubmatch(string(c.DoString("INFO")), -1) {
		sections = append(sections, m[1])
	}
	if got, want := strings.Join(sections, " "), "Server Clients Memory Persistence Stats Limits Replication CPU Cluster Keyspace"; got != want {
		t.Errorf("INFO sections = %q, want %q", got, want)
	}
	stats := fields(string(c.DoString("INFO", "stats")))
	if !strings.HasSuffix(stats, " keyspace_misses sync_full sync_partial_ok sync_partial_err") {
		t.Errorf("INFO stats fields = %q, want them to end with keyspace_misses and the sync_* lines", stats)
	}
	const shared = "connected_slaves master_failover_state master_replid master_replid2 master_repl_offset second_repl_offset " +
		"repl_backlog_active repl_backlog_size repl_backlog_first_byte_offset repl_backlog_histlen"
	if got, want := fields(string(c.DoString("INFO", "replication"))), "role "+shared; got != want {
		t.Errorf("a primary's INFO replication fields = %q, want %q", got, want)
	}
	run(t, c, []step{{[]string{"REPLICAOF", "127.0.0.1", strconv.Itoa(deadPort(t))}, "+OK\r\n"}})
	want := "role master_host master_port master_link_status master_last_io_seconds_ago master_sync_in_progress " +
		"slave_read_repl_offset slave_repl_offset master_link_down_since_seconds slave_priority slave_read_only replica_announced " + shared
	if got := fields(string(c.DoString("INFO", "replication"))); got != want {
		t.Errorf("a replica's INFO replication fields = %q, want %q", got, want)
	}
}

// TestReadOnlyReplica: a replica with replica-read-only refuses writes
// but serves reads and a limiter's peek (cost 0); CONFIG SET
// replica-read-only no and REPLICAOF NO ONE lift the refusal.
func TestReadOnlyReplica(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	c := s.NewLocalClient()
	const readOnly = "-READONLY You can't write against a read only replica.\r\n"
	primary := []string{"REPLICAOF", "127.0.0.1", strconv.Itoa(deadPort(t))}
	run(t, c, []step{
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{primary, "+OK\r\n"},
		{primary, "+OK Already connected to specified master\r\n"},
		{[]string{"SET", "k", "w"}, readOnly},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"CL.THROTTLE", "l", "10", "10", "60", "1"}, readOnly},
		{[]string{"WAIT", "1", "0"}, "-ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.\r\n"},
	})
	if !s.ReadOnly() {
		t.Error("ReadOnly() = false on a read-only replica")
	}
	if got := string(c.DoString("CL.THROTTLE", "l", "10", "10", "60", "0")); !strings.HasPrefix(got, "*5\r\n:0\r\n") {
		t.Errorf("a peek on a read-only replica = %q, want it served", got)
	}
	if role := string(c.DoString("ROLE")); !strings.HasPrefix(role, "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n") {
		t.Errorf("ROLE of a replica = %q", role)
	}
	if err := s.SetConfig([2]string{"replica-read-only", "no"}); err != nil {
		t.Fatal(err)
	}
	run(t, c, []step{{[]string{"SET", "k", "w"}, "+OK\r\n"}})
	if err := s.SetConfig([2]string{"replica-read-only", "yes"}); err != nil {
		t.Fatal(err)
	}
	run(t, c, []step{
		{[]string{"SET", "k", "x"}, readOnly},
		{[]string{"REPLICAOF", "NO", "ONE"}, "+OK\r\n"},
		{[]string{"SET", "k", "x"}, "+OK\r\n"},
	})
	if role := string(c.DoString("ROLE")); !strings.HasPrefix(role, "*3\r\n$6\r\nmaster\r\n") {
		t.Errorf("ROLE of a promoted replica = %q", role)
	}
	if s.ReadOnly() {
		t.Error("ReadOnly() = true on a primary")
	}
}

// TestCommands: the replies that need no link: ROLE of a primary, WAIT
// with no socket to wait on, PSYNC with none to send on, REPLCONF's
// options and REPLICAOF's arguments.
func TestCommands(t *testing.T) {
	t.Parallel()
	c := newServer(t, config.Default()).NewLocalClient()
	run(t, c, []step{
		{[]string{"ROLE"}, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"},
		{[]string{"WAIT", "1", "100"}, ":0\r\n"},
		{[]string{"WAIT", "x", "100"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"WAIT", "1", "x"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"WAIT", "1", "-1"}, "-ERR timeout is negative\r\n"},
		{[]string{"PSYNC", "?", "-1"}, "-ERR PSYNC needs a connection\r\n"},
		{[]string{"PSYNC", "?", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"REPLCONF", "listening-port", "6380", "capa", "psync2"}, "+OK\r\n"},
		{[]string{"REPLCONF", "listening-port", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"REPLCONF", "listening-port"}, "-ERR syntax error\r\n"},
		{[]string{"REPLCONF", "nosuch", "1"}, "-ERR Unrecognized REPLCONF option: nosuch\r\n"},
		{[]string{"REPLCONF", "ACK", "5"}, ""},
		{[]string{"REPLICAOF", "127.0.0.1", "70000"}, "-ERR Invalid master port\r\n"},
		{[]string{"REPLICAOF", "NO", "ONE"}, "+OK\r\n"},
	})
}
