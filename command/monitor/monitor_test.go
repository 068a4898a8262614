package monitor_test

import (
	"testing"

	"github.com/limitdb/limitdb/command"
)

// TestMonitorSteps walks a monitor and a client through what MONITOR
// shows: each command as '+<seconds>.<micros> [0 <addr>] "arg" ...' on the
// server's clock, arguments quoted as Redis's sdscatrepr, AUTH's redacted,
// administration hidden, a script's redis.call before the script itself,
// and nothing once the monitor is RESET or gone.
func TestMonitorSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.Commands().Register(&command.Command{Name: "test.read", Arity: 1, Flags: command.FlagReadonly, Group: "server", Since: "0.1.0",
		Complexity: "O(1)", Summary: "test only", Handler: func(c *command.Client, _ [][]byte) { c.OK() }})
	m, c := dial(t, s, "m:1"), dial(t, s, "c:1")
	const at = "+1700000000.000000 [0 c:1] "
	steps := []struct {
		on, want, shown string
		args            []string
	}{
		{on: "c", args: []string{"ECHO", "unseen"}, want: "$6\r\nunseen\r\n"},
		{on: "m", args: []string{"MONITOR"}, want: "+OK\r\n"},
		{on: "c", args: []string{"ECHO", "a b\n\x01\"\\\t\xff"}, want: "$9\r\na b\n\x01\"\\\t\xff\r\n",
			shown: at + `"ECHO" "a b\n\x01\"\\\t\xff"` + "\r\n"},
		{on: "c", args: []string{"AUTH", "someone", "secret"}, want: "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
			shown: at + `"AUTH" "(redacted)" "(redacted)"` + "\r\n"},
		{on: "c", args: []string{"CONFIG", "GET", "maxclients"}, want: "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"},
		{on: "c", args: []string{"EVAL", "return redis.call('ECHO', ARGV[1])", "0", "hi"}, want: "$2\r\nhi\r\n",
			shown: at + `"EVAL" "return redis.call('ECHO', ARGV[1])" "0" "hi"` + "\r\n" + `+1700000000.000000 [0 lua] "ECHO" "hi"` + "\r\n"},
		{on: "m", args: []string{"TEST.READ"}, want: "-ERR Replica can't interact with the keyspace\r\n"},
		{on: "m", args: []string{"ECHO", "m"}, want: "$1\r\nm\r\n", shown: `+1700000000.000000 [0 m:1] "ECHO" "m"` + "\r\n"},
		{on: "m", args: []string{"RESET"}, want: "+RESET\r\n"},
		{on: "m", args: []string{"TEST.READ"}, want: "+OK\r\n"},
		{on: "c", args: []string{"ECHO", "after"}, want: "$5\r\nafter\r\n"},
		{on: "m", args: []string{"MONITOR"}, want: "+OK\r\n"},
		{on: "c", args: []string{"ECHO", "again"}, want: "$5\r\nagain\r\n", shown: at + `"ECHO" "again"` + "\r\n"},
	}
	conns := map[string]*conn{"m": m, "c": c}
	for i, st := range steps {
		if got := conns[st.on].Do(st.args...); got != st.want {
			t.Fatalf("step %d: %s %q answered %q, want %q", i, st.on, st.args, got, st.want)
		}
		if got := m.Mailed(); got != st.shown {
			t.Fatalf("step %d: the monitor was shown %q, want %q", i, got, st.shown)
		}
		if got := c.Mailed(); got != "" {
			t.Fatalf("step %d: a client that does not monitor was shown %q", i, got)
		}
	}
	m.Hangup()
	c.Do("ECHO", "gone")
	if got := m.Mailed(); got != "" {
		t.Errorf("a closed monitor was shown %q", got)
	}
}

// TestMonitorNeedsAConnection: a client with no socket cannot monitor.
func TestMonitorNeedsAConnection(t *testing.T) {
	t.Parallel()
	lc := newServer(t).NewLocalClient()
	if got := string(lc.DoString("MONITOR")); got != "-ERR a client with no connection cannot monitor\r\n" {
		t.Errorf("a LocalClient's MONITOR answered %q", got)
	}
}
