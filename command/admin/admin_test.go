package admin_test

import (
	"errors"
	"io"
	"log"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/command/persist"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with this family and the families given,
// on clk.
func newServer(t *testing.T, cfg config.Config, clk clock.Clock, families ...command.Family) *command.Server {
	t.Helper()
	s := command.New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0), append([]command.Family{admin.New()}, families...)...)
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

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

// TestTime: TIME answers the engine's clock as seconds and microseconds.
func TestTime(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9 + 1_234_567_891)
	c := newServer(t, config.Default(), clk).NewLocalClient()
	run(t, c, []step{
		{[]string{"TIME"}, "*2\r\n" + bulk("1700000001") + bulk("234567")},
		{[]string{"TIME", "x"}, "-ERR wrong number of arguments for 'time' command\r\n"},
	})
}

var header = regexp.MustCompile(`(?m)^# (\w+)\r$`)

// headers lists the section titles of an INFO reply, in order.
func headers(info string) []string {
	var out []string
	for _, m := range header.FindAllStringSubmatch(info, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestInfoSections: the family's sections take their places among the
// core's, the persistence, envoy and cluster families', in the order
// INFO has always shown them; commandstats and latencystats show only when
// asked for, after the envoy family's hidden rls, which the node registers
// before this family.
func TestInfoSections(t *testing.T) {
	t.Parallel()
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), envoy.New(nil), admin.New(), clustering.New(), persist.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := s.NewLocalClient()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Server Clients Memory Persistence Stats Limits CPU Cluster Keyspace"},
		{[]string{"default"}, "Server Clients Memory Persistence Stats Limits CPU Cluster Keyspace"},
		{[]string{"all"}, "Server Clients Memory Persistence Stats Limits CPU Cluster Keyspace Rls Commandstats Latencystats"},
		{[]string{"everything"}, "Server Clients Memory Persistence Stats Limits CPU Cluster Keyspace Rls Commandstats Latencystats"},
		{[]string{"CPU", "commandstats", "server"}, "Server CPU Commandstats"},
		{[]string{"nosuch"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if got := strings.Join(headers(string(c.DoString(append([]string{"INFO"}, tc.args...)...))), " "); got != tc.want {
				t.Errorf("INFO %q sections = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
	if got := s.Info([]byte("server")); !strings.HasPrefix(got, "# Server\r\nredis_version:"+command.RedisVersion+"\r\n") {
		t.Errorf("Server.Info(server) = %q", got)
	}
}

// field is the value of name in an INFO reply.
func field(t *testing.T, info, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(.*)\r$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO has no %s: %q", name, info)
	}
	return m[1]
}

// fields lists the field names of an INFO section, in order.
func fields(info string) string {
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}

// TestInfoFields: each of the family's sections names its fields in
// Redis's order, and takes its figures from the core, the configuration
// and the clock.
func TestInfoFields(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	cfg := config.Default()
	cfg.Port, cfg.MaxMemory = 7000, 3<<20
	s := newServer(t, cfg, clk)
	c := s.NewLocalClient()
	clk.Advance(2*24*time.Hour + 5*time.Second)
	for _, tc := range []struct{ section, fields string }{
		{"server", "redis_version limitdb_version redis_mode os arch_bits go_version process_id run_id tcp_port uptime_in_seconds uptime_in_days gomaxprocs shards bind config_file"},
		{"clients", "connected_clients maxclients client_recent_max_output_buffer blocked_clients"},
		{"memory", "used_memory used_memory_human used_memory_rss used_memory_rss_human used_memory_sys heap_objects gc_cycles mem_clients_normal used_memory_dataset used_memory_dataset_human used_memory_keyspace_allocated maxmemory maxmemory_human maxmemory_policy"},
		{"stats", "total_connections_received total_commands_processed rejected_connections expired_keys evicted_keys keyspace_hits keyspace_misses"},
		{"cpu", "used_cpu_sys used_cpu_user"},
	} {
		if got := fields(string(c.DoString("INFO", tc.section))); got != tc.fields {
			t.Errorf("INFO %s fields = %q, want %q", tc.section, got, tc.fields)
		}
	}
	info := string(c.DoString("INFO", "server", "clients", "memory"))
	for name, want := range map[string]string{
		"redis_mode": "standalone", "tcp_port": "7000", "uptime_in_seconds": "172805", "uptime_in_days": "2",
		"connected_clients": "1", "maxmemory": "3145728", "maxmemory_human": "3.00M", "limitdb_version": command.Version,
	} {
		if got := field(t, info, name); got != want {
			t.Errorf("INFO %s = %q, want %q", name, got, want)
		}
	}
	s.SetListenPort(7001)
	if got := field(t, string(c.DoString("INFO", "server")), "tcp_port"); got != "7001" {
		t.Errorf("tcp_port once listening = %s, want 7001", got)
	}
	if got := field(t, string(c.DoString("INFO", "server")), "run_id"); !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(got) {
		t.Errorf("run_id = %q", got)
	}
	cfg.ClusterEnabled = "emulated"
	cfg.Dir = ""
	cl := newServer(t, cfg, clk).NewLocalClient()
	if got := field(t, string(cl.DoString("INFO", "server")), "redis_mode"); got != "cluster" {
		t.Errorf("redis_mode with cluster-enabled emulated = %q, want cluster", got)
	}
}

// TestCommandStatsAndReset: commandstats counts calls, refusals and
// failures per command and subcommand; CONFIG RESETSTAT zeroes them and
// the commands processed, and runs what families added with OnResetStat.
func TestCommandStatsAndReset(t *testing.T) {
	t.Parallel()
	resets := 0
	s := newServer(t, config.Default(), clock.NewFake(1_700_000_000e9), resetCounter{&resets})
	c := s.NewLocalClient()
	c.DoString("TIME")
	c.DoString("TIME")
	c.DoString("TIME", "extra")
	c.DoString("CONFIG", "GET", "maxclients")
	c.DoString("CONFIG", "SET", "nosuch", "1")
	stats := string(c.DoString("INFO", "commandstats"))
	for _, want := range []string{
		"\r\ncmdstat_config|get:calls=1,usec=",
		",rejected_calls=0,failed_calls=0\r\ncmdstat_config|set:calls=1,usec=",
		",rejected_calls=0,failed_calls=1\r\ncmdstat_time:calls=2,usec=",
		",rejected_calls=1,failed_calls=0\r\n\r\n",
	} {
		if !strings.Contains(stats, want) {
			t.Errorf("INFO commandstats lacks %q: %q", want, stats)
		}
	}
	if got := field(t, string(c.DoString("INFO", "stats")), "total_commands_processed"); got != "6" {
		t.Errorf("total_commands_processed = %s, want 6", got)
	}
	if !strings.Contains(string(c.DoString("INFO", "latencystats")), "latency_percentiles_usec_time:p50=") {
		t.Error("INFO latencystats lacks TIME")
	}
	run(t, c, []step{{[]string{"CONFIG", "RESETSTAT"}, "+OK\r\n"}})
	if resets != 1 {
		t.Errorf("OnResetStat ran %d times, want 1", resets)
	}
	if got := string(c.DoString("INFO", "commandstats")); !strings.HasSuffix(got, "# Commandstats\r\ncmdstat_config|resetstat:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n\r\n") {
		t.Errorf("INFO commandstats after RESETSTAT = %q", got)
	}
	if got := string(c.DoString("INFO", "latencystats")); strings.Contains(got, "_time:") {
		t.Errorf("INFO latencystats after RESETSTAT = %q", got)
	}
}

// resetCounter is a family that counts CONFIG RESETSTATs.
type resetCounter struct{ n *int }

func (r resetCounter) Register(t *command.Table, _ command.Env) { t.OnResetStat(func() { *r.n++ }) }

// TestConfig: CONFIG GET by glob, CONFIG SET all or none with Redis's
// errors, protected directives, REWRITE without a file, HELP.
func TestConfig(t *testing.T) {
	t.Parallel()
	c := newServer(t, config.Default(), clock.NewFake(1_700_000_000e9)).NewLocalClient()
	run(t, c, []step{
		{[]string{"CONFIG", "GET", "maxclients"}, "*2\r\n" + bulk("maxclients") + bulk("10000")},
		{[]string{"CONFIG", "GET", "maxmemory*", "MAXMEMORY"}, "*4\r\n" + bulk("maxmemory") + bulk("0") + bulk("maxmemory-policy") + bulk("noeviction")},
		{[]string{"CONFIG", "GET", "nosuch"}, "*0\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory", "1mb", "maxmemory-policy", "volatile-ttl"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "*2\r\n" + bulk("maxmemory") + bulk("1048576")},
		{[]string{"CONFIG", "SET", "maxmemory", "2mb", "nosuch", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "*2\r\n" + bulk("maxmemory") + bulk("1048576")},
		{[]string{"CONFIG", "SET", "maxmemory"}, "-ERR wrong number of arguments for 'config|set' command\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory", "1", "maxclients"}, "-ERR wrong number of arguments for 'config|set' command\r\n"},
		{[]string{"CONFIG", "SET", "bind", "0.0.0.0"}, "-ERR CONFIG SET failed (possibly related to argument 'bind') - can't set immutable config\r\n"},
		{[]string{"CONFIG", "SET", "dbfilename", "x.rdb"}, "-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - can't set protected config\r\n"},
		{[]string{"CONFIG", "REWRITE"}, "-ERR The server is running without a config file\r\n"},
		{[]string{"CONFIG", "NOSUCH"}, "-ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP.\r\n"},
	})
	help := string(c.DoString("CONFIG", "HELP"))
	for _, want := range []string{"+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n", "+GET parameter [parameter ...]\r\n", "+RESETSTAT\r\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("CONFIG HELP lacks %q: %q", want, help)
		}
	}
	// A client with no socket is local: enable-protected-configs local
	// lets it change a protected directive.
	cfg := config.Default()
	cfg.EnableProtectedConfigs = "local"
	run(t, newServer(t, cfg, clock.NewFake(1_700_000_000e9)).NewLocalClient(), []step{
		{[]string{"CONFIG", "SET", "dbfilename", "x.rdb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "dbfilename"}, "*2\r\n" + bulk("dbfilename") + bulk("x.rdb")},
	})
}

// TestConfigSetReloads: CONFIG SET runs what the owner of a directive's
// state registered with OnReload, once per directive changed, and a
// failing reload fails the command with Redis's wording.
func TestConfigSetReloads(t *testing.T) {
	t.Parallel()
	r := &reloader{}
	c := newServer(t, config.Default(), clock.NewFake(1_700_000_000e9), r).NewLocalClient()
	run(t, c, []step{
		{[]string{"CONFIG", "SET", "slowlog-max-len", "5", "maxclients", "9"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "slowlog-max-len", "6", "slowlog-log-slower-than", "7"}, "+OK\r\n"},
	})
	if r.runs != 3 {
		t.Errorf("the slow log's reload ran %d times, want 3", r.runs)
	}
	r.err = errors.New("boom")
	run(t, c, []step{
		{[]string{"CONFIG", "SET", "slowlog-max-len", "8"}, "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - boom\r\n"},
		{[]string{"CONFIG", "GET", "slowlog-max-len"}, "*2\r\n" + bulk("slowlog-max-len") + bulk("8")},
	})
}

// reloader is a family that owns what the slow log's directives configure.
type reloader struct {
	runs int
	err  error
}

func (r *reloader) Register(t *command.Table, _ command.Env) {
	t.OnReload(config.ReloadSlowlog, func() error {
		r.runs++
		return r.err
	})
}

// TestCommandCommands: COMMAND and its subcommands describe the table,
// subcommands and containers included.
func TestCommandCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default(), clock.NewFake(1_700_000_000e9))
	c := s.NewLocalClient()
	n := len(s.Commands().Sorted())
	run(t, c, []step{
		{[]string{"COMMAND", "COUNT"}, ":" + strconv.Itoa(n) + "\r\n"},
		{[]string{"COMMAND", "INFO", "nosuch", "CONFIG|NOSUCH"}, "*2\r\n*-1\r\n*-1\r\n"},
		{[]string{"COMMAND", "INFO", "time"}, "*1\r\n*10\r\n" + bulk("time") + ":1\r\n*3\r\n+loading\r\n+stale\r\n+fast\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@fast\r\n*0\r\n*0\r\n*0\r\n"},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "conf*"}, "*6\r\n" + bulk("config") + bulk("config|get") + bulk("config|set") + bulk("config|rewrite") + bulk("config|resetstat") + bulk("config|help")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE", "x"}, "*0\r\n"},
		{[]string{"COMMAND", "LIST", "FILTERBY", "NOSUCH", "x"}, "-ERR syntax error\r\n"},
		{[]string{"COMMAND", "GETKEYS", "CONFIG", "GET", "x"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "CONFIG", "NOSUCH", "x"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "TIME", "x"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "NOSUCH", "x"}, "-ERR Invalid command specified\r\n"},
		{[]string{"COMMAND", "NOSUCH"}, "-ERR unknown subcommand 'NOSUCH'. Try COMMAND HELP.\r\n"},
	})
	docs := string(c.DoString("COMMAND", "DOCS", "config"))
	for _, want := range []string{"*2\r\n" + bulk("config") + "*12\r\n" + bulk("summary") + bulk("Reads and changes the configuration."), bulk("subcommands") + "*10\r\n" + bulk("config|get")} {
		if !strings.Contains(docs, want) {
			t.Errorf("COMMAND DOCS config lacks %q: %q", want, docs)
		}
	}
	if got := string(c.DoString("COMMAND")); !strings.HasPrefix(got, "*"+strconv.Itoa(n)+"\r\n") {
		t.Errorf("COMMAND = %.40q..., want %d entries", got, n)
	}
}

// TestShutdown: SHUTDOWN checks its options; in a command layer no
// assembly runs, it closes the command layer without saving.
func TestShutdown(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default(), clock.NewFake(1_700_000_000e9))
	c := s.NewLocalClient()
	run(t, c, []step{{[]string{"SHUTDOWN", "NOSUCH"}, "-ERR syntax error\r\n"}})
	select {
	case <-s.Done():
		t.Fatal("a refused SHUTDOWN closed the server")
	default:
	}
	c.DoString("SHUTDOWN", "NOSAVE", "NOW")
	select {
	case <-s.Done():
	default:
		t.Fatal("SHUTDOWN left the command layer open")
	}
}

// TestShutdownRequest: with an assembly that stops the server
// (RequestShutdown), SHUTDOWN saves first unless NOSAVE, and a save that
// fails keeps the server running and says why.
func TestShutdownRequest(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = file + "/dir" // under a file: no snapshot can be written
	s := newServer(t, cfg, clock.NewFake(1_700_000_000e9), persist.New())
	var asked []bool
	s.RequestShutdown = func(save bool) { asked = append(asked, save) }
	c := s.NewLocalClient()
	if got := string(c.DoString("SHUTDOWN")); !strings.HasPrefix(got, "-ERR Errors trying to SHUTDOWN. Check logs. (") {
		t.Errorf("SHUTDOWN with a save that fails = %q", got)
	}
	if len(asked) != 0 {
		t.Errorf("a failed save still asked to shut down: %v", asked)
	}
	c.DoString("SHUTDOWN", "NOSAVE")
	if len(asked) != 1 || asked[0] {
		t.Errorf("SHUTDOWN NOSAVE asked %v, want [false]", asked)
	}
}
