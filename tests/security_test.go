package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestRequirePass(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.RequirePass = "s3cret" }, nil)
	r := dialRaw(t, ts.addr)
	steps := []struct{ send, want string }{
		{cmd("PING"), "-NOAUTH Authentication required."},
		{cmd("EXISTS", "k"), "-NOAUTH Authentication required."},
		{cmd("CONFIG", "GET", "requirepass"), "-NOAUTH Authentication required."},
		{cmd("NOSUCH"), "-ERR unknown command 'NOSUCH', with args beginning with: "},
		{cmd("AUTH", "wrong"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{cmd("AUTH", "nobody", "s3cret"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{cmd("HELLO", "3"), "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{cmd("PING"), "-NOAUTH Authentication required."},
		{cmd("AUTH", "s3cret"), "+OK"},
		{cmd("PING"), "+PONG"},
		{cmd("ACL", "WHOAMI"), "$7"},
		{"", "default"},
		{cmd("AUTH", "default", "s3cret"), "+OK"},
		{cmd("AUTH", "default", "bad"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{cmd("PING"), "+PONG"}, // a failed AUTH keeps the earlier login, as in Redis
	}
	for i, s := range steps {
		if s.send != "" {
			r.send(s.send)
		}
		if got := r.mustLine(); got != s.want {
			t.Errorf("step %d %q: got %q, want %q", i, clipStr(s.send), got, s.want)
		}
	}

	// go-redis with a password, RESP2 and RESP3 (HELLO 3 AUTH ...).
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", Protocol: proto})
		defer c.Close()
		if err := c.Do(ctx, "CL.THROTTLE", "k", 1, 1, 1).Err(); err != nil {
			t.Fatalf("resp%d: %v", proto, err)
		}
		bad := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "nope", Protocol: proto})
		defer bad.Close()
		if err := bad.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("resp%d wrong password: err = %v", proto, err)
		}
	}

	// CONFIG SET requirepass changes the password for new logins; an
	// authenticated connection stays authenticated.
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", MaxRetries: -1})
	defer c.Close()
	require.NoError(t, c.ConfigSet(ctx, "requirepass", "other").Err())
	r.send(cmd("PING"))
	if got := r.mustLine(); got != "+PONG" {
		t.Errorf("after CONFIG SET requirepass, logged-in connection: %q", got)
	}
	r2 := dialRaw(t, ts.addr)
	r2.send(cmd("AUTH", "s3cret") + cmd("AUTH", "other"))
	if a, b := r2.mustLine(), r2.mustLine(); !strings.HasPrefix(a, "-WRONGPASS") || b != "+OK" {
		t.Errorf("new password: old %q, new %q", a, b)
	}
}

func TestAuthWithoutPassword(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.send(cmd("AUTH", "x"))
	if got := r.mustLine(); got != "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?" {
		t.Errorf("AUTH with no password configured: %q", got)
	}
	// AUTH default <anything> succeeds for a nopass default user, as in Redis.
	r.send(cmd("AUTH", "default", "anything") + cmd("ACL", "WHOAMI"))
	if a, b, c := r.mustLine(), r.mustLine(), r.mustLine(); a != "+OK" || c != "default" {
		t.Errorf("AUTH default anything: %q %q %q", a, b, c)
	}
}

const aclFile = `# limitdb users
user default off
user admin on >adminpw +@all
user app on >apppw +@all -@dangerous -@admin
user peek on >peekpw nocommands +@read +@connection +acl|whoami +info
user old on #%s +@all -flushall
user gone off >gonepw +@all
user limiter on >limiterpw nocommands +@rate_limit +@connection
`

func writeACL(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func aclText() string {
	sum := sha256.Sum256([]byte("oldpw"))
	return strings.Replace(aclFile, "%s", hex.EncodeToString(sum[:]), 1)
}

func TestACLUsers(t *testing.T) {
	t.Parallel()
	path := writeACL(t, aclText())
	ts, _ := startWith(t, func(c *config.Config) { c.ACLFile = path }, nil)
	login := func(user, pass string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: user, Password: pass, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	clients := map[string]*redis.Client{
		"admin":   login("admin", "adminpw"),
		"app":     login("app", "apppw"),
		"peek":    login("peek", "peekpw"),
		"old":     login("old", "oldpw"),
		"limiter": login("limiter", "limiterpw"),
	}
	type step struct {
		user string
		args []any
		want string // "" = success, else error prefix
	}
	noperm := func(user, cmd string) string {
		return "NOPERM User " + user + " has no permissions to run the '" + cmd + "' command"
	}
	steps := []step{
		{"admin", []any{"CL.THROTTLE", "k", 5, 10, 60}, ""},
		{"admin", []any{"CONFIG", "GET", "maxclients"}, ""},
		{"admin", []any{"ACL", "LIST"}, ""},
		{"app", []any{"CL.THROTTLE", "user:1", 1, 10, 60}, ""},
		{"app", []any{"CL.THROTTLE", "k", 5, 10, 60}, ""},
		{"app", []any{"EXISTS", "k"}, ""},
		{"app", []any{"FLUSHALL"}, noperm("app", "flushall")},
		{"app", []any{"CONFIG", "GET", "maxclients"}, noperm("app", "config|get")},
		{"app", []any{"CONFIG", "SET", "maxclients", "5"}, noperm("app", "config|set")},
		{"app", []any{"SHUTDOWN"}, noperm("app", "shutdown")},
		{"app", []any{"ACL", "LIST"}, noperm("app", "acl|list")},
		{"peek", []any{"TYPE", "k"}, ""},
		{"peek", []any{"TTL", "user:1"}, ""},
		{"peek", []any{"EXISTS", "user:1"}, ""},
		{"peek", []any{"INFO"}, ""},
		{"peek", []any{"ACL", "WHOAMI"}, ""},
		{"peek", []any{"CL.THROTTLE", "k", 5, 10, 60}, noperm("peek", "cl.throttle")},
		{"peek", []any{"GCRA", "k", 5, 10, 60}, noperm("peek", "gcra")},
		{"peek", []any{"DEL", "k"}, noperm("peek", "del")},
		{"peek", []any{"FLUSHALL"}, noperm("peek", "flushall")},
		{"peek", []any{"CONFIG", "SET", "timeout", "1"}, noperm("peek", "config|set")},
		{"peek", []any{"SHUTDOWN"}, noperm("peek", "shutdown")},
		{"limiter", []any{"CL.THROTTLE", "lim", 5, 10, 60}, ""},
		{"limiter", []any{"SW.INCR", "lim:sw", 5, "1s"}, ""},
		{"limiter", []any{"RL.POLICY", "LIST"}, ""},
		{"limiter", []any{"RL.POLICY", "GET", "api"}, ""},
		{"limiter", []any{"RL.POLICY", "SET", "api", "gcra", 1000000000, "1s"}, noperm("limiter", "rl.policy|set")},
		{"limiter", []any{"RL.POLICY", "DEL", "api"}, noperm("limiter", "rl.policy|del")},
		{"limiter", []any{"RL.POLICY", "RELOAD"}, noperm("limiter", "rl.policy|reload")},
		{"limiter", []any{"DEL", "lim"}, noperm("limiter", "del")},
		{"limiter", []any{"FLUSHALL"}, noperm("limiter", "flushall")},
		{"admin", []any{"RL.POLICY", "SET", "api", "gcra", 10, "1s"}, ""},
		{"limiter", []any{"RL.HIT", "api", "user:1"}, ""},
		{"old", []any{"PTTL", "k"}, ""},
		{"old", []any{"FLUSHALL"}, noperm("old", "flushall")},
	}
	for i, s := range steps {
		err := clients[s.user].Do(ctx, s.args...).Err()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		switch {
		case s.want == "" && err != nil:
			t.Errorf("step %d %s %v: unexpected error %v", i, s.user, s.args, err)
		case s.want != "" && (err == nil || !strings.HasPrefix(err.Error(), s.want)):
			t.Errorf("step %d %s %v: err = %v, want %q", i, s.user, s.args, err, s.want)
		}
	}
	// admin and app took 2 of 6; peek's denied calls must not have charged.
	if got := ints(t, clients["admin"].Do(ctx, "CL.THROTTLE", "k", 5, 10, 60, 0)); got[2] != 4 {
		t.Errorf("remaining = %d, want 4 (peek's writes must not have happened)", got[2])
	}

	// The default user is off: a connection with no AUTH can do nothing,
	// and disabled users cannot log in.
	r := dialRaw(t, ts.addr)
	r.send(cmd("EXISTS", "k") + cmd("AUTH", "gone", "gonepw") + cmd("AUTH", "default", "") + cmd("AUTH", "peek", "adminpw"))
	for i, want := range []string{"-NOAUTH", "-WRONGPASS", "-WRONGPASS", "-WRONGPASS"} {
		if got := r.mustLine(); !strings.HasPrefix(got, want) {
			t.Errorf("anonymous step %d: %q, want %s", i, got, want)
		}
	}
	if who := clients["peek"].Do(ctx, "ACL", "WHOAMI").Val(); who != "peek" {
		t.Errorf("ACL WHOAMI = %v", who)
	}

	list, err := clients["admin"].Do(ctx, "ACL", "LIST").StringSlice()
	require.NoError(t, err)
	joined := strings.Join(list, "\n")
	for _, secret := range []string{"adminpw", "apppw", "peekpw", "oldpw"} {
		if strings.Contains(joined, secret) {
			t.Errorf("ACL LIST shows a plain password %q:\n%s", secret, joined)
		}
	}
	sum := sha256.Sum256([]byte("peekpw"))
	wantPeek := "user peek on #" + hex.EncodeToString(sum[:]) + " ~* &* nocommands +@read +@connection +acl|whoami +info"
	if !slices.Contains(list, wantPeek) {
		t.Errorf("ACL LIST lacks %q:\n%s", wantPeek, joined)
	}
	users, _ := clients["admin"].Do(ctx, "ACL", "USERS").StringSlice()
	if !slices.Equal(users, []string{"admin", "app", "default", "gone", "limiter", "old", "peek"}) {
		t.Errorf("ACL USERS = %v", users)
	}
	cats, _ := clients["admin"].Do(ctx, "ACL", "CAT").StringSlice()
	for _, c := range []string{"read", "write", "admin", "dangerous", "rate_limit", "rate_limit_admin", "connection", "keyspace", "fast", "slow"} {
		if !slices.Contains(cats, c) {
			t.Errorf("ACL CAT lacks %s: %v", c, cats)
		}
	}
	inCat, _ := clients["admin"].Do(ctx, "ACL", "CAT", "dangerous").StringSlice()
	for _, c := range []string{"flushall", "shutdown", "config|set"} {
		if !slices.Contains(inCat, c) {
			t.Errorf("ACL CAT dangerous lacks %s: %v", c, inCat)
		}
	}

	// ACL LOAD rereads the file; a bad file changes nothing.
	os.WriteFile(path, []byte("user admin on >adminpw +@all\nuser peek on >newpw +@read\n"), 0o600)
	require.NoError(t, clients["admin"].Do(ctx, "ACL", "LOAD").Err())
	if err := login("peek", "newpw").Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("peek without +@connection after reload: ping err = %v, want NOPERM", err)
	}
	if err := login("app", "apppw").Exists(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Errorf("app after reload: %v, want WRONGPASS", err)
	}
	os.WriteFile(path, []byte("user admin on >x +@nosuchcat\n"), 0o600)
	if err := clients["admin"].Do(ctx, "ACL", "LOAD").Err(); err == nil || !strings.Contains(err.Error(), "unknown command category 'nosuchcat'") {
		t.Errorf("bad reload: %v", err)
	}
	if err := login("admin", "adminpw").Ping(ctx).Err(); err != nil {
		t.Errorf("admin after failed reload: %v", err)
	}
}

func TestACLFileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ text, want string }{
		{"user a on >x +@nosuch\n", ":1: unknown command category 'nosuch'"},
		{"\nuser a on >x +nosuchcmd\n", ":2: unknown command 'nosuchcmd'"},
		{"user a on >x ~user:*\n", "key patterns are not supported"},
		{"user a on >x +@all\nuser a off\n", ":2: user 'a' is defined twice"},
		{"users a on\n", ":1: lines must read 'user NAME rule ...'"},
		{"user a on #abcd\n", "not a SHA-256 hex password hash"},
		{"user a on sesame\n", "unknown rule 'sesame'"},
	}
	for _, tc := range cases {
		path := writeACL(t, tc.text)
		cfg := config.Default()
		cfg.ACLFile = path
		err := node.New(cfg, nil, nil).Prepare()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.text, err, tc.want)
		}
	}
	cfg := config.Default()
	cfg.ACLFile = filepath.Join(t.TempDir(), "missing.acl")
	if err := node.New(cfg, nil, nil).Prepare(); err == nil {
		t.Error("a missing aclfile must stop start-up")
	}
}

