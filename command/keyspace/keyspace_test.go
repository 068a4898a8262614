package keyspace_test

import (
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newClient is a client of a command layer whose only family is this one,
// on an engine that reads a fake clock.
func newClient(t *testing.T) (*command.LocalClient, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(1_700_000_000e9)
	s := command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), keyspace.New(), scripts.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.NewLocalClient(), clk
}

// TestFamilyOnItsOwn: the family's commands answer on a table with no
// other family, through what the core exports: the client's scratch buffer
// (a value read after a longer one is not padded with the longer one's
// bytes), the expiry arithmetic and its errors, GlobMatch, and MULTI's
// transaction reached through Client.Engine.
func TestFamilyOnItsOwn(t *testing.T) {
	t.Parallel()
	c, clk := newClient(t)
	long := strings.Repeat("x", 100)
	steps := []struct {
		advance time.Duration // before the command
		args    []string
		want    string
	}{
		{0, []string{"SET", "hello", long}, "+OK\r\n"},
		{0, []string{"GET", "hello"}, "$100\r\n" + long + "\r\n"},
		{0, []string{"SET", "world", "hi"}, "+OK\r\n"},
		{0, []string{"GET", "world"}, "$2\r\nhi\r\n"},
		{0, []string{"GETSET", "world", "ho"}, "$2\r\nhi\r\n"},
		{0, []string{"SET", "world", "x", "EX", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
		{0, []string{"SETEX", "world", "-1", "x"}, "-ERR invalid expire time in 'setex' command\r\n"},
		{0, []string{"EXPIRE", "world", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command\r\n"},
		{0, []string{"EXPIRE", "world", "100"}, ":1\r\n"},
		{1500 * time.Millisecond, []string{"PTTL", "world"}, ":98500\r\n"},
		{0, []string{"TTL", "world"}, ":99\r\n"},
		{0, []string{"KEYS", "h[ae]ll?"}, "*1\r\n$5\r\nhello\r\n"},
		{0, []string{"SCAN", "0", "MATCH", "w*", "COUNT", "1000"}, "*2\r\n$1\r\n0\r\n*1\r\n$5\r\nworld\r\n"},
		{0, []string{"MULTI"}, "+OK\r\n"},
		{0, []string{"INCR", "n"}, "+QUEUED\r\n"},
		{0, []string{"HSET", "h", "f", "v"}, "+QUEUED\r\n"},
		{0, []string{"EXEC"}, "*2\r\n:1\r\n:1\r\n"},
		{0, []string{"TYPE", "h"}, "+hash\r\n"},
		{0, []string{"CL.THROTTLE", "k", "1", "1", "60"}, "-ERR unknown command 'CL.THROTTLE', with args beginning with: 'k' '1' '1' '60' \r\n"},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestScorePairsFollowTheReply: a sorted set's members with their scores
// are [member, score] pairs when the reply is RESP3 and flat otherwise;
// inside a script that is the script's protocol, not its client's
// (Client.ReplyProto). The replies are Redis 7.0's.
func TestScorePairsFollowTheReply(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	c.DoString("ZADD", "z", "2.5", "b")
	c.SetProto(3) // as HELLO 3 does
	const call = "return redis.call('zrange', KEYS[1], 0, -1, 'withscores')"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"RESP3 client", []string{"ZRANGE", "z", "0", "-1", "WITHSCORES"}, "*1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n"},
		{"script in RESP2", []string{"EVAL", call, "1", "z"}, "*2\r\n$1\r\nb\r\n$3\r\n2.5\r\n"},
		{"script in RESP3", []string{"EVAL", "redis.setresp(3); " + call, "1", "z"}, "*1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(c.DoString(tc.args...)); got != tc.want {
				t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}
