package command

import (
	"testing"
	"time"
)

func TestParseInt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"01", 0, false}, {"+1", 0, false},
		{" 1", 0, false}, {"1.0", 0, false}, {"", 0, false}, {"-", 0, false}, {"-0", 0, false},
		{"99999999999999999999", 0, false},
	}
	for _, c := range cases {
		got, err := ParseInt([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestParseDuration checks what resp adds to limit.ParseDuration (which has
// the spelling's own table): the whole-seconds fast path and errors that
// name the argument.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"1", time.Second, ""},
		{"9223372036", 9223372036 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"0", 0, "ERR invalid window '0': must be positive"},
		{"9223372037", 0, "ERR invalid window '9223372037': too large"},
		{"5y", 0, "ERR invalid window '5y': unknown unit (use ms, s, m, h or d)"},
	}
	for _, c := range cases {
		got, err := ParseDuration([]byte(c.in), "window")
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || time.Duration(got) != c.want {
			t.Errorf("%q = %v, %v; want %v", c.in, time.Duration(got), err, c.want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*", "anything", true}, {"user:*", "user:1", true}, {"user:*", "usr:1", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h[ae]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[a-c]llo", "hbllo", true}, {"a\\*b", "a*b", true},
		{"a\\*b", "axb", false}, {"**x", "abx", true},
	}
	for _, c := range cases {
		if got := GlobMatch(c.pat, c.s); got != c.want {
			t.Errorf("GlobMatch(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

func TestSyntaxToDocArgs(t *testing.T) {
	t.Parallel()
	cmd := &Command{Syntax: "key max_burst tokens_per_period period [TOKENS count]"}
	args := cmd.Args()
	if len(args) != 5 || args[0].Type != "key" || args[4].Token != "TOKENS" || !args[4].Optional || args[4].Type != "integer" {
		t.Errorf("args = %+v", args)
	}
	cmd = &Command{Syntax: "[NOSAVE|SAVE] [NOW]"}
	args = cmd.Args()
	if len(args) != 2 || args[0].Type != "oneof" || len(args[0].Args) != 2 || args[0].Args[1].Token != "SAVE" || args[1].Type != "pure-token" {
		t.Errorf("args = %+v", args)
	}
	cmd = &Command{Syntax: "key [key ...]"}
	if args = cmd.Args(); len(args) != 2 || !args[1].Multiple || !args[1].Optional {
		t.Errorf("args = %+v", args)
	}
}