// spoofListener makes every client look as if it came from another host.
type spoofListener struct{ net.Listener }

func (l spoofListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return spoofConn{c}, nil
}

type spoofConn struct{ net.Conn }

func (spoofConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 40000}
}

func TestProtectedMode(t *testing.T) {
	t.Parallel()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return spoofListener{ln}
	}
	cases := []struct {
		name      string
		mod       func(*config.Config)
		wantFirst string
	}{
		{"no password: remote refused", nil, "-DENIED limitdb is running in protected mode"},
		{"protected mode off", func(c *config.Config) { c.ProtectedMode = false }, "+PONG"},
		{"password set: remote must AUTH", func(c *config.Config) { c.RequirePass = "pw" }, "-NOAUTH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := startWith(t, tc.mod, listen())
			r := dialRaw(t, ts.addr)
			r.send(cmd("PING"))
			if got := r.mustLine(); !strings.HasPrefix(got, tc.wantFirst) {
				t.Errorf("got %q, want prefix %q", got, tc.wantFirst)
			}
		})
	}

	// The start-up warning for a non-loopback bind without a password.
	warn := func(mod func(*config.Config)) string {
		cfg := config.Default()
		mod(&cfg)
		s := node.New(cfg, nil, nil)
		require.NoError(t, s.Prepare())
		return strings.Join(s.CommandServer().SecurityWarnings(), "\n")
	}
	if w := warn(func(c *config.Config) {}); w != "" {
		t.Errorf("loopback default warns: %q", w)
	}
	if w := warn(func(c *config.Config) { c.Bind = "0.0.0.0" }); !strings.Contains(w, "protected mode is on") {
		t.Errorf("0.0.0.0 without password: %q", w)
	}
	if w := warn(func(c *config.Config) { c.Bind = "0.0.0.0"; c.ProtectedMode = false }); !strings.Contains(w, "NO PASSWORD and protected mode OFF") {
		t.Errorf("0.0.0.0, protected mode off: %q", w)
	}
	if w := warn(func(c *config.Config) { c.Bind = "0.0.0.0"; c.RequirePass = "x" }); w != "" {
		t.Errorf("0.0.0.0 with a password warns: %q", w)
	}
}

