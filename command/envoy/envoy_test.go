package envoy_test

import (
	"errors"
	"io"
	"log"
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/rls"
)

// newLocal is a client of a command layer with this family, answering
// from svc, beside the keyspace and administration (INFO), in the order
// the node registers them, at 1_700_000_000 s on a fake clock.
func newLocal(t *testing.T, svc envoy.Service) *command.LocalClient {
	t.Helper()
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), keyspace.New(), envoy.New(svc), admin.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.NewLocalClient()
}

// step is one command and the reply it must get.
type step struct {
	args []string
	want string
}

// run walks steps on c and reports each reply that differs.
func run(t *testing.T, c *command.LocalClient, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := string(c.DoString(s.args...)); got != s.want {
			t.Errorf("step %d: %v = %q, want %q", i, s.args, got, s.want)
		}
	}
}

// RLS.CHARGE walked step by step on one counter of 2 per hour, with the
// refusals of arguments that do not parse.
func TestRLSCharge(t *testing.T) {
	t.Parallel()
	c := newLocal(t, nil) // 1_700_000_000 s: the hour began at 1699999200
	const key, rule = "d_user_a_1699999200", "HOUR:2:1699999200"
	run(t, c, []step{
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "0", rule}, "*8\r\n:0\r\n:2\r\n:2800\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "1", rule}, "*8\r\n:0\r\n:1\r\n:2800\r\n:1\r\n:0\r\n:0\r\n:1\r\n:0\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "1", rule}, "*8\r\n:0\r\n:0\r\n:2800\r\n:1\r\n:0\r\n:1\r\n:1\r\n:0\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "1", rule}, "*8\r\n:1\r\n:0\r\n:2800\r\n:1\r\n:1\r\n:0\r\n:0\r\n:0\r\n"},
		{[]string{"TYPE", key}, "+fwindow\r\n"},
		{[]string{"RLS.CHARGE", "sometimes", "0.8", key, "1", rule}, "-ERR rls: bad charge: unknown mode 'sometimes'\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "1", "HOUR:2"}, "-ERR rls: bad charge: rule 'HOUR:2': want UNIT:requests_per_unit:start or UNIT:requests_per_unit:algorithm:burst\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", key, "1"}, "-ERR wrong number of arguments for 'rls.charge' command\r\n"},
		{[]string{"SET", "s", "x"}, "+OK\r\n"},
		{[]string{"RLS.CHARGE", "per_descriptor", "0.8", "s", "1", rule}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	})
}

// fakeService answers every descriptor with st (or err) and records what
// it was asked.
type fakeService struct {
	st    envoy.Status
	err   error
	rules []rls.RuleStats

	user, domain string
	entries      []envoy.Entry
	hits         uint64
	now          int64
}

func (f *fakeService) ShouldRateLimit(user, domain string, entries []envoy.Entry, hits uint64, now int64) (envoy.Status, error) {
	f.user, f.domain, f.entries, f.hits, f.now = user, domain, entries, hits, now
	return f.st, f.err
}

func (f *fakeService) RuleStats() []rls.RuleStats { return f.rules }

