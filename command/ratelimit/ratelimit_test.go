package ratelimit_test

import (
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newLocal is the family alone on a core, with a fake clock: the table,
// gates and statistics of the core, and nothing of the other families.
func newLocal(t *testing.T) (*command.LocalClient, *clock.Fake, *ratelimit.Family) {
	t.Helper()
	clk := clock.NewFake(1_700_000_000e9)
	f := ratelimit.New()
	s := command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), f)
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.NewLocalClient(), clk, f
}

// TestFamilySteps walks the family's commands through time: each step's
// reply, exactly, after the clock has moved by advance.
func TestFamilySteps(t *testing.T) {
	t.Parallel()
	c, clk, _ := newLocal(t)
	for i, st := range []struct {
		advance time.Duration
		args    []string
		want    string
	}{
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:1\r\n:2\r\n:0\r\n:60\r\n:120\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60", "0"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"},
		{60 * time.Second, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "0", "60"}, "-ERR count must be at least 1, got 0\r\n"},
		{0, []string{"FW.INCR", "w", "2", "10s"}, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:10000\r\n"},
		{0, []string{"FW.INCR", "w", "2", "10s", "2"}, "*5\r\n:1\r\n:2\r\n:1\r\n:10000\r\n:10000\r\n"},
		{0, []string{"RL.HIT", "api", "u"}, "-ERR unknown policy 'api'\r\n"},
		{0, []string{"RL.POLICY", "SET", "api", "fixed_window", "1", "1m"}, "+OK\r\n"},
		// The clock is 1_700_000_060 s, 20 s into an epoch-aligned minute.
		{0, []string{"RL.HIT", "api", "u"}, "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:40000\r\n"},
		{0, []string{"RL.HIT", "api", "u"}, "*5\r\n:1\r\n:1\r\n:0\r\n:40000\r\n:40000\r\n"},
		// A cost past the limit never fits: denied, nothing charged, no retry.
		{0, []string{"RL.HITALL", "1", "api", "v", "COST", "2"}, "*2\r\n:1\r\n*5\r\n:1\r\n:1\r\n:1\r\n:-1\r\n:0\r\n"},
	} {
		clk.Advance(st.advance)
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestFamilyCountsAndKeepsItsPolicies: the family's counters count
// each decision, and its runtime policies are its own state, which two
// servers never share.
func TestFamilyCountsAndKeepsItsPolicies(t *testing.T) {
	t.Parallel()
	a, _, fa := newLocal(t)
	_, _, fb := newLocal(t)
	a.DoString("RL.POLICY", "SET", "api", "gcra", "1", "1m")
	a.DoString("RL.HIT", "api", "u")
	a.DoString("RL.HIT", "api", "u")
	if _, ok := fa.Policies().Get("api"); !ok {
		t.Fatal("the family does not hold the policy it was told")
	}
	if _, ok := fb.Policies().Get("api"); ok {
		t.Fatal("a policy set on one server's family shows on another's")
	}
	info := string(a.DoString("RL.POLICY", "GET", "api"))
	if !strings.Contains(info, "admitted\r\n:1\r\n") || !strings.Contains(info, "denied\r\n:1\r\n") {
		t.Errorf("RL.POLICY GET after one admission and one denial: %q", info)
	}
}
