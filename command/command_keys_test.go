package command_test

import (
	"strings"
	"testing"
)

// TestCommandKeys: COMMAND reports the key arguments cluster clients
// route by; GETKEYS answers movable ones.
func TestCommandKeys(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	for i, st := range []struct {
		args []string
		want string
	}{
		{[]string{"COMMAND", "GETKEYS", "RL.HIT", "api", "user:42"}, "*1\r\n$7\r\nuser:42\r\n"},
		{[]string{"COMMAND", "GETKEYS", "RL.HITALL", "2", "api", "{u}a", "login", "{u}b", "COST", "2"}, "*2\r\n$4\r\n{u}a\r\n$4\r\n{u}b\r\n"},
		{[]string{"COMMAND", "GETKEYS", "EVAL", "x", "2", "a", "b", "c"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"COMMAND", "GETKEYS", "FCALL", "f", "1", "a", "b"}, "*1\r\n$1\r\na\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"}, "*1\r\n$1\r\nk\r\n"},
		{[]string{"COMMAND", "GETKEYS", "PING", "x"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "GET", "a", "b"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "NOSUCH", "a"}, "-ERR Invalid command specified\r\n"},
		{[]string{"COMMAND", "GETKEYS", "GET"}, "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
	} {
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
	for i, st := range []struct {
		name string
		want string // flags, then first key, last key, step
	}{
		{"rl.hit", "*3\r\n+write\r\n+denyoom\r\n+fast\r\n:2\r\n:2\r\n:1\r\n"},
		{"rl.hitall", "*3\r\n+write\r\n+denyoom\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"},
		{"eval", "*2\r\n+skip_monitor\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"},
		{"evalsha", "*2\r\n+skip_monitor\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"},
		{"fcall", "*2\r\n+skip_monitor\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"},
	} {
		if got := string(c.DoString("COMMAND", "INFO", st.name)); !strings.Contains(got, st.want) {
			t.Errorf("step %d: COMMAND INFO %s = %q, want it to hold %q", i, st.name, got, st.want)
		}
	}
}
