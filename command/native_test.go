package command_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/scripting"
)

// TestNativeEdgesMatchLua: on arguments and values other than the plain
// numbers the libraries send (signs, leading zeros, spaces, fractions,
// hexadecimal, integers past a float's exact range, words), each twin
// answers as its text does on the interpreter, which runs the text with a
// newline added since limitdb does not recognise that: the same reply or
// error, the same value and expiry left behind. A twin either computes
// what the script computes or declines before changing anything.
// (tests/native_test.go walks the plain arguments through time.)
//
// Left out: "-0", exponents ("1e3") and integers past int64, which the
// interpreter (gopher-lua) reads otherwise than Lua 5.1's strtod, and so
// Redis, does ("-0" as 0, the others as nil in tonumber); the twins read
// them as Redis does.
func TestNativeEdgesMatchLua(t *testing.T) {
	t.Parallel()
	edges := []string{"+1", "007", "0", "-5", " 1", "1 ", "1.5", "0x10", "", "abc",
		"999999999999999", "1234567890123456", "-1234567890123456"}
	states := [][]string{nil, {"SET", "k", "5"}, {"SET", "k", "2.5", "PX", "90000"}, {"SET", "k", "311234567.12345601"},
		{"SET", "k", "word"}, {"HSET", "k", "f", "v"}}
	for _, sc := range []struct {
		name string
		body func(t testing.TB) string
		args []string
	}{
		{"redis_rate.allowN", func(t testing.TB) string { return libscripts.RedisRate(t, "allowN") }, []string{"10", "5", "60", "1"}},
		{"redis_rate.allowAtMost", func(t testing.TB) string { return libscripts.RedisRate(t, "allowAtMost") }, []string{"10", "5", "60", "3"}},
		{"ulule.incr", func(t testing.TB) string { return libscripts.Ulule(t, "luaIncrScript") }, []string{"1", "60000"}},
		{"ulule.peek", func(t testing.TB) string { return libscripts.Ulule(t, "luaPeekScript") }, nil},
		{"flexible.incrTtl", libscripts.RateLimiterFlexible, []string{"1", "60", "100", "60"}},
		{"throttled.cas", func(t testing.TB) string { return libscripts.Throttled(t, "redisCASScript") }, []string{"5", "7", "60"}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			body := sc.body(t)
			clk := clock.NewFake(1_700_000_000e9)
			s := newServer(config.Default(), engine.New(clk, 0))
			defer s.Close()
			c := s.NewLocalClient()
			sha := strings.TrimSuffix(strings.TrimPrefix(string(c.DoString("SCRIPT", "LOAD", body)), "$40\r\n"), "\r\n")
			if _, ok := s.NativeRuns(sha); !ok {
				t.Fatalf("%s is not recognised", sc.name)
			}
			shaRE := regexp.MustCompile("[0-9a-f]{40}")
			run := func(args []string, state []string) {
				t.Helper()
				var got [2]string
				for i, key := range []string{"n", "l"} {
					c.DoString("DEL", key)
					if state != nil {
						c.DoString(append([]string{state[0], key}, state[2:]...)...)
					}
					cmd := append([]string{"EVALSHA", sha, "1", key}, args...)
					if key == "l" {
						cmd[0], cmd[1] = "EVAL", body+"\n"
					}
					reply := shaRE.ReplaceAllString(string(c.DoString(cmd...)), "SHA")
					value := string(c.DoString("GET", key))
					got[i] = reply + " value " + value + " pttl " + string(c.DoString("PTTL", key))
				}
				if got[0] != got[1] {
					t.Errorf("%q on %q:\nnative %q\nlua    %q", args, state, got[0], got[1])
				}
			}
			for _, state := range states {
				run(sc.args, state)
				for i := range sc.args {
					for _, e := range edges {
						args := append([]string(nil), sc.args...)
						args[i] = e
						run(args, state)
					}
				}
			}
		})
	}
}

