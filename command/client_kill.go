package command

import (
	"strings"

	"github.com/limitdb/limitdb/config"
)

// cmdClientKill is CLIENT KILL in both of Redis's forms: the old one,
// CLIENT KILL ip:port, answers OK or "No such client"; the filter form
// (ID, ADDR, LADDR, USER, SKIPME) answers how many connections it closed.
// Other connections are closed under their reader, which then cleans up;
// the calling connection, when it matches, is closed after the reply. A
// victim is marked killed before the reply is written, so it runs no
// command the killer sends after reading the reply (as in Redis, where
// the kill and every later command are serial).
func cmdClientKill(c *Client, args [][]byte) {
	if len(args) == 3 {
		for _, cl := range c.srv.Clients() {
			if cl.Addr == string(args[2]) {
				cl.killed.Store(true)
				c.OK()
				kill(c, cl)
				return
			}
		}
		c.Err("ERR No such client")
		return
	}
	var id int64
	var addr, laddr, user string
	typ := "" // any
	skipMe := true
	if len(args)%2 != 0 {
		c.Error(ErrSyntax)
		return
	}
	for i := 2; i < len(args); i += 2 {
		v := args[i+1]
		switch {
		case EqualFold(args[i], "id"):
			n, err := ParseInt(v)
			if err != nil || n <= 0 {
				c.Err("ERR client-id should be greater than 0")
				return
			}
			id = n
		case EqualFold(args[i], "addr"):
			addr = string(v)
		case EqualFold(args[i], "laddr"):
			laddr = string(v)
		case EqualFold(args[i], "user"):
			user = string(v)
		case EqualFold(args[i], "type"):
			// A client is a replica once it asked for the stream, a pub/sub
			// one while it listens to a channel or pattern, a normal one
			// otherwise. A replica's link to its primary is not a client
			// here: TYPE master matches nothing.
			switch typ = strings.ToLower(string(v)); typ {
			case "slave":
				typ = "replica"
			case "normal", "pubsub", "master", "replica":
			default:
				c.Errf("Unknown client type '%s'", Clip(v))
				return
			}
		case EqualFold(args[i], "skipme") && EqualFold(v, "yes"):
			skipMe = true
		case EqualFold(args[i], "skipme") && EqualFold(v, "no"):
			skipMe = false
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	var victims []*Client
	for _, cl := range c.srv.Clients() {
		switch {
		case typ != "" && typ != cl.clientType(),
			cl.killed.Load(), // killed already, going
			id != 0 && cl.ID != id,
			addr != "" && cl.Addr != addr,
			laddr != "" && cl.LAddr != laddr,
			user != "" && cl.userName() != user,
			skipMe && cl == c:
			continue
		}
		victims = append(victims, cl)
	}
	for _, cl := range victims {
		cl.killed.Store(true)
	}
	c.Int(int64(len(victims)))
	for _, cl := range victims {
		kill(c, cl)
	}
}

// kill closes victim's connection on behalf of c.
func kill(c, victim *Client) {
	if victim == c {
		c.Close()
		return
	}
	if victim.conn != nil {
		victim.conn.Kill()
	}
}

// clientType is the client's type as CLIENT KILL TYPE names it.
func (c *Client) clientType() string {
	if r := c.repl.Load(); r != nil && r.replica.Load() != nil {
		return "replica"
	}
	if c.class.Load() == config.ClassPubSub {
		return "pubsub"
	}
	return "normal"
}

// userName is the client's user, read from another connection.
func (c *Client) userName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.user == "" {
		return "default"
	}
	return c.user
}
