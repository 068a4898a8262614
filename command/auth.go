package command

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Security holds who may connect and what they may run.

func registerAuth(t *Table) {

	t.register(
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
					Complexity: "O(1)", Summary: "Lists the ACL subcommands.", Handler: helpFor("acl")},
			}},
	)
	t.registerGate(10, "auth", authGate)
}

// aclUser is one user: whether it may log in, its passwords (SHA-256, so
// the plain text is never kept) and the commands it may run.
type aclUser struct {
	tab    *Table // the commands its rules name
	name   string
	on     bool
	nopass bool
	hashes [][32]byte
	rules  []string          // as written, for ACL LIST
	allow  map[*Command]bool // every command and subcommand, after the rules
	all    bool              // allow holds every command
}

// aclTable is the set of users; it is replaced whole on reload.
type aclTable struct {
	tab   *Table
	users map[string]*aclUser
	open  bool // the default user is on, needs no password and may run everything
}

// authRequired reports whether a new connection starts unauthenticated.
func (s *Server) authRequired() bool {
	if s.Authenticate != nil {
		return true
	}
	t := s.guard.acl.Load()
	if t == nil {
		return false
	}
	d := t.users["default"]
	return d == nil || !d.on || !d.nopass
}

// loadACL builds the user table from requirepass and the aclfile and
// installs it, all or nothing.
func (s *Server) loadACL() error {
	cfg := s.Config()
	t, err := buildACL(s.table, cfg.RequirePass, cfg.ACLFile)
	if err != nil {
		return err
	}
	s.guard.acl.Store(t)
	return nil
}

func buildACL(tab *Table, requirepass, file string) (*aclTable, error) {
	def := &aclUser{tab: tab, name: "default", on: true, nopass: true}
	if err := def.apply("+@all"); err != nil {
		return nil, err
	}
	t := &aclTable{tab: tab, users: map[string]*aclUser{"default": def}}
	if requirepass != "" {
		def.apply(">" + requirepass)
	}
	if file != "" {
		if err := t.loadFile(file); err != nil {
			return nil, err
		}
	}
	for _, u := range t.users {
		u.compile()
	}
	t.open = def.on && def.nopass && def.all
	return t, nil
}

// loadFile reads an aclfile: one "user NAME rule ..." per line, '#'
// comments and blank lines ignored. A user named twice is an error, as in Redis.
func (t *aclTable) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("aclfile: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "user" || len(fields) < 2 {
			return fmt.Errorf("aclfile %s:%d: lines must read 'user NAME rule ...'", path, line)
		}
		name := fields[1]
		if seen[name] {
			return fmt.Errorf("aclfile %s:%d: user '%s' is defined twice", path, line, name)
		}
		seen[name] = true
		u := &aclUser{tab: t.tab, name: name}
		if name == "default" {
			u = t.users["default"]
			// "user default ..." starts from Redis's reset state, like every other user.
			*u = aclUser{tab: t.tab, name: name}
		}
		for _, r := range fields[2:] {
			if err := u.apply(r); err != nil {
				return fmt.Errorf("aclfile %s:%d: %v", path, line, err)
			}
		}
		t.users[name] = u
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("aclfile: %w", err)
	}
	return nil
}

// apply adds one rule. Key and channel rules other than "everything" are
// refused: limitdb does not restrict by key pattern.
func (u *aclUser) apply(r string) error {
	switch {
	case r == "on":
		u.on = true
	case r == "off":
		u.on = false
	case r == "nopass":
		u.nopass, u.hashes = true, nil
	case r == "resetpass":
		u.nopass, u.hashes = false, nil
	case strings.HasPrefix(r, ">"):
		u.nopass = false
		u.hashes = append(u.hashes, sha256.Sum256([]byte(r[1:])))
	case strings.HasPrefix(r, "#"):
		b, err := hex.DecodeString(r[1:])
		if err != nil || len(b) != 32 {
			return fmt.Errorf("'%s' is not a SHA-256 hex password hash", r)
		}
		u.nopass = false
		u.hashes = append(u.hashes, [32]byte(b))
	case r == "~*" || r == "allkeys" || r == "&*" || r == "allchannels" || r == "resetchannels" || r == "reset":
		// every key is allowed; channels do not exist here
	case strings.HasPrefix(r, "~") || strings.HasPrefix(r, "%") || strings.HasPrefix(r, "&"):
		return fmt.Errorf("'%s': key patterns are not supported, only ~* (every key)", r)
	case r == "allcommands" || r == "nocommands" || strings.HasPrefix(r, "+") || strings.HasPrefix(r, "-"):
		if err := u.tab.checkCommandRule(r); err != nil {
			return err
		}
		u.rules = append(u.rules, r)
	default:
		return fmt.Errorf("unknown rule '%s'", r)
	}
	return nil
}

