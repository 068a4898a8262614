package clustering_test

import (
	"io"
	"log"
	"regexp"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/monitor"
	"github.com/limitdb/limitdb/command/pubsub"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/command/replicas"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with every family, in the order the node
// registers them: the keys the cluster commands route, count and move
// are the other families'.
func newServer(t testing.TB, cfg config.Config, clk clock.Clock) *command.Server {
	t.Helper()
	s := command.New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0),
		conn.New(), keyspace.New(), scripts.New(), ratelimit.New(), pubsub.New(), monitor.New(), admin.New(), replicas.New(), clustering.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newLocal is a client of a server outside cluster mode, and its clock.
func newLocal(t testing.TB) (*command.LocalClient, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(1_700_000_000e9)
	return newServer(t, config.Default(), clk).NewLocalClient(), clk
}

// newClusterLocal is a client of an emulated cluster keeping its node id
// in dir.
func newClusterLocal(t *testing.T, dir string) *command.LocalClient {
	t.Helper()
	cfg := config.Default()
	cfg.ClusterEnabled = "emulated"
	cfg.Dir = dir
	return newServer(t, cfg, clock.NewFake(1_700_000_000e9)).NewLocalClient()
}

// TestClusterReplies checks emulated cluster mode's replies against
// redis-server 7's, field by field (a one-node redis-server with
// cluster-enabled yes and CLUSTER ADDSLOTSRANGE 0 16383).
func TestClusterReplies(t *testing.T) {
	t.Parallel()
	c := newClusterLocal(t, t.TempDir())
	id := strings.Split(string(c.DoString("CLUSTER", "MYID")), "\r\n")[1]
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(id) {
		t.Fatalf("CLUSTER MYID = %q, want 40 hex digits", id)
	}
	for i, st := range []struct {
		args []string
		want string // a regexp; ID stands for the node id
	}{
		{[]string{"CLUSTER", "KEYSLOT", "foo"}, `:12182\r\n`},
		{[]string{"CLUSTER", "KEYSLOT", "{user1000}.following"}, `:3443\r\n`},
		{[]string{"CLUSTER", "INFO"}, `\$\d+\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n\r\n`},
		{[]string{"CLUSTER", "NODES"}, `\$\d+\r\nID 127\.0\.0\.1:(\d+)@(\d+) myself,master - 0 0 0 connected 0-16383\n\r\n`},
		{[]string{"CLUSTER", "SLOTS"}, `\*1\r\n\*3\r\n:0\r\n:16383\r\n\*4\r\n\$9\r\n127\.0\.0\.1\r\n:\d+\r\n\$40\r\nID\r\n\*0\r\n`},
		{[]string{"CLUSTER", "SHARDS"}, `\*1\r\n\*4\r\n\$5\r\nslots\r\n\*2\r\n:0\r\n:16383\r\n\$5\r\nnodes\r\n\*1\r\n\*14\r\n\$2\r\nid\r\n\$40\r\nID\r\n\$4\r\nport\r\n:\d+\r\n\$2\r\nip\r\n\$9\r\n127\.0\.0\.1\r\n\$8\r\nendpoint\r\n\$9\r\n127\.0\.0\.1\r\n\$4\r\nrole\r\n\$6\r\nmaster\r\n\$18\r\nreplication-offset\r\n:0\r\n\$6\r\nhealth\r\n\$6\r\nonline\r\n`},
		{[]string{"CLUSTER", "MYSHARDID"}, `\$40\r\n[0-9a-f]{40}\r\n`},
		{[]string{"SET", "foo", "1"}, `\+OK\r\n`},
		{[]string{"SET", "{foo}2", "1"}, `\+OK\r\n`},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "12182"}, `:2\r\n`},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "12182", "10"}, `\*2\r\n\$3\r\nfoo\r\n\$6\r\n\{foo\}2\r\n`},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "12182", "1"}, `\*1\r\n\$3\r\nfoo\r\n`},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, `-ERR Invalid slot\r\n`},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "x"}, `-ERR value is not an integer or out of range\r\n`},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "-1"}, `-ERR Invalid slot or number of keys\r\n`},
		{[]string{"CLUSTER", "KEYSLOT"}, `-ERR wrong number of arguments for 'cluster\|keyslot' command\r\n`},
		{[]string{"READONLY"}, `\+OK\r\n`},
		{[]string{"READWRITE"}, `\+OK\r\n`},
		{[]string{"MSET", "a", "1", "b", "2"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"MSET", "{a}1", "1", "{a}2", "2"}, `\+OK\r\n`},
		{[]string{"DEL", "foo", "bar"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"EVAL", "return 1", "2", "a", "b"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"EVAL", "return 1", "2", "{a}x", "{a}y"}, `:1\r\n`},
		{[]string{"RL.HITALL", "2", "p", "a", "p", "b"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"MULTI"}, `\+OK\r\n`},
		{[]string{"SET", "a", "1"}, `\+QUEUED\r\n`},
		{[]string{"SET", "b", "2"}, `\+QUEUED\r\n`},
		{[]string{"EXEC"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"EXEC"}, `-ERR EXEC without MULTI\r\n`},
		{[]string{"MULTI"}, `\+OK\r\n`},
		{[]string{"SET", "{a}x", "1"}, `\+QUEUED\r\n`},
		{[]string{"GET", "{a}y"}, `\+QUEUED\r\n`},
		{[]string{"EXEC"}, `\*2\r\n\+OK\r\n\$-1\r\n`},
		{[]string{"MULTI"}, `\+OK\r\n`},
		{[]string{"MSET", "a", "1", "b", "2"}, `-CROSSSLOT Keys in request don't hash to the same slot\r\n`},
		{[]string{"EXEC"}, `-EXECABORT Transaction discarded because of previous errors\.\r\n`},
		{[]string{"INFO", "cluster"}, `cluster_enabled:1\r\n`},
		{[]string{"INFO", "server"}, `redis_mode:cluster\r\n`},
	} {
		want := regexp.MustCompile(strings.ReplaceAll(st.want, "ID", id))
		if got := string(c.DoString(st.args...)); !want.MatchString(got) {
			t.Errorf("step %d: %q = %q, want %s", i, st.args, got, want)
		}
	}
}

// TestClusterNodeIDSurvivesRestart: the node id is kept in --dir.
func TestClusterNodeIDSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := string(newClusterLocal(t, dir).DoString("CLUSTER", "MYID"))
	if again := string(newClusterLocal(t, dir).DoString("CLUSTER", "MYID")); again != first {
		t.Errorf("CLUSTER MYID after a restart = %q, want %q", again, first)
	}
	if other := string(newClusterLocal(t, t.TempDir()).DoString("CLUSTER", "MYID")); other == first {
		t.Errorf("two data directories share node id %q", first)
	}
}

// TestClusterDisabled: outside cluster mode the commands answer as a
// standalone redis-server's, and keys in several slots are fine.
func TestClusterDisabled(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	for i, st := range []struct {
		args []string
		want string
	}{
		{[]string{"CLUSTER", "INFO"}, "-ERR This instance has cluster support disabled\r\n"},
		{[]string{"READONLY"}, "-ERR This instance has cluster support disabled\r\n"},
		{[]string{"MSET", "a", "1", "b", "2"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "cluster-enabled", "yes"}, "-ERR CONFIG SET failed (possibly related to argument 'cluster-enabled') - can't set immutable config\r\n"},
	} {
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
	if got := string(c.DoString("INFO", "cluster")); !strings.Contains(got, "cluster_enabled:0\r\n") {
		t.Errorf("INFO cluster = %q, want cluster_enabled:0", got)
	}
}