// TestRLShould: RL.SHOULD's reply for each kind of answer, the arguments
// it hands the service, and its refusals.
func TestRLShould(t *testing.T) {
	t.Parallel()
	limited := envoy.Status{Over: true, OverallOver: true, HasLimit: true, RequestsPerUnit: 2, Remaining: 0, ResetAfter: 2800}
	for _, tc := range []struct {
		name    string
		st      envoy.Status
		err     error
		args    []string
		want    string
		entries []envoy.Entry
		hits    uint64
	}{
		{"over", limited, nil, []string{"RL.SHOULD", "d", "user", "a"},
			"*5\r\n+OVER_LIMIT\r\n+OVER_LIMIT\r\n:2\r\n:0\r\n:2800\r\n", []envoy.Entry{{"user", "a"}}, 1},
		{"no rule", envoy.Status{Remaining: 4294967295}, nil, []string{"RL.SHOULD", "d", "k", "v", "k2", "v2", "HITS", "0"},
			"*5\r\n+OK\r\n+OK\r\n$-1\r\n:4294967295\r\n$-1\r\n", []envoy.Entry{{"k", "v"}, {"k2", "v2"}}, 0},
		{"a key named hits", limited, nil, []string{"RL.SHOULD", "d", "hits", "3"},
			"*5\r\n+OVER_LIMIT\r\n+OVER_LIMIT\r\n:2\r\n:0\r\n:2800\r\n", []envoy.Entry{{"hits", "3"}}, 1},
		{"the store's refusal keeps its code", envoy.Status{}, errors.New("OOM command not allowed when used memory > 'maxmemory'."),
			[]string{"RL.SHOULD", "d", "k", "v"}, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", []envoy.Entry{{"k", "v"}}, 1},
		{"another refusal is an ERR", envoy.Status{}, errors.New("rls: no such domain"),
			[]string{"RL.SHOULD", "d", "k", "v"}, "-ERR rls: no such domain\r\n", []envoy.Entry{{"k", "v"}}, 1},
		{"odd entries", limited, nil, []string{"RL.SHOULD", "d", "k", "v", "k2"}, "-ERR syntax error\r\n", nil, 0},
		{"negative hits", limited, nil, []string{"RL.SHOULD", "d", "k", "v", "HITS", "-1"}, "-ERR hits must be at least 0, got -1\r\n", nil, 0},
		{"no entry", limited, nil, []string{"RL.SHOULD", "d", "k"}, "-ERR wrong number of arguments for 'rl.should' command\r\n", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := &fakeService{st: tc.st, err: tc.err}
			c := newLocal(t, svc)
			if got := string(c.DoString(tc.args...)); got != tc.want {
				t.Fatalf("%q = %q, want %q", tc.args, got, tc.want)
			}
			if tc.entries == nil {
				if svc.domain != "" {
					t.Errorf("the service was asked about %q", svc.domain)
				}
				return
			}
			if svc.user != "default" || svc.domain != "d" || svc.hits != tc.hits || svc.now != 1_700_000_000e9 {
				t.Errorf("asked as %q of %q, %d hits at %d; want default, d, %d, 1700000000e9", svc.user, svc.domain, svc.hits, svc.now, tc.hits)
			}
			if len(svc.entries) != len(tc.entries) {
				t.Fatalf("entries %v, want %v", svc.entries, tc.entries)
			}
			for i := range tc.entries {
				if svc.entries[i] != tc.entries[i] {
					t.Errorf("entry %d = %v, want %v", i, svc.entries[i], tc.entries[i])
				}
			}
		})
	}
}

// TestNoService: without a service RL.SHOULD refuses and INFO rls is
// empty, while RLS.CHARGE still charges.
func TestNoService(t *testing.T) {
	t.Parallel()
	run(t, newLocal(t, nil), []step{
		{[]string{"RL.SHOULD", "d", "k", "v"}, "-ERR the Envoy rate limit service is not available on this server\r\n"},
		{[]string{"INFO", "rls"}, "$7\r\n# Rls\r\n\r\n"},
	})
}

// TestInfoRLS: INFO rls lists each rule's five counters under
// envoyproxy/ratelimit's statistic's name, and shows under INFO all before
// commandstats and latencystats, never in the default INFO.
func TestInfoRLS(t *testing.T) {
	t.Parallel()
	svc := &fakeService{rules: []rls.RuleStats{
		{Domain: "edge", Key: "path_/beta", Stats: rls.Stats{TotalHits: 2, OverLimit: 1, NearLimit: 1, ShadowMode: 1}},
		{Domain: "messaging", Key: "message_type_marketing.to_number", Stats: rls.Stats{TotalHits: 6, OverLimit: 1, NearLimit: 1, WithinLimit: 4}},
	}}
	c := newLocal(t, svc)
	want := "# Rls\r\n" +
		"rls_edge.path_/beta:total_hits=2,over_limit=1,near_limit=1,within_limit=0,shadow_mode=1\r\n" +
		"rls_messaging.message_type_marketing.to_number:total_hits=6,over_limit=1,near_limit=1,within_limit=4,shadow_mode=0\r\n"
	if got := string(c.DoString("INFO", "rls")); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
		t.Errorf("INFO rls = %q, want %q", got, want)
	}
	all := string(c.DoString("INFO", "all"))
	rlsAt, cmdAt := strings.Index(all, "# Rls\r\n"), strings.Index(all, "# Commandstats\r\n")
	if rlsAt < 0 || cmdAt < rlsAt || !strings.Contains(all, "# Latencystats\r\n") {
		t.Errorf("INFO all: rls at %d, commandstats at %d: %q", rlsAt, cmdAt, all)
	}
	if strings.Contains(string(c.DoString("INFO")), "# Rls") {
		t.Error("the default INFO shows rls")
	}
}
