package command

import (
	"fmt"
	"slices"
	"strings"

	"github.com/limitdb/limitdb/acl"
)

func registerAuth(t *Table) {

	t.Register(
		&Command{Name: "auth", Arity: -2, Flags: FlagFast | FlagNoAuth | FlagLoading | FlagStale, Group: "connection", Since: "0.1.0",
			Complexity: "O(N) where N is the number of passwords of the user",
			Summary:    "Authenticates the connection as the default user, or as a named ACL user.",
			Syntax:     "[username] password", Handler: cmdAuth},
		&Command{Name: "acl", Arity: -2, Group: "server", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Inspects the ACL users and categories.", Syntax: "subcommand",
			Subs: []*Command{
				{Name: "acl|whoami", Arity: 2, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Returns the user the connection is authenticated as.", Handler: cmdACLWhoami},
				{Name: "acl|list", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of users", Summary: "Lists the users and their rules, passwords as SHA-256.", Handler: cmdACLList},
				{Name: "acl|users", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of users", Summary: "Lists the user names.", Handler: cmdACLUsers},
				{Name: "acl|cat", Arity: -2, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of commands", Summary: "Lists the categories, or the commands in one.",
					Syntax: "[category]", Handler: cmdACLCat},
				{Name: "acl|load", Arity: 2, Flags: FlagAdmin | FlagDangerous | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of users", Summary: "Reloads the users from the aclfile, all or nothing.", Handler: cmdACLLoad},
				{Name: "acl|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the ACL subcommands.", Handler: HelpFor("acl")},
			}},
	)
	t.SetGate(GateAuth, authGate)
}

// authRequired reports whether a new connection starts unauthenticated.
func (s *Server) authRequired() bool {
	if s.Authenticate != nil {
		return true
	}
	us := s.guard.acl.Load()
	return us != nil && us.AuthRequired()
}

// loadACL builds the users from requirepass and the aclfile and installs
// them, all or nothing.
func (s *Server) loadACL() error {
	cfg := s.Config()
	us, err := acl.Build(s.table.aclCommands(), cfg.RequirePass, cfg.ACLFile)
	if err != nil {
		return err
	}
	s.guard.acl.Store(us)
	return nil
}

// aclCommands is every runnable command as ACL rules see it.
func (t *Table) aclCommands() []acl.Command {
	var out []acl.Command
	t.eachRunnable(func(cmd *Command) {
		out = append(out, acl.Command{Name: cmd.Name, Categories: cmd.Categories()})
	})
	return out
}

// eachRunnable visits every runnable command: top-level ones and subcommands.
func (t *Table) eachRunnable(fn func(*Command)) {
	for _, c := range t.Sorted() {
		if c.Handler != nil {
			fn(c)
		}
		for _, s := range c.Subs {
			fn(s)
		}
	}
}

// ---- the gate and commands ------------------------------------------------

// unrestricted reports whether c may run every command under users us:
// none are configured, or only the open default user, which c is.
func unrestricted(us *acl.Users, c *Client) bool {
	return us == nil || c.internal || us.Open() && c.user == ""
}

// authGate answers NOAUTH before authentication (commands flagged no_auth
// pass) and NOPERM for commands the user may not run.
func authGate(c *Client, cmd *Command, _ [][]byte) bool {
	if !c.authed {
		if cmd.Flags&FlagNoAuth != 0 {
			return true
		}
		c.Err("NOAUTH Authentication required.")
		return false
	}
	us := c.srv.guard.acl.Load()
	if unrestricted(us, c) || cmd.Flags&FlagNoAuth != 0 {
		return true
	}
	name := c.user
	if name == "" {
		name = "default"
	}
	u := us.Get(name)
	if u == nil && c.srv.Authenticate != nil {
		return true // a user of the embedder's own Authenticate hook
	}
	if u != nil && u.Allowed(cmd.Name) {
		return true
	}
	c.Err(fmt.Sprintf("NOPERM User %s has no permissions to run the '%s' command", name, cmd.Name))
	return false
}

func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.Err("ERR syntax error")
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if !c.srv.authRequired() {
		c.Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if c.Authenticate(user, pass) {
		c.OK()
	}
}

func cmdACLWhoami(c *Client, _ [][]byte) {
	if c.user == "" {
		c.BulkString("default")
		return
	}
	c.BulkString(c.user)
}

func (s *Server) aclUsers() []*acl.User {
	us := s.guard.acl.Load()
	if us == nil {
		us, _ = acl.Build(s.table.aclCommands(), "", "")
	}
	return us.List()
}

// UserExists reports whether name is an ACL user (the default user
// always is); any user may exist when the embedder's Authenticate hook
// checks passwords, its users being its own.
func (c *Client) UserExists(name string) bool {
	if c.srv.Authenticate != nil {
		return true
	}
	for _, u := range c.srv.aclUsers() {
		if u.Name() == name {
			return true
		}
	}
	return false
}

func cmdACLList(c *Client, _ [][]byte) {
	users := c.srv.aclUsers()
	c.Array(len(users))
	for _, u := range users {
		c.BulkString(u.String())
	}
}

func cmdACLUsers(c *Client, _ [][]byte) {
	users := c.srv.aclUsers()
	c.Array(len(users))
	for _, u := range users {
		c.BulkString(u.Name())
	}
}

func cmdACLCat(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.Errf("unknown subcommand or wrong number of arguments for '%.128s'. Try ACL HELP.", args[1])
		return
	}
	cats := acl.Categories(c.srv.table.aclCommands())
	if len(args) == 2 {
		c.Array(len(cats))
		for _, n := range cats {
			c.BulkString(n)
		}
		return
	}
	want := strings.ToLower(string(args[2]))
	if !slices.Contains(cats, want) {
		c.Errf("Unknown category '%s'", Clip(args[2]))
		return
	}
	var names []string
	c.srv.table.eachRunnable(func(cmd *Command) {
		for _, cat := range cmd.Categories() {
			if cat == "@"+want {
				names = append(names, cmd.Name)
			}
		}
	})
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

func cmdACLLoad(c *Client, _ [][]byte) {
	if c.srv.Config().ACLFile == "" {
		c.Err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
		return
	}
	if err := c.srv.loadACL(); err != nil {
		c.Errf("%v", err)
		return
	}
	c.OK()
}

// Access is what a caller outside a connection (the dashboard) may run, as
// the user it authenticated as: the ACL users as they were when it did.
type Access struct {
	name string
	user *acl.User
	all  bool // every command: no users configured, the open default user, or a user of the Authenticate hook
}

// User is the name of the user the access is for.
func (a Access) User() string { return a.name }

// Allowed reports whether the user may run the command (or subcommand,
// "parent|sub"), as the ACL gate would decide for a connection of that
// user.
func (a Access) Allowed(command string) bool {
	if a.all {
		return true
	}
	return a.user != nil && a.user.Allowed(command)
}

// Login checks user and pass as AUTH does (the embedder's Authenticate
// hook, or else the ACL users) and returns what that user may run; false
// when they do not authenticate.
func (s *Server) Login(user, pass string) (Access, bool) {
	if s.Authenticate != nil {
		name, ok := s.Authenticate(user, pass)
		if !ok {
			return Access{}, false
		}
		if us := s.guard.acl.Load(); us != nil && us.Get(name) != nil {
			return Access{name: name, user: us.Get(name)}, true
		}
		return Access{name: name, all: true}, true // a user of the hook's own, as the ACL gate lets it
	}
	us := s.guard.acl.Load()
	if us == nil {
		return Access{}, false
	}
	u, ok := us.Check(user, pass)
	if !ok {
		return Access{}, false
	}
	return Access{name: u.Name(), user: u, all: us.Open() && u.Name() == "default"}, true
}

// Anonymous returns what a caller that gives no password may run: the
// default user's access when it needs no password (a new connection
// starts authenticated as it), else false.
func (s *Server) Anonymous() (Access, bool) {
	if s.authRequired() {
		return Access{}, false
	}
	us := s.guard.acl.Load()
	if us == nil {
		return Access{name: "default", all: true}, true
	}
	return Access{name: "default", user: us.Get("default"), all: us.Open()}, true
}
