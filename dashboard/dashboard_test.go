package dashboard_test

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/dashboard"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
)

// users: the default user (every command), ops (INFO only), app (GET only).
const users = "user default on >adminpw +@all\nuser ops on >opspw +info\nuser app on >apppw +get\n"

// newNode returns a prepared node (no listener) whose configuration edit
// changed, and a local client of it.
func newNode(t *testing.T, edit func(*config.Config)) *node.Node {
	t.Helper()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	cfg.Save = 0
	edit(&cfg)
	n := node.New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0))
	if err := n.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// withUsers turns the dashboard on and loads users from an aclfile.
func withUsers(t *testing.T) func(*config.Config) {
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) { c.Dashboard = true; c.ACLFile = path }
}

// get requests path of h from remote, with Basic credentials unless user
// is empty.
func get(h http.Handler, method, path, remote, user, pass string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remote
	if user != "" {
		r.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const local = "127.0.0.1:50000"

func fixedView() any {
	return map[string]any{"denied": []map[string]any{{"key": "user:42", "count": 7}}}
}

// TestOffByDefault: without the directive every path is 404, credentials
// or not; CONFIG SET dashboard yes turns it on without a restart.
func TestOffByDefault(t *testing.T) {
	t.Parallel()
	n := newNode(t, func(*config.Config) {})
	h := dashboard.New(dashboard.Sources{Server: n.CommandServer(), Policies: n.Policies()})
	for _, path := range []string{"/dashboard", "/dashboard/", "/dashboard/data.json", "/dashboard/app.js"} {
		if w := get(h, "GET", path, local, "", ""); w.Code != http.StatusNotFound {
			t.Errorf("GET %s with the dashboard off = %d, want 404", path, w.Code)
		}
	}
	lc := n.CommandServer().NewLocalClient()
	defer lc.Close()
	if got := string(lc.DoString("CONFIG", "SET", "dashboard", "yes")); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET dashboard yes = %q", got)
	}
	if w := get(h, "GET", "/dashboard/data.json", local, "", ""); w.Code != http.StatusOK {
		t.Errorf("after CONFIG SET dashboard yes: %d, want 200", w.Code)
	}
}

// TestAuth: every path asks for an ACL user's password; a user the ACL
// forbids INFO gets 403; RL.TOP decides whether the top keys show.
func TestAuth(t *testing.T) {
	t.Parallel()
	n := newNode(t, withUsers(t))
	h := dashboard.New(dashboard.Sources{Server: n.CommandServer(), Policies: n.Policies(), Analytics: dashboard.AnalyticsFunc(fixedView)})
	for _, tc := range []struct {
		path, user, pass string
		code             int
	}{
		{"/dashboard", "", "", http.StatusUnauthorized},
		{"/dashboard/", "", "", http.StatusUnauthorized},
		{"/dashboard/data.json", "", "", http.StatusUnauthorized},
		{"/dashboard/app.js", "", "", http.StatusUnauthorized},
		{"/dashboard/data.json", "ops", "wrong", http.StatusUnauthorized},
		{"/dashboard/data.json", "nobody", "opspw", http.StatusUnauthorized},
		{"/dashboard/data.json", "app", "apppw", http.StatusForbidden},
		{"/dashboard/", "app", "apppw", http.StatusForbidden},
		{"/dashboard/", "ops", "opspw", http.StatusOK},
		{"/dashboard/app.js", "ops", "opspw", http.StatusOK},
		{"/dashboard/style.css", "ops", "opspw", http.StatusOK},
		{"/dashboard/data.json", "ops", "opspw", http.StatusOK},
		{"/dashboard/data.json", "default", "adminpw", http.StatusOK},
		{"/dashboard/nothing", "ops", "opspw", http.StatusNotFound},
	} {
		w := get(h, "GET", tc.path, local, tc.user, tc.pass)
		if w.Code != tc.code {
			t.Errorf("GET %s as %q/%q = %d, want %d: %s", tc.path, tc.user, tc.pass, w.Code, tc.code, w.Body)
		}
		if tc.code == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET %s as %q: 401 without a Basic challenge", tc.path, tc.user)
		}
		if tc.code != http.StatusOK && strings.Contains(w.Body.String(), "policies") {
			t.Errorf("GET %s as %q: refused, yet the body holds data: %s", tc.path, tc.user, w.Body)
		}
	}
	if w := get(h, "POST", "/dashboard/data.json", local, "ops", "opspw"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", w.Code)
	}
	// ops may run INFO but not RL.TOP: the top keys stay hidden.
	var v dashboard.View
	decode(t, get(h, "GET", "/dashboard/data.json", local, "ops", "opspw"), &v)
	if v.User != "ops" || v.Analytics != nil || !strings.Contains(v.AnalyticsNote, "rl.top") {
		t.Errorf("as ops: user %q, analytics %v, note %q; want ops, none, a note naming rl.top", v.User, v.Analytics, v.AnalyticsNote)
	}
	decode(t, get(h, "GET", "/dashboard/data.json", local, "default", "adminpw"), &v)
	if b, _ := json.Marshal(v.Analytics); !strings.Contains(string(b), "user:42") {
		t.Errorf("as default: analytics %s, want the view's top key", b)
	}
}

