package command_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// TestLogin: Login and Anonymous decide as AUTH and the ACL gate do for a
// connection: the password, the user's commands, and no anonymous access
// once the default user has a password.
func TestLogin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	aclfile := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(aclfile, []byte("user default on >adminpw +@all\nuser ops on >opspw +info +ping\nuser app on >apppw +get\nuser gone off >gonepw +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.ACLFile = aclfile
	s := newServer(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0))
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Anonymous(); ok {
		t.Error("Anonymous() allowed while the default user has a password")
	}
	for _, tc := range []struct {
		user, pass string
		ok         bool
		info, get  bool
	}{
		{"default", "adminpw", true, true, true},
		{"ops", "opspw", true, true, false},
		{"app", "apppw", true, false, true},
		{"ops", "wrong", false, false, false},
		{"gone", "gonepw", false, false, false},
		{"nobody", "x", false, false, false},
	} {
		a, ok := s.Login(tc.user, tc.pass)
		if ok != tc.ok {
			t.Errorf("Login(%s, %s) ok = %v, want %v", tc.user, tc.pass, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if a.User() != tc.user || a.Allowed("info") != tc.info || a.Allowed("get") != tc.get {
			t.Errorf("Login(%s): user %q, info %v, get %v; want %q, %v, %v", tc.user, a.User(), a.Allowed("info"), a.Allowed("get"), tc.user, tc.info, tc.get)
		}
	}

	open := newServer(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0))
	if err := open.Prepare(); err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	a, ok := open.Anonymous()
	if !ok || a.User() != "default" || !a.Allowed("info") {
		t.Errorf("Anonymous() on an open server = %q, %v (info %v), want default, true, true", a.User(), ok, a.Allowed("info"))
	}
}
