package scripts

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
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/scripting"
)

// newServer is a command layer with this family, on clk, beside the
// keyspace its scripts reach and TIME and INFO, which tests read.
func newServer(clk clock.Clock) (*command.Server, *Family) {
	f := New()
	return command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), keyspace.New(), f, admin.New()), f
}

// tickingClock is a fake clock that moves a millisecond each time the
// time is read: a command that reads the clock anew sees a later instant.
type tickingClock struct{ *clock.Fake }

func (c tickingClock) Now() int64 {
	c.Advance(1e6)
	return c.Fake.Now()
}

// timeReply is TIME's reply.
const timeReply = `\*2\r\n\$\d+\r\n\d+\r\n\$\d+\r\n\d+\r\n`

var betweenTimes = regexp.MustCompile(`(?s)^(` + timeReply + `)(.*)(` + timeReply + `)$`)

// keepsInstant runs args between two TIMEs in one batch, and reports
// whether the second TIME answered the batch's instant, as the first did,
// and args' reply.
func keepsInstant(t *testing.T, c *command.LocalClient, args ...string) (bool, string) {
	t.Helper()
	cmds := [][][]byte{{[]byte("TIME")}, nil, {[]byte("TIME")}}
	for _, a := range args {
		cmds[1] = append(cmds[1], []byte(a))
	}
	out := string(c.Pipeline(cmds))
	m := betweenTimes.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%q: %q", args, out)
	}
	return m[1] == m[3], m[2]
}

// TestNativeRunKeepsTheBatchInstant: a script its native twin runs is one
// engine call, so the commands after it in a batch keep the batch's
// instant, as after a fast command; after a script on the interpreter the
// clock is read again.
func TestNativeRunKeepsTheBatchInstant(t *testing.T) {
	t.Parallel()
	body := libscripts.Ulule(t, "luaIncrScript")
	s, f := newServer(tickingClock{clock.NewFake(1_700_000_000e9)})
	defer s.Close()
	c := s.NewLocalClient()
	script, err := f.scripts.Load([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		keepNow bool
	}{
		{"native", []string{"EVALSHA", script.SHA, "1", "k", "1", "60000"}, true},
		{"interpreter", []string{"EVAL", body + "\n", "1", "k", "1", "60000"}, false},
		{"fast command", []string{"INCR", "k"}, true},
	} {
		kept, reply := keepsInstant(t, c, tc.args...)
		if strings.HasPrefix(reply, "-") {
			t.Fatalf("%s: %q", tc.name, reply)
		}
		if kept != tc.keepNow {
			t.Errorf("%s: the batch keeps its instant: %v, want %v", tc.name, kept, tc.keepNow)
		}
	}
}

// TestEvalSHAAfterFlush: a client that keeps the script of its last
// EVALSHA finds it gone once any client flushes the cache, and finds the
// script loaded again after that.
func TestEvalSHAAfterFlush(t *testing.T) {
	t.Parallel()
	s, _ := newServer(clock.NewFake(1_700_000_000e9))
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
	s, f := newServer(tickingClock{clock.NewFake(1_700_000_000e9)})
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
	args := func(script string, keys []string, argv ...string) []string {
		args := append(append([]string{"EVALSHA", sha[script]}, keys...), argv...)
		if strings.HasSuffix(script, "\n") {
			args[0], args[1] = "EVAL", script
		}
		return args
	}
	call := func(script string, keys []string, argv ...string) string {
		return string(c.DoString(args(script, keys, argv...)...))
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
	check := f.natives.Get(sha["check"])
	runs := check.Runs()
	aliased := append([]string(nil), keys...)
	aliased[4] = aliased[2] // job_clients is job_weights
	native := call("check", aliased, now, "c1", "1")
	lua := call(libscripts.Bottleneck(t, "check")+"\n", aliased, now, "c1", "1")
	if native != lua || native != ":1\r\n" {
		t.Errorf("aliased keys: native %q, interpreter %q, want :1", native, lua)
	}
	if check.Runs() != runs {
		t.Error("the twin ran on aliased keys")
	}
	kept, got := keepsInstant(t, c, args("check", keys, now, "c1", "1")...)
	if got != ":1\r\n" || check.Runs() != runs+1 {
		t.Fatalf("check: %q, runs %d", got, check.Runs()-runs)
	}
	if kept {
		t.Error("the batch keeps its instant after a bottleneck twin")
	}
}
