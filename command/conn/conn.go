// Package conn is the connection family, as Redis's connection group has
// it: PING, ECHO, QUIT, RESET, SELECT, HELLO and CLIENT (ID, SETNAME,
// GETNAME, SETINFO, INFO, LIST, KILL, HELP).
//
// It owns no state: a client's identity, name, library, protocol and
// authentication, and the registry of clients, stay in the core, which
// every gate and family reads; this family reads and changes them through
// the Client's methods and lists clients through Env.Clients. HELLO's AUTH
// and RESET's new authentication go through the core's auth machinery
// (Client.Authenticate, Client.Reset).
//
// A replica's link to its primary is listed and killed as Redis's master
// client (flags=M, TYPE master) through the replication Manager in Env.
//
// It imports the command core, the configuration and replication; never
// another family, the transport or the assembly.
package conn

import (
	"fmt"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/replication"
)

// Family is the connection commands.
type Family struct {
	clients func() []*command.Client
	repl    *replication.Manager // the link to a primary, listed and killed as Redis's master client; nil in a configuration check
}

// New returns the family.
func New() *Family { return &Family{} }

// Register adds the connection commands to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.clients, f.repl = env.Clients, env.Replication
	t.Register(
		&command.Command{Name: "ping", Arity: -1, MaxArgs: 2, Flags: command.FlagFast | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns PONG, or the message given.", Syntax: "[message]", Handler: cmdPing},
		&command.Command{Name: "echo", Arity: 2, Flags: command.FlagFast | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the given string.", Syntax: "message", Handler: cmdEcho},
		&command.Command{Name: "quit", Arity: -1, Flags: command.FlagFast | command.FlagNoAuth | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Closes the connection.", Handler: cmdQuit},
		&command.Command{Name: "reset", Arity: 1, Flags: command.FlagFast | command.FlagNoAuth | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Resets the connection to a new one's state: ends MULTI, forgets WATCH, drops the name, goes back to RESP2 and to a new connection's authentication.",
			Handler: cmdReset},
		&command.Command{Name: "select", Arity: 2, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Selects the database; limitdb has only database 0.", Syntax: "index", Handler: cmdSelect},
		&command.Command{Name: "hello", Arity: -1, Flags: command.FlagFast | command.FlagNoAuth | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Handshakes: chooses RESP2 or RESP3, authenticates, names the connection.",
			Syntax: "[protover [AUTH username password] [SETNAME clientname]]", Handler: cmdHello},
		&command.Command{Name: "client", Arity: -2, Flags: 0, Group: "connection", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Inspects and names client connections.", Syntax: "subcommand",
			Subs: []*command.Command{
				{Name: "client|id", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Returns the connection's unique ID.", Handler: cmdClientID},
				{Name: "client|setname", Arity: 3, Flags: command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Names the connection.", Syntax: "connection-name", Handler: cmdClientSetName},
				{Name: "client|getname", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Returns the connection's name.", Handler: cmdClientGetName},
				{Name: "client|setinfo", Arity: 4, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Records the client library's name or version.", Syntax: "LIB-NAME libname|LIB-VER libver", Handler: cmdClientSetInfo},
				{Name: "client|info", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Describes this connection.", Handler: cmdClientInfo},
				{Name: "client|list", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(N) where N is the number of clients", Summary: "Lists the open connections.", Syntax: "[ID client-id [client-id ...]]", Handler: f.cmdClientList},
				{Name: "client|kill", Arity: -3, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale | command.FlagDangerous, Group: "connection", Since: "0.1.0",
					Complexity: "O(N) where N is the number of clients", Summary: "Closes connections by address (old form, answers OK) or by filters (answers how many).",
					Syntax: "ip:port | [ID client-id] [ADDR ip:port] [LADDR ip:port] [USER username] [SKIPME yes|no]", Handler: f.cmdClientKill},
				{Name: "client|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CLIENT subcommands.", Handler: command.HelpFor("client")},
			}},
	)
}

// masterClient is a replica's link to its primary while it applies the
// stream.
func (f *Family) masterClient() (replication.MasterClient, bool) {
	if f.repl == nil {
		return replication.MasterClient{}, false
	}
	return f.repl.MasterClient()
}

// masterInfo is the master client's CLIENT LIST line, in the fields and
// order of every client's (command.Client.Info), with what Redis shows
// for its master client: flags=M, user=(superuser), nothing buffered.
// limitdb's stream carries effects, not commands: cmd is NULL.
func masterInfo(mc replication.MasterClient) string {
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name= age=%d idle=%d flags=M db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=(superuser) redir=-1 resp=2 lib-name= lib-ver=",
		mc.ID, mc.Addr, mc.LAddr, mc.Age, mc.Idle)
}

func cmdPing(c *command.Client, args [][]byte) {
	if c.Proto() < 3 && c.Class() == config.ClassPubSub { // as Redis answers a subscribed RESP2 client
		c.Array(2)
		c.BulkString("pong")
		if len(args) > 1 {
			c.Bulk(args[1])
		} else {
			c.BulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		c.Simple("PONG")
	default:
		c.Bulk(args[1])
	}
}

func cmdEcho(c *command.Client, args [][]byte) { c.Bulk(args[1]) }

func cmdQuit(c *command.Client, _ [][]byte) {
	c.OK()
	c.Close()
}

// cmdReset answers RESET as Redis does: the connection becomes what a new
// one is (Client.Reset), except for its id, its address and the library
// name and version the client gave (CLIENT SETINFO), which still describe
// it. Inside MULTI it runs at once rather than being queued.
func cmdReset(c *command.Client, _ [][]byte) {
	c.Reset()
	c.Simple("RESET")
}

func cmdSelect(c *command.Client, args [][]byte) {
	n, err := command.ParseInt(args[1])
	if err != nil {
		c.Error(err)
		return
	}
	if n != 0 {
		c.Err("ERR DB index is out of range")
		return
	}
	c.OK()
}

func cmdHello(c *command.Client, args [][]byte) {
	proto := c.Proto()
	if len(args) >= 2 {
		v, err := command.ParseInt(args[1])
		if err != nil {
			c.Err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.Err("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "auth") && i+2 < len(args):
			if !c.Authenticate(args[i+1], args[i+2]) {
				return
			}
			i += 2
		case command.EqualFold(args[i], "setname") && i+1 < len(args):
			name = args[i+1]
			setName = true
			i++
		default:
			c.Errf("Syntax error in HELLO option '%s'", command.Clip(args[i]))
			return
		}
	}
	if !c.Authenticated() {
		c.Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !validClientName(name) {
			c.Err(errClientName)
			return
		}
		c.SetName(string(name))
	}
	c.SetProto(proto)
	c.Map(7)
	c.BulkString("server")
	c.BulkString("redis")
	c.BulkString("version")
	c.BulkString(command.RedisVersion)
	c.BulkString("proto")
	c.Int(int64(proto))
	c.BulkString("id")
	c.Int(c.ID)
	c.BulkString("mode")
	c.BulkString("standalone")
	c.BulkString("role")
	c.BulkString("master")
	c.BulkString("modules")
	c.Array(0)
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName reports whether b is a name Redis accepts for a client
// or its library: printable ASCII, no spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientID(c *command.Client, _ [][]byte) { c.Int(c.ID) }

func cmdClientSetName(c *command.Client, args [][]byte) {
	if !validClientName(args[2]) {
		c.Err(errClientName)
		return
	}
	c.SetName(string(args[2]))
	c.OK()
}

func cmdClientGetName(c *command.Client, _ [][]byte) {
	name := c.Name()
	if name == "" {
		c.Null()
		return
	}
	c.BulkString(name)
}

func cmdClientSetInfo(c *command.Client, args [][]byte) {
	if !validClientName(args[3]) {
		c.Err("ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.")
		return
	}
	switch {
	case command.EqualFold(args[2], "lib-name"):
		c.SetLibName(string(args[3]))
	case command.EqualFold(args[2], "lib-ver"):
		c.SetLibVersion(string(args[3]))
	default:
		c.Errf("Unrecognized option '%s'", command.Clip(args[2]))
		return
	}
	c.OK()
}

func cmdClientInfo(c *command.Client, _ [][]byte) { c.Verbatim(c.Info() + "\n") }

func (f *Family) cmdClientList(c *command.Client, args [][]byte) {
	var only map[int64]bool
	if len(args) > 2 {
		if !command.EqualFold(args[2], "id") || len(args) < 4 {
			c.Err("ERR syntax error")
			return
		}
		only = map[int64]bool{}
		for _, a := range args[3:] {
			id, err := command.ParseInt(a)
			if err != nil || id <= 0 {
				c.Errf("Invalid client ID")
				return
			}
			only[id] = true
		}
	}
	var b strings.Builder
	mc, hasMaster := f.masterClient()
	for _, cl := range f.clients() {
		if hasMaster && mc.ID < cl.ID { // in ID order
			if only == nil || only[mc.ID] {
				b.WriteString(masterInfo(mc))
				b.WriteByte('\n')
			}
			hasMaster = false
		}
		if only == nil || only[cl.ID] {
			b.WriteString(cl.Info())
			b.WriteByte('\n')
		}
	}
	if hasMaster && (only == nil || only[mc.ID]) {
		b.WriteString(masterInfo(mc))
		b.WriteByte('\n')
	}
	c.Verbatim(b.String())
}
