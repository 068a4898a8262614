package envoy_test

import (
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
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
