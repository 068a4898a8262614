// Package acl is limitdb's users and their permissions: the default
// user's password (requirepass), the aclfile's users in Redis's syntax,
// password checks in constant time, and which commands each user may run.
//
// It sees commands only as the data a caller passes in (names and
// categories), and imports nothing of the project.
package acl

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

// Command is a command as rules name it.
type Command struct {
	Name       string   // "get", or "parent|sub" for a subcommand
	Categories []string // with '@': "@read", "@rate_limit", ...
}

// Users is the set of users. It is built whole (Build) and replaced whole
// on reload, never changed: any goroutine may read it.
type Users struct {
	byName map[string]*User
	open   bool // the default user is on, needs no password and may run everything
}

// User is one user: whether it may log in, its passwords (SHA-256, so the
// plain text is never kept) and the commands it may run.
type User struct {
	name   string
	on     bool
	nopass bool
	hashes [][32]byte
	rules  []string        // as written, for ACL LIST
	allow  map[string]bool // every command and subcommand, after the rules
	all    bool            // allow holds every command
}

// Build makes the users from requirepass (the default user's password)
// and the aclfile, if any, for the commands cmds: rules naming a command
// or category none of them has are refused.
func Build(cmds []Command, requirepass, aclfile string) (*Users, error) {
	b := builder{cmds: cmds, names: map[string]bool{}, cats: map[string]bool{}}
	for _, c := range cmds {
		b.names[c.Name] = true
		if parent, _, ok := strings.Cut(c.Name, "|"); ok {
			b.names[parent] = true
		}
		for _, cat := range c.Categories {
			b.cats[strings.TrimPrefix(cat, "@")] = true
		}
	}
	def := &User{name: "default", on: true, nopass: true}
	if err := b.apply(def, "+@all"); err != nil {
		return nil, err
	}
	us := &Users{byName: map[string]*User{"default": def}}
	if requirepass != "" {
		b.apply(def, ">"+requirepass)
	}
	if aclfile != "" {
		if err := b.loadFile(us, aclfile); err != nil {
			return nil, err
		}
	}
	for _, u := range us.byName {
		b.compile(u)
	}
	d := us.byName["default"]
	us.open = d.on && d.nopass && d.all
	return us, nil
}

// builder knows the commands and categories rules may name.
type builder struct {
	cmds  []Command
	names map[string]bool // commands, subcommands and their parents
	cats  map[string]bool // without '@'
}

// loadFile reads an aclfile: one "user NAME rule ..." per line, '#'
// comments and blank lines ignored. A user named twice is an error, as in
// Redis.
func (b *builder) loadFile(us *Users, path string) error {
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
		// "user default ..." starts from Redis's reset state, like every
		// other user.
		u := &User{name: name}
		for _, r := range fields[2:] {
			if err := b.apply(u, r); err != nil {
				return fmt.Errorf("aclfile %s:%d: %v", path, line, err)
			}
		}
		us.byName[name] = u
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("aclfile: %w", err)
	}
	return nil
}

// apply adds one rule to u. Key and channel rules other than "everything"
// are refused: limitdb does not restrict by key pattern.
func (b *builder) apply(u *User, r string) error {
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
		h, err := hex.DecodeString(r[1:])
		if err != nil || len(h) != 32 {
			return fmt.Errorf("'%s' is not a SHA-256 hex password hash", r)
		}
		u.nopass = false
		u.hashes = append(u.hashes, [32]byte(h))
	case r == "~*" || r == "allkeys" || r == "&*" || r == "allchannels" || r == "resetchannels" || r == "reset":
		// every key is allowed; channels do not exist here
	case strings.HasPrefix(r, "~") || strings.HasPrefix(r, "%") || strings.HasPrefix(r, "&"):
		return fmt.Errorf("'%s': key patterns are not supported, only ~* (every key)", r)
	case r == "allcommands" || r == "nocommands" || strings.HasPrefix(r, "+") || strings.HasPrefix(r, "-"):
		if err := b.check(r); err != nil {
			return err
		}
		u.rules = append(u.rules, r)
	default:
		return fmt.Errorf("unknown rule '%s'", r)
	}
	return nil
}

// check refuses command rules that name no category or command, so a
// typo never silently grants or withholds nothing.
func (b *builder) check(r string) error {
	if r == "allcommands" || r == "nocommands" {
		return nil
	}
	name := strings.ToLower(r[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if cat == "all" || b.cats[cat] {
			return nil
		}
		return fmt.Errorf("unknown command category '%s'", cat)
	}
	if !b.names[name] {
		return fmt.Errorf("unknown command '%s'", name)
	}
	return nil
}

// compile evaluates u's rules, in order, for every command: the last rule
// that names the command, a parent of it, or one of its categories decides.
func (b *builder) compile(u *User) {
	u.allow = map[string]bool{}
	u.all = true
	for _, c := range b.cmds {
		ok := false
		for _, r := range u.rules {
			if allowed, hit := matches(r, c); hit {
				ok = allowed
			}
		}
		u.allow[c.Name] = ok
		if !ok {
			u.all = false
		}
	}
}

// matches reports whether rule r names c, and if so whether it allows it.
func matches(r string, c Command) (allowed, hit bool) {
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
		for _, have := range c.Categories {
			if have == "@"+cat {
				return allowed, true
			}
		}
		return false, false
	}
	parent, _, _ := strings.Cut(c.Name, "|")
	return allowed, name == c.Name || name == parent
}

// Check finds the user whose password this is. Every stored hash of the
// user is compared in constant time, and a missing user costs the same
// hashing, so timing reveals neither the password nor how close a guess
// was.
func (us *Users) Check(user, pass string) (*User, bool) {
	sum := sha256.Sum256([]byte(pass))
	u := us.byName[user]
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

// Get is the user named name, nil if there is none.
func (us *Users) Get(name string) *User { return us.byName[name] }

// List returns the users ordered by name.
func (us *Users) List() []*User {
	out := make([]*User, 0, len(us.byName))
	for _, u := range us.byName {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Open reports whether the default user is on, needs no password and may
// run every command: nothing needs checking.
func (us *Users) Open() bool { return us.open }

// AuthRequired reports whether a new connection starts unauthenticated:
// the default user is off or has a password.
func (us *Users) AuthRequired() bool {
	d := us.byName["default"]
	return d == nil || !d.on || !d.nopass
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Allowed reports whether the user is on and may run the command (or
// subcommand, "parent|sub") named command.
func (u *User) Allowed(command string) bool { return u.on && (u.all || u.allow[command]) }

// String renders the user as ACL LIST does, passwords as their SHA-256.
func (u *User) String() string {
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

// Categories lists every category of cmds, without '@', sorted.
func Categories(cmds []Command) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cmds {
		for _, cat := range c.Categories {
			if name := strings.TrimPrefix(cat, "@"); !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}