// RESET makes a connection what a new one is: with a password set it must
// log in again, and MULTI, WATCH, its name and RESP3 are gone. Inside
// MULTI it runs at once.
func TestReset(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.RequirePass = "s3cret" }, nil)
	other := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret"})
	defer other.Close()
	r := dialRaw(t, ts.addr)
	step := func(send, want string) {
		t.Helper()
		if send != "" {
			r.send(send)
		}
		if got := r.mustLine(); got != want {
			t.Fatalf("%q: got %q, want %q", clipStr(send), got, want)
		}
	}
	step(cmd("RESET"), "+RESET") // allowed before AUTH
	step(cmd("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "worker"), "%7")
	r.send(cmd("PING")) // read past HELLO's map to the PONG
	for n := 0; r.mustLine() != "+PONG"; n++ {
		if n > 40 {
			t.Fatal("no PONG after HELLO's reply")
		}
	}
	step(cmd("CLIENT", "GETNAME"), "$6")
	step("", "worker")
	step(cmd("MULTI"), "+OK")
	step(cmd("INCR", "n"), "+QUEUED")
	step(cmd("RESET"), "+RESET")
	step(cmd("EXEC"), "-NOAUTH Authentication required.") // logged out
	step(cmd("AUTH", "s3cret"), "+OK")
	step(cmd("EXEC"), "-ERR EXEC without MULTI")
	step(cmd("GET", "n"), "$-1")          // the queued INCR never ran
	step(cmd("CLIENT", "GETNAME"), "$-1") // no name, and RESP2's null again
	// A WATCH is forgotten: a key changed since does not abort a later EXEC.
	step(cmd("WATCH", "n"), "+OK")
	require.NoError(t, other.Incr(ctx, "n").Err())
	step(cmd("RESET"), "+RESET")
	step(cmd("AUTH", "s3cret"), "+OK")
	step(cmd("MULTI"), "+OK")
	step(cmd("INCR", "n"), "+QUEUED")
	step(cmd("EXEC"), "*1")
	step("", ":2")
}