// checkCommandRule refuses rules that name no category or command, so a
// typo never silently grants or withholds nothing.
func (t *Table) checkCommandRule(r string) error {
	if r == "allcommands" || r == "nocommands" {
		return nil
	}
	name := strings.ToLower(r[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if cat == "all" || t.categorySet()[cat] {
			return nil
		}
		return fmt.Errorf("unknown command category '%s'", cat)
	}
	if t.lookupName(name) == nil {
		return fmt.Errorf("unknown command '%s'", name)
	}
	return nil
}

// compile evaluates the rules, in order, for every command: the last rule
// that names the command, a parent of it, or one of its categories decides.
func (u *aclUser) compile() {
	u.allow = map[*Command]bool{}
	u.all = true
	u.tab.eachRunnable(func(cmd *Command) {
		ok := false
		for _, r := range u.rules {
			if allowed, hit := ruleMatches(r, cmd); hit {
				ok = allowed
			}
		}
		u.allow[cmd] = ok
		if !ok {
			u.all = false
		}
	})
}

func ruleMatches(r string, cmd *Command) (allowed, hit bool) {
	switch r {
	case "allcommands":
		return true, true
	case "nocommands":
		return false, true
	}
	allowed = r[0] == '+'
	name := strings.ToLower(r[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if cat == "all" {
			return allowed, true
		}
		for _, c := range cmd.Categories() {
			if c == "@"+cat {
				return allowed, true
			}
		}
		return false, false
	}
	parent, _, _ := strings.Cut(cmd.Name, "|")
	return allowed, name == cmd.Name || name == parent
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

// lookupName finds "name" or "parent|sub".
func (t *Table) lookupName(name string) *Command {
	parent, sub, hasSub := strings.Cut(name, "|")
	cmd := t.byName[parent]
	if cmd == nil || !hasSub {
		return cmd
	}
	return cmd.sub([]byte(sub))
}

// categorySet lists every category some command belongs to, without '@'.
func (t *Table) categorySet() map[string]bool {
	out := map[string]bool{}
	t.eachRunnable(func(cmd *Command) {
		for _, c := range cmd.Categories() {
			out[c[1:]] = true
		}
	})
	return out
}

// check finds the user whose password this is. Every stored hash of the
// user is compared in constant time, and a missing user costs the same
// hashing, so timing reveals neither the password nor how close a guess was.
func (t *aclTable) check(user, pass string) (*aclUser, bool) {
	sum := sha256.Sum256([]byte(pass))
	u := t.users[user]
	if u == nil {
		subtle.ConstantTimeCompare(sum[:], make([]byte, 32))
		return nil, false
	}
	match := 0
	for i := range u.hashes {
		match |= subtle.ConstantTimeCompare(sum[:], u.hashes[i][:])
	}
	if !u.on || (match == 0 && !u.nopass) {
		return nil, false
	}
	return u, true
}

// String renders the user as ACL LIST does.
func (u *aclUser) String() string {
	parts := []string{"user", u.name}
	if u.on {
		parts = append(parts, "on")
	} else {
		parts = append(parts, "off")
	}
	if u.nopass {
		parts = append(parts, "nopass")
	}
	for _, h := range u.hashes {
		parts = append(parts, "#"+hex.EncodeToString(h[:]))
	}
	parts = append(parts, "~*", "&*")
	if len(u.rules) == 0 {
		parts = append(parts, "-@all")
	}
	return strings.Join(append(parts, u.rules...), " ")
}

// ---- the gate and commands ------------------------------------------------

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
	t := c.srv.guard.acl.Load()
	if t == nil || t.open && c.user == "" || cmd.Flags&FlagNoAuth != 0 {
		return true
	}
	name := c.user
	if name == "" {
		name = "default"
	}
	u := t.users[name]
	if u == nil && c.srv.Authenticate != nil {
		return true // a user of the embedder's own Authenticate hook
	}
	if u != nil && u.on && (u.all || u.allow[cmd]) {
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
	if c.authenticate(user, pass) {
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

func (s *Server) aclUsers() []*aclUser {
	t := s.guard.acl.Load()
	if t == nil {
		t, _ = buildACL(s.table, "", "")
	}
	out := make([]*aclUser, 0, len(t.users))
	for _, u := range t.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
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
		c.BulkString(u.name)
	}
}

func cmdACLCat(c *Client, args [][]byte) {
	if len(args) == 2 {
		cats := c.srv.table.categorySet()
		names := make([]string, 0, len(cats))
		for n := range cats {
			names = append(names, n)
		}
		sort.Strings(names)
		c.Array(len(names))
		for _, n := range names {
			c.BulkString(n)
		}
		return
	}
	want := strings.ToLower(string(args[2]))
	if !c.srv.table.categorySet()[want] {
		c.Errf("Unknown category '%s'", clip(args[2]))
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
		c.Err("ERR This instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
		return
	}
	if err := c.srv.loadACL(); err != nil {
		c.Errf("%v", err)
		return
	}
	c.OK()
}
