package command_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	connection "github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/testlog"
)

// TestPanicRecovered adds a command that panics to one server's table:
// its caller gets an error, the panic is logged with a stack, and that
// client and every other keep working.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(logs, "", 0), connection.New())
	s.Commands().Register(&command.Command{Name: "test.panic", Arity: 1, Group: "server", Since: "0.1.0", Complexity: "O(1)", Summary: "test only",
		Handler: func(c *command.Client, _ [][]byte) {
			var m map[string]int
			m["boom"]++ // assignment to a nil map
		}})
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	a, b := s.NewLocalClient(), s.NewLocalClient()
	for i := 0; i < 3; i++ {
		if got := string(a.DoString("TEST.PANIC")); got != "-ERR internal error while running 'test.panic'\r\n" {
			t.Fatalf("panicking command answered %q", got)
		}
		if got := string(a.DoString("PING")); got != "+PONG\r\n" {
			t.Fatalf("same client after the panic: %q", got)
		}
		if got := string(b.DoString("PING")); got != "+PONG\r\n" {
			t.Fatalf("other client after the panic: %q", got)
		}
	}
	if l := logs.String(); !strings.Contains(l, "panic in TEST.PANIC: assignment to entry in nil map") || !strings.Contains(l, "goroutine") {
		t.Errorf("panic not logged with its stack:\n%s", l)
	}
}

// ---- fuzzing ------------------------------------------------------------

// perChannel are the commands that answer once per channel or pattern
// they name. The corpus picks commands by their index in the table, so
// which command a seed runs changes as commands come and go.
var perChannel = map[string]bool{"subscribe": true, "unsubscribe": true, "psubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true}

// FuzzCommandArgs sends arbitrary arguments to every command of the table
// through dispatch (gates included), and checks that each call answers
// exactly one well-formed reply (or closes the connection) and never
// panics. The first byte picks the command, the rest is split on NUL into
// arguments.
func FuzzCommandArgs(f *testing.F) {
	logs := &testlog.Buffer{}
	cfg := config.Default()
	// Not f.TempDir: a SAVE, BGSAVE or SHUTDOWN among the inputs may still
	// be writing there when the test ends, and TempDir's cleanup fails then.
	dir, err := os.MkdirTemp("", "FuzzCommandArgs")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		for i := 0; i < 100 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	cfg.Dir = dir
	clk := clock.NewFake(1_700_000_000e9)
	shut := false // the last input's SHUTDOWN went ahead
	newServer := func() *command.Server {
		s := command.New(cfg, engine.New(clk, 0), log.New(logs, "", 0), families()...)
		// A SHUTDOWN among the inputs must not end the run: it is recorded,
		// and answers nothing, as Redis's does once it goes ahead.
		s.RequestShutdown = func(bool) { shut = true }
		if err := s.Prepare(); err != nil {
			f.Fatal(err)
		}
		return s
	}
	s := newServer()
	var names []string
	s.Commands().EachRunnable(func(c *command.Command) { names = append(names, strings.ReplaceAll(c.Name, "|", "\x00")) })
	for i, name := range names {
		f.Add(append([]byte{byte(i)}, name...))
	}
	for _, s := range seedArgs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		name := names[int(in[0])%len(names)]
		args := [][]byte{}
		for _, a := range bytes.Split([]byte(name), []byte{0}) {
			args = append(args, a)
		}
		if len(in) > 1 {
			args = append(args, bytes.Split(in[1:], []byte{0})...)
		}
		shut = false
		c := s.NewLocalClient()
		out := bytes.Clone(c.Do(args...))
		closed := c.Closing()
		c.Close()
		clk.Advance(time.Millisecond)
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("%q panicked:\n%s", args, logs.String())
		}
		n, err := countReplies(out)
		want := 1
		if perChannel[strings.ToLower(string(args[0]))] && len(args) > 2 && !bytes.HasPrefix(out, []byte("-")) {
			// A refusal (a client with no connection cannot subscribe) is
			// one error, not one per channel.
			want = len(args) - 1 // as Redis: one confirmation per channel or pattern
		}
		if err != nil || (n != want && !(n == 0 && (closed || shut))) {
			t.Fatalf("%q: %d replies (%v): %q", args, n, err, out)
		}
		if s.AuthRequired() {
			s.SetConfig([2]string{"requirepass", ""})
		}
	})
}

// countReplies counts the top-level RESP2/RESP3 values in b and fails on
// anything malformed or truncated.
func countReplies(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		rest, err := skipValue(b)
		if err != nil {
			return n, err
		}
		b = rest
		n++
	}
	return n, nil
}

func skipValue(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, errors.New("no line")
	}
	line, rest := b[1:i], b[i+2:]
	switch b[0] {
	case '+', '-', ':', ',', '_', '#', '(':
		return rest, nil
	case '$', '=', '!':
		size, err := strconv.Atoi(string(line))
		if err != nil || size < -1 {
			return nil, fmt.Errorf("bad length %q", line)
		}
		if size == -1 {
			return rest, nil
		}
		if len(rest) < size+2 || string(rest[size:size+2]) != "\r\n" {
			return nil, errors.New("short bulk")
		}
		return rest[size+2:], nil
	case '*', '~', '>', '%', '|':
		count, err := strconv.Atoi(string(line))
		if err != nil || count < -1 {
			return nil, fmt.Errorf("bad count %q", line)
		}
		if b[0] == '%' || b[0] == '|' {
			count *= 2
		}
		for j := 0; j < count; j++ {
			if rest, err = skipValue(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown type %q", b[0])
}

var seedArgs = []string{
	"\x00k\x0015\x0030\x0060", "\x00k\x00-1\x00x\x00\x00", "\x00\x00\x00\x00\x00\x00\x00\x00",
	"\x009223372036854775807\x009223372036854775807\x009223372036854775807",
	"\x00k\x001e308\x00NaN\x00inf", "\x00*\x00MATCH\x00[\x00COUNT\x00-5",
}

// TestFirstKeyOfAnyArguments: Prefetch's firstKey, which runs before a
// command's arguments are checked, gives every command of the table, with
// any number of arguments, a key (among its arguments where the table gives
// positions) or nil, and never panics; a key it gives reads ahead without
// changing the keyspace.
func TestFirstKeyOfAnyArguments(t *testing.T) {
	t.Parallel()
	eng := engine.New(clock.NewFake(1_700_000_000e9), 0)
	table := newServer(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0)).Commands()
	words := [][]byte{[]byte("1"), []byte("k"), []byte("-1"), []byte("99999"), []byte("x"), []byte("2")}
	checked := 0
	table.EachRunnable(func(cmd *command.Command) {
		for n := 1; n <= 7; n++ {
			args := [][]byte{[]byte(cmd.Name)}
			for i := 1; i < n; i++ {
				args = append(args, words[(i+n)%len(words)])
			}
			k := command.FirstKey(cmd, args)
			if k == nil {
				continue
			}
			found := false
			for _, a := range args[1:] {
				found = found || &a[0] == &k[0]
			}
			if !found && cmd.Keys == nil { // a Keys function may derive its keys (RL.HIT's rl:policy:id)
				t.Errorf("%s with %d arguments: first key %q is none of them", cmd.Name, n, k)
			}
			eng.Prefetch([][]byte{k})
			checked++
		}
	})
	if checked == 0 {
		t.Fatal("no command gave a key")
	}
	if n := eng.Len(); n != 0 {
		t.Errorf("%d keys after Prefetch, want 0", n)
	}
}