// TestNativeRunKeepsTheBatchInstant: a script its native twin runs is one
// engine call, so the commands after it in a batch keep the batch's
// instant, as after a fast command; after a script on the interpreter the
// clock is read again.
func TestNativeRunKeepsTheBatchInstant(t *testing.T) {
	t.Parallel()
	body := libscripts.Ulule(t, "luaIncrScript")
	clk := clock.NewFake(1_700_000_000e9)
	s := newServer(config.Default(), engine.New(clk, 0))
	defer s.Close()
	c := s.NewLocalClient()
	sha, err := s.LoadScript([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		keepNow bool
	}{
		{"native", []string{"EVALSHA", sha, "1", "k", "1", "60000"}, true},
		{"interpreter", []string{"EVAL", body + "\n", "1", "k", "1", "60000"}, false},
		{"fast command", []string{"INCR", "k"}, true},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		c.Now()
		if c.Run(args) {
			t.Fatalf("%s: %q", tc.name, c.Replies())
		}
		if got := c.KeepsInstant(); got != tc.keepNow {
			t.Errorf("%s: the batch keeps its instant: %v, want %v", tc.name, got, tc.keepNow)
		}
	}
	c.EndBatch()
}

// TestEvalSHAAfterFlush: a client that keeps the script of its last
// EVALSHA finds it gone once any client flushes the cache, and finds the
// script loaded again after that.
func TestEvalSHAAfterFlush(t *testing.T) {
	t.Parallel()
	s := newServer(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0))
	defer s.Close()
	c, other := s.NewLocalClient(), s.NewLocalClient()
	sha := scripting.SHA1([]byte("return 7"))
	steps := []struct {
		by   *command.LocalClient
		args []string
		want string
	}{
		{other, []string{"SCRIPT", "LOAD", "return 7"}, "$40\r\n" + sha + "\r\n"},
		{c, []string{"EVALSHA", sha, "0"}, ":7\r\n"},
		{c, []string{"EVALSHA", strings.ToUpper(sha), "0"}, ":7\r\n"},
		{c, []string{"EVALSHA", sha, "0"}, ":7\r\n"},
		{other, []string{"SCRIPT", "FLUSH"}, "+OK\r\n"},
		{c, []string{"EVALSHA", sha, "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{other, []string{"SCRIPT", "LOAD", "return 7"}, "$40\r\n" + sha + "\r\n"},
		{c, []string{"EVALSHA", sha, "0"}, ":7\r\n"},
	}
	for i, st := range steps {
		if got := string(st.by.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q: %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestBottleneckTwinEdges: a bottleneck twin declines KEYS that name a key
// twice (it reads ahead of its writes, which gives the script's answer only
// for eight keys), so the interpreter answers; and after a twin's run,
// which grows with the jobs and clients it walks, the batch's instant is
// read anew.
func TestBottleneckTwinEdges(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	s := newServer(config.Default(), engine.New(clk, 0))
	defer s.Close()
	c := s.NewLocalClient()
	sha := map[string]string{}
	for _, name := range []string{"init", "register_client", "check"} {
		sha[name] = scripting.SHA1([]byte(libscripts.Bottleneck(t, name)))
		c.DoString("SCRIPT", "LOAD", libscripts.Bottleneck(t, name))
	}
	keys := []string{"8"}
	for _, k := range []string{"settings", "job_weights", "job_expirations", "job_clients", "client_running",
		"client_num_queued", "client_last_registered", "client_last_seen"} {
		keys = append(keys, "b_a_"+k)
	}
	call := func(script string, keys []string, argv ...string) string {
		args := append(append([]string{"EVALSHA", sha[script]}, keys...), argv...)
		if strings.HasSuffix(script, "\n") {
			args[0], args[1] = "EVAL", script
		}
		return string(c.DoString(args...))
	}
	now := "1700000000000"
	for _, step := range [][]string{
		{"init", now, "c1", "1", "2.19.5", "id", "a", "version", "2.19.5", "minTime", "0", "clientTimeout", "10000"},
		{"register_client", now, "c1", "0"},
	} {
		if got := call(step[0], keys, step[1:]...); got != "*0\r\n" {
			t.Fatalf("%s: %q", step[0], got)
		}
	}
	runs, _ := s.NativeRuns(sha["check"])
	aliased := append([]string(nil), keys...)
	aliased[4] = aliased[2] // job_clients is job_weights
	native := call("check", aliased, now, "c1", "1")
	lua := call(libscripts.Bottleneck(t, "check")+"\n", aliased, now, "c1", "1")
	if native != lua || native != ":1\r\n" {
		t.Errorf("aliased keys: native %q, interpreter %q, want :1", native, lua)
	}
	if n, _ := s.NativeRuns(sha["check"]); n != runs {
		t.Error("the twin ran on aliased keys")
	}
	c.Now()
	if got := call("check", keys, now, "c1", "1"); got != ":1\r\n" {
		t.Fatalf("check: %q", got)
	} else if n, _ := s.NativeRuns(sha["check"]); n != runs+1 {
		t.Fatalf("check: %q, runs %d", got, n-runs)
	}
	if c.KeepsInstant() {
		t.Error("the batch keeps its instant after a bottleneck twin")
	}
	c.EndBatch()
}
