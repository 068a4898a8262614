package scripts_test

import (
	"io"
	"log"
	"regexp"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/scripting"
	"github.com/limitdb/limitdb/scripting/twins"
)

// The twins' differential test against the interpreter lives with the
// scripts family, not in scripting/twins: the interpreter's side of it is
// the script's redis.call commands, which are the command layer's, and
// both sides are compared by what GET and PTTL answer. It uses only what
// the command layer and the family export.

// TestNativeEdgesMatchLua: on arguments and values other than the plain
// numbers the libraries send (signs, leading zeros, spaces, fractions,
// hexadecimal, integers past a float's exact range, words), each twin
// answers as its text does on the interpreter, which runs the text with a
// newline added since limitdb does not recognise that: the same reply or
// error, the same value and expiry left behind. A twin either computes
// what the script computes or declines before changing anything.
// (tests/native_test.go walks the plain arguments through time.)
// Past int64 ("1e20", "9223372036854775808") the reply is what Redis's
// Lua answers, INT64_MIN, on both sides.
func TestNativeEdgesMatchLua(t *testing.T) {
	t.Parallel()
	edges := []string{"+1", "007", "0", "-5", " 1", "1 ", "1.5", "0x10", "", "abc",
		"999999999999999", "1234567890123456", "-1234567890123456",
		"-0", "00012", "1e3", "0x1p4", "0b101", "1_000", "\v1",
		"9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e20", "-1e20", "inf", "-inf", "nan"}
	states := [][]string{nil, {"SET", "k", "5"}, {"SET", "k", "2.5", "PX", "90000"}, {"SET", "k", "311234567.12345601"},
		{"SET", "k", "word"}, {"HSET", "k", "f", "v"}, {"SET", "k", "9223372036854775806"}, {"SET", "k", "9007199254740993"},
		{"SET", "k", "1e3"}, {"SET", "k", "inf"}, {"RPUSH", "k", "1700000000", "1e3", "0x10", "-0"}}
	for _, sc := range []struct {
		name  string
		body  func(t testing.TB) string
		args  []string
		count int // the argument that is a count of iterations (-1: none), given no edge past 1e4
	}{
		{"redis_rate.allowN", func(t testing.TB) string { return libscripts.RedisRate(t, "allowN") }, []string{"10", "5", "60", "1"}, -1},
		{"redis_rate.allowAtMost", func(t testing.TB) string { return libscripts.RedisRate(t, "allowAtMost") }, []string{"10", "5", "60", "3"}, -1},
		{"ulule.incr", func(t testing.TB) string { return libscripts.Ulule(t, "luaIncrScript") }, []string{"1", "60000"}, -1},
		{"ulule.peek", func(t testing.TB) string { return libscripts.Ulule(t, "luaPeekScript") }, nil, -1},
		{"flexible.incrTtl", libscripts.RateLimiterFlexible, []string{"1", "60", "100", "60"}, -1},
		{"throttled.cas", func(t testing.TB) string { return libscripts.Throttled(t, "redisCASScript") }, []string{"5", "7", "60"}, -1},
		{"limits.incr_expire", func(t testing.TB) string { return libscripts.PythonLimits(t, "incr_expire") }, []string{"60", "1"}, -1},
		// ARGV[4] is a loop's count: the interpreter would push 1e20 times.
		{"limits.acquire_moving_window", func(t testing.TB) string { return libscripts.PythonLimits(t, "acquire_moving_window") },
			[]string{"1700000000", "3", "60", "1"}, 3},
		{"limits.moving_window", func(t testing.TB) string { return libscripts.PythonLimits(t, "moving_window") }, []string{"1", "3"}, -1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			body := sc.body(t)
			clk := clock.NewFake(1_700_000_000e9)
			s := command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), keyspace.New(), scripts.New(), admin.New())
			defer s.Close()
			c := s.NewLocalClient()
			sha := strings.TrimSuffix(strings.TrimPrefix(string(c.DoString("SCRIPT", "LOAD", body)), "$40\r\n"), "\r\n")
			if twins.New().Get(sha) == nil {
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
						if n, ok := scripting.ReadNumber(e); i == sc.count && ok && !(n <= 1e4) {
							continue
						}
						args := append([]string(nil), sc.args...)
						args[i] = e
						run(args, state)
					}
				}
			}
			// Both sides on the interpreter would agree too: the twin must
			// have answered some of the calls.
			if !regexp.MustCompile("sha=" + sha + ",runs=[1-9]").Match(c.DoString("INFO", "scripting")) {
				t.Errorf("%s never ran natively", sc.name)
			}
		})
	}
}
