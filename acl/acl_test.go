package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmds are a few commands as the command layer describes them.
var cmds = []Command{
	{"get", []string{"@read", "@string", "@fast"}},
	{"set", []string{"@write", "@string", "@slow"}},
	{"cl.throttle", []string{"@write", "@rate_limit", "@fast"}},
	{"config|get", []string{"@admin", "@dangerous", "@slow"}},
	{"config|set", []string{"@admin", "@dangerous", "@slow"}},
	{"flushall", []string{"@write", "@keyspace", "@dangerous", "@slow"}},
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rules   string
		allowed []string // every other command of cmds is denied
	}{
		{"+@all", []string{"get", "set", "cl.throttle", "config|get", "config|set", "flushall"}},
		{"allcommands -@dangerous", []string{"get", "set", "cl.throttle"}},
		{"nocommands +@read", []string{"get"}},
		{"+@all -@all +get", []string{"get"}},
		{"+config", []string{"config|get", "config|set"}},
		{"+config|get", []string{"config|get"}},
		{"+@admin -config|set", []string{"config|get"}},
		{"+@rate_limit +@string -set", []string{"get", "cl.throttle"}},
		{"", nil},
	}
	for _, tc := range cases {
		t.Run(tc.rules, func(t *testing.T) {
			us, err := Build(cmds, "", writeFile(t, "user u on nopass "+tc.rules+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			u := us.Get("u")
			for _, c := range cmds {
				want := false
				for _, a := range tc.allowed {
					want = want || a == c.Name
				}
				if got := u.Allowed(c.Name); got != want {
					t.Errorf("%s: Allowed = %v, want %v", c.Name, got, want)
				}
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ text, want string }{
		{"user u on +nosuch\n", "unknown command 'nosuch'"},
		{"user u on +@nosuch\n", "unknown command category 'nosuch'"},
		{"user u on ~user:*\n", "key patterns are not supported"},
		{"user u on #abc\n", "is not a SHA-256 hex password hash"},
		{"user u on bogus\n", "unknown rule 'bogus'"},
		{"user u on\nuser u off\n", "user 'u' is defined twice"},
		{"person u on\n", "lines must read 'user NAME rule ...'"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Build(cmds, "", writeFile(t, tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Build(cmds, "", filepath.Join(t.TempDir(), "missing")); err == nil || !strings.HasPrefix(err.Error(), "aclfile: ") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestPasswords(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hashed"))
	us, err := Build(cmds, "defpw", writeFile(t, "# comment\n\nuser a on >apw >apw2 +@all\nuser b on #"+hex.EncodeToString(sum[:])+" +@all\nuser c off >cpw +@all\nuser d on nopass +get\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		user, pass string
		ok         bool
	}{
		{"default", "defpw", true}, {"default", "", false}, {"a", "apw", true}, {"a", "apw2", true},
		{"a", "nope", false}, {"b", "hashed", true}, {"c", "cpw", false}, {"d", "anything", true}, {"nobody", "x", false},
	}
	for _, tc := range cases {
		if u, ok := us.Check(tc.user, tc.pass); ok != tc.ok || (ok && u.Name() != tc.user) {
			t.Errorf("Check(%q, %q) = %v, %v; want %v", tc.user, tc.pass, u, ok, tc.ok)
		}
	}
	if !us.AuthRequired() || us.Open() {
		t.Errorf("with requirepass: AuthRequired %v, Open %v", us.AuthRequired(), us.Open())
	}
	open, _ := Build(cmds, "", "")
	if open.AuthRequired() || !open.Open() {
		t.Errorf("no password: AuthRequired %v, Open %v", open.AuthRequired(), open.Open())
	}
	var names []string
	for _, u := range us.List() {
		names = append(names, u.Name())
	}
	if got := strings.Join(names, " "); got != "a b c d default" {
		t.Errorf("List = %s", got)
	}
	if got, want := us.Get("b").String(), "user b on #"+hex.EncodeToString(sum[:])+" ~* &* +@all"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if s := us.Get("a").String(); strings.Contains(s, "apw") {
		t.Errorf("String shows a password: %q", s)
	}
}

func TestCategories(t *testing.T) {
	t.Parallel()
	got := strings.Join(Categories(cmds), " ")
	if want := "admin dangerous fast keyspace rate_limit read slow string write"; got != want {
		t.Errorf("Categories = %q, want %q", got, want)
	}
}
