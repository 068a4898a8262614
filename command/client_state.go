package command

import (
	"fmt"
	"time"

	"github.com/limitdb/limitdb/acl"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
)

// A client's own state (its name, library, protocol, user, authentication)
// and the registry of clients stay in the core, which every family and
// gate reads; the connection family (command/conn) changes them only
// through the methods here. Other connections read the fields CLIENT LIST
// and CLIENT KILL show under c.mu, so each setter takes it.

// SetName sets the name CLIENT LIST shows and CLIENT GETNAME answers; ""
// drops it. The caller checks the name is one Redis accepts.
func (c *Client) SetName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

// SetLibName records the client library's name (CLIENT SETINFO LIB-NAME),
// shown as lib-name= in CLIENT LIST; RESET keeps it.
func (c *Client) SetLibName(name string) {
	c.mu.Lock()
	c.libName = name
	c.mu.Unlock()
}

// SetLibVersion records the client library's version (CLIENT SETINFO
// LIB-VER), shown as lib-ver= in CLIENT LIST; RESET keeps it.
func (c *Client) SetLibVersion(ver string) {
	c.mu.Lock()
	c.libVer = ver
	c.mu.Unlock()
}

// SetProto switches c's replies to RESP p, 2 or 3 (HELLO), from the next
// reply written on.
func (c *Client) SetProto(p int) {
	c.mu.Lock() // CLIENT LIST reads proto from other connections
	c.setProto(p)
	c.mu.Unlock()
}

// Class is the config.Class* SetClass last set: config.ClassPubSub while
// c listens to a channel or pattern, config.ClassNormal by default.
func (c *Client) Class() int { return int(c.class.Load()) }

// Authenticated reports whether c may run commands that are not flagged
// no_auth: it has authenticated, or no password is required.
func (c *Client) Authenticated() bool { return c.authed }

// Authenticate checks user and pass as AUTH does: against the embedder's
// Authenticate hook when set, or else the ACL users (requirepass,
// aclfile). On success c is authenticated as that user; on failure c
// stays as it was and the WRONGPASS error has been written. It reports
// success.
func (c *Client) Authenticate(user, pass []byte) bool {
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

// Reset makes c what a new connection is, as Redis's RESET does: MULTI
// ended and WATCH forgotten, each family's OnClientReset run in order,
// the normal class, no name, the default user, RESP2, and a new
// connection's authentication (unauthenticated when a password is
// required). It keeps c's id, addresses and library name and version,
// which still describe it. It writes no reply.
func (c *Client) Reset() {
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
}

// User is the ACL user c is authenticated as, "default" when none; any
// goroutine may call it.
func (c *Client) User() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.user == "" {
		return "default"
	}
	return c.user
}

// Type is c's type as CLIENT KILL TYPE names it: "replica" once it asked
// for the replication stream, "pubsub" while it listens to a channel or
// pattern, "normal" otherwise. A replica's link to its primary, Redis's
// "master" client, is no Client: the connection family lists and kills
// it through the replication Manager.
func (c *Client) Type() string {
	if c.class.Load() == config.ClassReplica {
		return "replica"
	}
	if c.class.Load() == config.ClassPubSub {
		return "pubsub"
	}
	return "normal"
}

// Killed reports whether c has been marked by MarkKilled; any goroutine
// may call it.
func (c *Client) Killed() bool { return c.killed.Load() }

// MarkKilled makes c run no more commands: the next one it reads closes
// it instead. CLIENT KILL marks its victims before it answers, so that a
// victim runs nothing the killer sends after reading the reply. Any
// goroutine may call it.
func (c *Client) MarkKilled() { c.killed.Store(true) }

// Kill closes c's connection on behalf of by, the client running the
// command: c itself once its replies are flushed, as Close does; another
// client at once, under its reader, which then forgets it as for any
// connection gone. A client with no connection other than by is left to
// its caller, MarkKilled refusing its next command.
func (c *Client) Kill(by *Client) {
	if c == by {
		c.Close()
		return
	}
	if c.conn != nil {
		c.conn.Kill()
	}
}

// Info is c's CLIENT LIST and CLIENT INFO line, with no line end: Redis's
// fields in Redis's order for those limitdb has, the families' fields
// (AddClientInfo) after db=. Any goroutine may call it.
func (c *Client) Info() string {
	now := clock.Time(c.srv.env.Clock)
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

// Local reports whether c has no socket or its connection comes over the
// loopback interface: what enable-protected-configs local allows.
func (c *Client) Local() bool { return c.conn == nil || c.conn.Loopback() }
