package conn_test

import (
	"io"
	"log"
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with the connection family alone, on a
// fake clock.
func newServer(t *testing.T, cfg config.Config) *command.Server {
	t.Helper()
	s := command.New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), conn.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// step is one command of a client and the reply it must get.
type step struct {
	on   string
	args []string
	want string
}

// run walks steps on the clients named, each a LocalClient of s, and
// reports the first reply that differs at each step.
func run(t *testing.T, s *command.Server, steps []step) map[string]*command.LocalClient {
	t.Helper()
	clients := map[string]*command.LocalClient{}
	for i, st := range steps {
		c := clients[st.on]
		if c == nil {
			c = s.NewLocalClient()
			clients[st.on] = c
		}
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %s %q = %q, want %q", i, st.on, st.args, got, st.want)
		}
	}
	return clients
}

// TestConnectionCommands: PING, ECHO, SELECT, HELLO in both protocols,
// the client's name and library, one step at a time. The replies are
// Redis 7.2's.
func TestConnectionCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	hello := func(proto string) string {
		return "*14\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.2.0") + bulk("proto") + ":" + proto + "\r\n" +
			bulk("id") + ":1\r\n" + bulk("mode") + bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") + "*0\r\n"
	}
	hello3 := "%7\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.2.0") + bulk("proto") + ":3\r\n" +
		bulk("id") + ":1\r\n" + bulk("mode") + bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") + "*0\r\n"
	run(t, s, []step{
		{"a", []string{"PING"}, "+PONG\r\n"},
		{"a", []string{"PING", "hi"}, bulk("hi")},
		{"a", []string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"a", []string{"ECHO", "x y"}, bulk("x y")},
		{"a", []string{"SELECT", "0"}, "+OK\r\n"},
		{"a", []string{"SELECT", "1"}, "-ERR DB index is out of range\r\n"},
		{"a", []string{"SELECT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{"a", []string{"CLIENT", "ID"}, ":1\r\n"},
		{"a", []string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{"a", []string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{"a", []string{"CLIENT", "SETNAME", "app"}, "+OK\r\n"},
		{"a", []string{"CLIENT", "GETNAME"}, bulk("app")},
		{"a", []string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis"}, "+OK\r\n"},
		{"a", []string{"CLIENT", "SETINFO", "lib-ver", "9.0"}, "+OK\r\n"},
		{"a", []string{"CLIENT", "SETINFO", "LIB-VER", "9 0"}, "-ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.\r\n"},
		{"a", []string{"CLIENT", "SETINFO", "colour", "red"}, "-ERR Unrecognized option 'colour'\r\n"},
		{"a", []string{"CLIENT", "NOPE"}, "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n"},
		{"a", []string{"HELLO", "4"}, "-NOPROTO unsupported protocol version\r\n"},
		{"a", []string{"HELLO", "x"}, "-ERR Protocol version is not an integer or out of range\r\n"},
		{"a", []string{"HELLO", "3", "NOPE"}, "-ERR Syntax error in HELLO option 'NOPE'\r\n"},
		{"a", []string{"HELLO", "3", "SETNAME", "a\nb"}, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{"a", []string{"HELLO"}, hello("2")},
		{"a", []string{"HELLO", "3", "SETNAME", "app3"}, hello3},
		{"a", []string{"CLIENT", "GETNAME"}, bulk("app3")},
		{"a", []string{"HELLO"}, hello3},
		{"a", []string{"HELLO", "2"}, hello("2")},
		{"a", []string{"HELLO", "3", "AUTH", "default", "any"}, hello3}, // the default user has no password
	})
}

// TestClientInfoAndList: CLIENT INFO describes the caller and CLIENT LIST
// every client in id order, or those named by ID, in Redis's fields.
func TestClientInfoAndList(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	a, b := s.NewLocalClient(), s.NewLocalClient()
	a.DoString("CLIENT", "SETNAME", "first")
	b.DoString("CLIENT", "SETINFO", "LIB-NAME", "redis-py")
	b.DoString("HELLO", "3")
	line := func(id, name, cmd, resp, lib string) string {
		return "id=" + id + " addr=local laddr=local fd=-1 name=" + name + " age=0 idle=0 flags=N db=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=" + cmd + " user=default redir=-1 resp=" + resp + " lib-name=" + lib + " lib-ver="
	}
	if got, want := string(a.DoString("CLIENT", "INFO")), bulk(line("1", "first", "client|info", "2", "")+"\n"); got != want {
		t.Errorf("CLIENT INFO = %q, want %q", got, want)
	}
	all := line("1", "first", "client|list", "2", "") + "\n" + line("2", "", "hello", "3", "redis-py") + "\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "LIST"}, bulk(all)},
		{[]string{"CLIENT", "LIST", "ID", "2", "7"}, bulk(line("2", "", "hello", "3", "redis-py") + "\n")},
		{[]string{"CLIENT", "LIST", "ID"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "LIST", "TYPE", "normal"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "LIST", "ID", "0"}, "-ERR Invalid client ID\r\n"},
	} {
		if got := string(a.DoString(tc.args...)); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// MULTI shows as flag x and the commands queued.
	a.DoString("MULTI")
	a.DoString("PING")
	if got := string(b.DoString("CLIENT", "LIST", "ID", "1")); !strings.Contains(got, " flags=x db=0 ssub=0 multi=1 ") {
		t.Errorf("CLIENT LIST of a client inside MULTI: %q", got)
	}
}

// TestClientKill: both forms of CLIENT KILL, its filters and their
// errors. A killed client runs no more commands: its next one closes it,
// unanswered.
func TestClientKill(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	steps := []step{
		{"k", []string{"CLIENT", "KILL", "nowhere:1"}, "-ERR No such client\r\n"},
		{"a", []string{"CLIENT", "SETNAME", "a"}, "+OK\r\n"},
		{"b", []string{"CLIENT", "SETNAME", "b"}, "+OK\r\n"},
		{"k", []string{"CLIENT", "KILL", "ID"}, "-ERR No such client\r\n"}, // the old form: an address
		{"k", []string{"CLIENT", "KILL", "ID", "1", "ADDR"}, "-ERR syntax error\r\n"},
		{"k", []string{"CLIENT", "KILL", "ID", "0"}, "-ERR client-id should be greater than 0\r\n"},
		{"k", []string{"CLIENT", "KILL", "TYPE", "bogus"}, "-ERR Unknown client type 'bogus'\r\n"},
		{"k", []string{"CLIENT", "KILL", "SKIPME", "maybe"}, "-ERR syntax error\r\n"},
		{"k", []string{"CLIENT", "KILL", "NOPE", "x"}, "-ERR syntax error\r\n"},
		{"k", []string{"CLIENT", "KILL", "TYPE", "master"}, ":0\r\n"},
		{"k", []string{"CLIENT", "KILL", "TYPE", "pubsub"}, ":0\r\n"},
		{"k", []string{"CLIENT", "KILL", "USER", "nobody"}, "-ERR No such user 'nobody'\r\n"},
		{"k", []string{"CLIENT", "KILL", "ID", "2"}, ":1\r\n"}, // a
		{"a", []string{"PING"}, ""},
		{"k", []string{"CLIENT", "KILL", "ID", "2"}, ":0\r\n"},                           // killed already
		{"k", []string{"CLIENT", "KILL", "TYPE", "normal", "USER", "default"}, ":1\r\n"}, // b, not k
		{"b", []string{"PING"}, ""},
		{"k", []string{"PING"}, "+PONG\r\n"},
		{"k", []string{"CLIENT", "KILL", "ADDR", "local", "SKIPME", "no"}, ":1\r\n"},
		{"k", []string{"PING"}, ""},
	}
	run(t, s, steps)
}

// TestClientKillOldForm: CLIENT KILL ip:port answers OK and kills the
// first client at that address.
func TestClientKillOldForm(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	run(t, s, []step{
		{"a", []string{"PING"}, "+PONG\r\n"},
		{"k", []string{"CLIENT", "KILL", "local"}, "+OK\r\n"},
		{"a", []string{"PING"}, ""},
		{"k", []string{"PING"}, "+PONG\r\n"},
	})
}

// TestHelloAuthAndReset: with a password, HELLO authenticates or answers
// NOAUTH, and RESET makes the connection a new one again: RESP2, no name,
// not authenticated, its library kept.
func TestHelloAuthAndReset(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.RequirePass = "secret"
	s := newServer(t, cfg)
	noauth := "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"
	c := run(t, s, []step{
		{"a", []string{"PING"}, "-NOAUTH Authentication required.\r\n"},
		{"a", []string{"HELLO", "3"}, noauth},
		{"a", []string{"HELLO", "3", "AUTH", "default", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"a", []string{"PING"}, "-NOAUTH Authentication required.\r\n"},
	})["a"]
	if got := string(c.DoString("HELLO", "3", "AUTH", "default", "secret", "SETNAME", "n")); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH answered %q", got)
	}
	c.DoString("CLIENT", "SETINFO", "LIB-NAME", "lib")
	c.DoString("MULTI")
	for _, st := range []step{
		{"a", []string{"PING"}, "+QUEUED\r\n"},
		{"a", []string{"RESET"}, "+RESET\r\n"},
		{"a", []string{"EXEC"}, "-NOAUTH Authentication required.\r\n"},
		{"a", []string{"CLIENT", "GETNAME"}, "-NOAUTH Authentication required.\r\n"},
		{"a", []string{"AUTH", "secret"}, "+OK\r\n"},
		{"a", []string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{"a", []string{"CLIENT", "GETNAME"}, "$-1\r\n"},
	} {
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("%q = %q, want %q", st.args, got, st.want)
		}
	}
	if got := string(c.DoString("CLIENT", "INFO")); !strings.Contains(got, " resp=2 lib-name=lib lib-ver=") {
		t.Errorf("after RESET, CLIENT INFO = %q: want RESP2 and the library kept", got)
	}
}

// TestClientHelp lists the CLIENT subcommands from the table.
func TestClientHelp(t *testing.T) {
	t.Parallel()
	s := newServer(t, config.Default())
	got := string(s.NewLocalClient().DoString("CLIENT", "HELP"))
	for _, want := range []string{"*17\r\n", "+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n", "+KILL ip:port | [ID client-id]", "+    Lists the CLIENT subcommands.\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("CLIENT HELP = %q, want it to contain %q", got, want)
		}
	}
}