// TestNoPassword: with a default user that needs no password the page is
// served without one, as a connection starts authenticated; protected
// mode keeps it to loopback clients unless turned off.
func TestNoPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		protected bool
		remote    string
		code      int
	}{
		{true, local, http.StatusOK},
		{true, "[::1]:50000", http.StatusOK},
		{true, "192.0.2.7:50000", http.StatusForbidden},
		{false, "192.0.2.7:50000", http.StatusOK},
	} {
		n := newNode(t, func(c *config.Config) { c.Dashboard = true; c.ProtectedMode = tc.protected })
		h := dashboard.New(dashboard.Sources{Server: n.CommandServer(), Policies: n.Policies()})
		if w := get(h, "GET", "/dashboard/data.json", tc.remote, "", ""); w.Code != tc.code {
			t.Errorf("protected-mode %v, from %s: %d, want %d: %s", tc.protected, tc.remote, w.Code, tc.code, w.Body)
		}
	}
}

// TestData: data.json carries the policies' counters, the limiter
// commands', the node's role and the cluster state.
func TestData(t *testing.T) {
	t.Parallel()
	n := newNode(t, func(c *config.Config) { c.Dashboard = true; c.ClusterEnabled = "emulated" })
	lc := n.CommandServer().NewLocalClient()
	defer lc.Close()
	for _, args := range [][]string{
		{"RL.POLICY", "SET", "login", "fixed_window", "2", "1m"},
		{"RL.POLICY", "SET", "trial", "fixed_window", "1", "1m", "SHADOW"},
	} {
		if got := string(lc.DoString(args...)); got != "+OK\r\n" {
			t.Fatalf("%v = %q", args, got)
		}
	}
	for range 3 {
		lc.DoString("RL.HIT", "login", "{u}1")
		lc.DoString("RL.HIT", "trial", "{u}1")
	}
	h := dashboard.New(dashboard.Sources{Server: n.CommandServer(), Policies: n.Policies(), Cluster: n.ClusterSummary})
	var v dashboard.View
	decode(t, get(h, "GET", "/dashboard/data.json", local, "", ""), &v)
	want := []dashboard.Policy{
		{Name: "login", Algorithm: "fixed_window", Limit: 2, Period: "1m", Admitted: 2, Denied: 1},
		{Name: "trial", Algorithm: "fixed_window", Limit: 1, Period: "1m", Shadow: true, Admitted: 3, ShadowDenied: 2},
	}
	if len(v.Policies) != len(want) {
		t.Fatalf("policies = %+v, want %+v", v.Policies, want)
	}
	for i := range want {
		if v.Policies[i] != want[i] {
			t.Errorf("policy %d = %+v, want %+v", i, v.Policies[i], want[i])
		}
	}
	if v.Node.Role != "master" || v.Node.Keys == 0 || v.TimeMS != 1_700_000_000e3 {
		t.Errorf("node = %+v at %d, want a master holding keys at the fake clock's instant", v.Node, v.TimeMS)
	}
	if !v.Cluster.Enabled || v.Cluster.State != "ok" || v.Cluster.SlotsOK != 16384 {
		t.Errorf("cluster = %+v, want emulated, ok, 16384 slots", v.Cluster)
	}
	if v.Region != nil || v.Analytics != nil || !strings.Contains(v.AnalyticsNote, "analytics is off") {
		t.Errorf("region %v, analytics %v (%q): want none, none, analytics off", v.Region, v.Analytics, v.AnalyticsNote)
	}
	found := false
	for _, c := range v.Commands {
		found = found || c.Command == "rl.hit" && c.Admitted == 5 && c.Denied == 1
	}
	if !found {
		t.Errorf("commands = %+v, want rl.hit 5 admitted, 1 denied", v.Commands)
	}
}

func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatal(err)
	}
}
