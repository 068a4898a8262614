package resp

import (
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{"port 7000", []string{"port", "7000"}, false},
		{"  dir   /var/lib/limitdb  ", []string{"dir", "/var/lib/limitdb"}, false},
		{`dir "/path with spaces"`, []string{"dir", "/path with spaces"}, false},
		{`x "a\"b\\c\n\x41"`, []string{"x", "a\"b\\c\nA"}, false},
		{`x 'it\'s'`, []string{"x", "it's"}, false},
		{`x ""`, []string{"x", ""}, false},
		{`x "open`, nil, true},
		{`x 'open`, nil, true},
		{`x "a"b`, nil, true},
	}
	for _, tc := range cases {
		got, err := splitArgs(tc.in)
		if (err != nil) != tc.err || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitArgs(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestConfigFile(t *testing.T) {
	file := `# a comment
port 7000

bind 127.0.0.1
  # indented comment
slowlog-max-len 5
dir "/tmp/with space"
SLOWLOG-LOG-SLOWER-THAN -1
`
	lines, err := ParseConfig(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := ApplyConfig(&cfg, lines); err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 7000 || cfg.SlowlogMaxLen != 5 || cfg.Dir != "/tmp/with space" || cfg.SlowlogLogSlowerThan != -1 {
		t.Errorf("config = %+v", cfg)
	}
	for _, bad := range []struct{ file, want string }{
		{"port 7000\nnope 1\n", "line 2: unknown directive \"nope\""},
		{"port x\n", "line 1: port \"x\""},
		{"\n\nport\n", "line 3: wrong number of arguments"},
		{"dir \"x\n", "line 1: unbalanced quotes"},
	} {
		lines, err := ParseConfig(strings.NewReader(bad.file))
		if err == nil {
			err = ApplyConfig(&cfg, lines)
		}
		if err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.file, err, bad.want)
		}
	}
}

func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`a "b\x41" 'c\'d'`, `"`, `'\`, `x "\x4`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := splitArgs(s)
		if err == nil && strings.TrimSpace(s) != "" && len(args) == 0 {
			t.Errorf("%q gave no arguments", s)
		}
	})
}
