package conn

import (
	"strings"

	"github.com/limitdb/limitdb/command"
)

// cmdClientKill is CLIENT KILL in both of Redis's forms: the old one,
// CLIENT KILL ip:port, answers OK or "No such client"; the filter form
// (ID, ADDR, LADDR, USER, TYPE, SKIPME) answers how many connections it
// closed. Other connections are closed under their reader, which then
// cleans up; the calling connection, when it matches, is closed after the
// reply. A victim is marked killed before the reply is written, so it runs
// no command the killer sends after reading the reply (as in Redis, where
// the kill and every later command are serial).
func (f *Family) cmdClientKill(c *command.Client, args [][]byte) {
	if len(args) == 3 {
		if mc, ok := f.masterClient(); ok && mc.Addr == string(args[2]) && f.repl.KillMasterClient(mc.ID) {
			c.OK()
			return
		}
		for _, cl := range f.clients() {
			if cl.Addr == string(args[2]) {
				cl.MarkKilled()
				c.OK()
				cl.Kill(c)
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
		c.Error(command.ErrSyntax)
		return
	}
	for i := 2; i < len(args); i += 2 {
		v := args[i+1]
		switch {
		case command.EqualFold(args[i], "id"):
			n, err := command.ParseInt(v)
			if err != nil || n <= 0 {
				c.Err("ERR client-id should be greater than 0")
				return
			}
			id = n
		case command.EqualFold(args[i], "addr"):
			addr = string(v)
		case command.EqualFold(args[i], "laddr"):
			laddr = string(v)
		case command.EqualFold(args[i], "user"):
			user = string(v)
			if !c.UserExists(user) {
				c.Errf("No such user '%s'", command.Clip(v))
				return
			}
		case command.EqualFold(args[i], "type"):
			// Client.Type's names, and Redis's: slave for replica; TYPE
			// master is a replica's link to its primary (masterClient).
			switch typ = strings.ToLower(string(v)); typ {
			case "slave":
				typ = "replica"
			case "normal", "pubsub", "master", "replica":
			default:
				c.Errf("Unknown client type '%s'", command.Clip(v))
				return
			}
		case command.EqualFold(args[i], "skipme") && command.EqualFold(v, "yes"):
			skipMe = true
		case command.EqualFold(args[i], "skipme") && command.EqualFold(v, "no"):
			skipMe = false
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	var victims []*command.Client
	for _, cl := range f.clients() {
		switch {
		case typ != "" && typ != cl.Type(),
			cl.Killed(), // killed already, going
			id != 0 && cl.ID != id,
			addr != "" && cl.Addr != addr,
			laddr != "" && cl.LAddr != laddr,
			user != "" && cl.User() != user,
			skipMe && cl == c:
			continue
		}
		victims = append(victims, cl)
	}
	for _, cl := range victims {
		cl.MarkKilled()
	}
	// The link to a primary, as Redis's master client: it has no user,
	// so a USER filter never matches it. Cut, it reconnects at once and
	// continues (+CONTINUE).
	killed := int64(len(victims))
	if mc, ok := f.masterClient(); ok && (typ == "" || typ == "master") && (id == 0 || id == mc.ID) &&
		(addr == "" || addr == mc.Addr) && (laddr == "" || laddr == mc.LAddr) && user == "" &&
		f.repl.KillMasterClient(mc.ID) {
		killed++
	}
	c.Int(killed)
	for _, cl := range victims {
		cl.Kill(c)
	}
}
