package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/limitdb/limitdb/acl"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
)

func registerConn(t *Table) {
	t.Register(
		&Command{Name: "ping", Arity: -1, MaxArgs: 2, Flags: FlagFast | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns PONG, or the message given.", Syntax: "[message]", Handler: cmdPing},
		&Command{Name: "echo", Arity: 2, Flags: FlagFast | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the given string.", Syntax: "message", Handler: cmdEcho},
		&Command{Name: "quit", Arity: -1, Flags: FlagFast | FlagNoAuth | FlagStale | FlagLoading, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Closes the connection.", Handler: cmdQuit},
		&Command{Name: "reset", Arity: 1, Flags: FlagFast | FlagNoAuth | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Resets the connection to a new one's state: ends MULTI, forgets WATCH, drops the name, goes back to RESP2 and to a new connection's authentication.",
			Handler: cmdReset},
		&Command{Name: "select", Arity: 2, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Selects the database; limitdb has only database 0.", Syntax: "index", Handler: cmdSelect},
		&Command{Name: "hello", Arity: -1, Flags: FlagFast | FlagNoAuth | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Handshakes: chooses RESP2 or RESP3, authenticates, names the connection.",
			Syntax: "[protover [AUTH username password] [SETNAME clientname]]", Handler: cmdHello},
		&Command{Name: "client", Arity: -2, Flags: 0, Group: "connection", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Inspects and names client connections.", Syntax: "subcommand",
			Subs: []*Command{
				{Name: "client|id", Arity: 2, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Returns the connection's unique ID.", Handler: cmdClientID},
				{Name: "client|setname", Arity: 3, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Names the connection.", Syntax: "connection-name", Handler: cmdClientSetName},
				{Name: "client|getname", Arity: 2, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Returns the connection's name.", Handler: cmdClientGetName},
				{Name: "client|setinfo", Arity: 4, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Records the client library's name or version.", Syntax: "LIB-NAME libname|LIB-VER libver", Handler: cmdClientSetInfo},
				{Name: "client|info", Arity: 2, Flags: FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Describes this connection.", Handler: cmdClientInfo},
				{Name: "client|list", Arity: -2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(N) where N is the number of clients", Summary: "Lists the open connections.", Syntax: "[ID client-id [client-id ...]]", Handler: cmdClientList},
				{Name: "client|kill", Arity: -3, Flags: FlagAdmin | FlagLoading | FlagStale | FlagDangerous, Group: "connection", Since: "0.1.0",
					Complexity: "O(N) where N is the number of clients", Summary: "Closes connections by address (old form, answers OK) or by filters (answers how many).",
					Syntax: "ip:port | [ID client-id] [ADDR ip:port] [LADDR ip:port] [USER username] [SKIPME yes|no]", Handler: cmdClientKill},
				{Name: "client|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CLIENT subcommands.", Handler: HelpFor("client")},
			}},
	)
}

func cmdPing(c *Client, args [][]byte) {
	if c.proto < 3 && c.class.Load() == config.ClassPubSub { // as Redis answers a subscribed RESP2 client
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

func cmdEcho(c *Client, args [][]byte) { c.Bulk(args[1]) }

func cmdQuit(c *Client, _ [][]byte) {
	c.OK()
	c.Close()
}

// cmdReset answers RESET as Redis does: the connection becomes what a new
// one is, except for its id, its address and the library name and version
// the client gave (CLIENT SETINFO), which still describe it. Inside MULTI it
// runs at once rather than being queued.
func cmdReset(c *Client, _ [][]byte) {
	c.endMulti()
	for _, forget := range c.srv.table.clientReset {
		forget(c)
	}
	c.SetClass(config.ClassNormal)
	c.mu.Lock() // CLIENT LIST reads these from other connections
	c.name, c.user = "", ""
	c.setProto(2)
	c.setAuthed(!c.srv.authRequired())
	c.mu.Unlock()
	c.Simple("RESET")
}

func cmdSelect(c *Client, args [][]byte) {
	n, err := ParseInt(args[1])
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

func cmdHello(c *Client, args [][]byte) {
	proto := c.proto
	if len(args) >= 2 {
		v, err := ParseInt(args[1])
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
		case EqualFold(args[i], "auth") && i+2 < len(args):
			if !c.authenticate(args[i+1], args[i+2]) {
				return
			}
			i += 2
		case EqualFold(args[i], "setname") && i+1 < len(args):
			name = args[i+1]
			setName = true
			i++
		default:
			c.Errf("Syntax error in HELLO option '%s'", Clip(args[i]))
			return
		}
	}
	if !c.authed {
		c.Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !validClientName(name) {
			c.Err(errClientName)
			return
		}
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.mu.Lock() // CLIENT LIST reads proto from other connections
	c.setProto(proto)
	c.mu.Unlock()
	c.Map(7)
	c.BulkString("server")
	c.BulkString("redis")
	c.BulkString("version")
	c.BulkString(redisVersion)
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

// authenticate checks credentials against the embedder's Authenticate hook
// when set, or else the ACL users (requirepass, aclfile). It writes the
// error itself and reports success.
func (c *Client) authenticate(user, pass []byte) bool {
	name, ok := "", false
	if c.srv.Authenticate != nil {
		name, ok = c.srv.Authenticate(string(user), string(pass))
	} else if us := c.srv.guard.acl.Load(); us != nil {
		var u *acl.User
		if u, ok = us.Check(string(user), string(pass)); ok {
			name = u.Name()
		}
	}
	if !ok {
		c.Err("WRONGPASS invalid username-password pair or user is disabled.")
		return false
	}
	c.mu.Lock() // CLIENT LIST and CLIENT KILL USER read it from other connections
	c.setAuthed(true)
	c.user = name
	c.mu.Unlock()
	return true
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientID(c *Client, _ [][]byte) { c.Int(c.ID) }

func cmdClientSetName(c *Client, args [][]byte) {
	if !validClientName(args[2]) {
		c.Err(errClientName)
		return
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.OK()
}

func cmdClientGetName(c *Client, _ [][]byte) {
	name := c.Name()
	if name == "" {
		c.Null()
		return
	}
	c.BulkString(name)
}

func cmdClientSetInfo(c *Client, args [][]byte) {
	if !validClientName(args[3]) {
		c.Err("ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case EqualFold(args[2], "lib-name"):
		c.libName = string(args[3])
	case EqualFold(args[2], "lib-ver"):
		c.libVer = string(args[3])
	default:
		c.Errf("Unrecognized option '%s'", Clip(args[2]))
		return
	}
	c.OK()
}

func cmdClientInfo(c *Client, _ [][]byte) { c.Verbatim(c.infoLine() + "\n") }

func cmdClientList(c *Client, args [][]byte) {
	var only map[int64]bool
	if len(args) > 2 {
		if !EqualFold(args[2], "id") || len(args) < 4 {
			c.Err("ERR syntax error")
			return
		}
		only = map[int64]bool{}
		for _, a := range args[3:] {
			id, err := ParseInt(a)
			if err != nil || id <= 0 {
				c.Errf("Invalid client ID")
				return
			}
			only[id] = true
		}
	}
	var b strings.Builder
	for _, cl := range c.srv.Clients() {
		if only == nil || only[cl.ID] {
			b.WriteString(cl.infoLine())
			b.WriteByte('\n')
		}
	}
	c.Verbatim(b.String())
}

// infoLine is the CLIENT LIST / CLIENT INFO line for the client, in Redis's
// field order for the fields limitdb has.
func (c *Client) infoLine() string {
	now := clock.Time(c.srv.clk)
	name, lib, ver, user, proto := func() (string, string, string, string, int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.name, c.libName, c.libVer, c.user, c.proto
	}()
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	if user == "" {
		user = "default"
	}
	idle := now.Sub(time.Unix(0, c.lastActive.Load())) / time.Second
	var omem, totMem int64
	if c.conn != nil {
		omem, totMem = c.conn.OutputMemory(), c.conn.Memory()
	}
	// Inside MULTI: flag x and the commands queued; outside, N and -1.
	flags, multi := "N", c.multiShown.Load()-1
	if multi >= 0 {
		flags = "x"
	}
	var fields []byte // the families' (AddClientInfo): pub/sub's sub= and psub=
	for _, add := range c.srv.table.clientInfo {
		fields = add(c, fields)
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0%s ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.ID, c.Addr, c.LAddr, name, int64(now.Sub(c.Created)/time.Second), int64(idle), flags, fields, multi, omem, totMem, cmd, user, proto, lib, ver)
}

// HelpFor answers PARENT HELP from the subcommand table.
func HelpFor(parent string) func(c *Client, args [][]byte) {
	return func(c *Client, _ [][]byte) {
		p := c.srv.table.byName[parent]
		lines := []string{fmt.Sprintf("%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", p.FullName())}
		for _, s := range p.Subs {
			sub := strings.TrimPrefix(s.FullName(), p.FullName()+" ")
			lines = append(lines, strings.TrimSpace(sub+" "+s.Syntax), "    "+s.Summary)
		}
		c.Array(len(lines))
		for _, l := range lines {
			c.Simple(l)
		}
	}
}
