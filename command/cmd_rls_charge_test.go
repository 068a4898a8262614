package command_test

import (
	"testing"
)

// RLS.CHARGE walked step by step on one counter of 2 per hour, with the
// refusals of arguments that do not parse.
func TestRLSCharge(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t) // 1_700_000_000 s: the hour began at 1699999200
	const key, rule = "d_user_a_1699999200", "HOUR:2:1699999200"
	steps := []struct {
		args []string
		want string
	}{
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
	}
	for i, s := range steps {
		if got := string(c.DoString(s.args...)); got != s.want {
			t.Errorf("step %d: %v = %q, want %q", i, s.args, got, s.want)
		}
	}
}
